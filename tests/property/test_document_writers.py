"""The user data writers: whatever document they are given, the standard parsers read back exactly it."""

from __future__ import annotations

import math
import tomllib
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nodewright.launch.userdata import UserDataError, to_toml, to_yaml

# No deadline: how long an example takes on a busy shared machine says nothing about the writers.
UNTIMED = settings(deadline=None)

# Any text (hypothesis includes control characters, quotes, backslashes, YAML words and astral characters).
KEYS = st.text(max_size=12)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
SCALARS = st.none() | st.booleans() | st.integers() | FLOATS | st.text(max_size=20)
YAML_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@UNTIMED
@given(st.dictionaries(KEYS, YAML_VALUES, max_size=6))
def test_yaml_reads_back_what_was_written(document: dict[str, Any]) -> None:
    assert yaml.safe_load(to_yaml(document)) == document


@UNTIMED
@given(st.dictionaries(KEYS, YAML_VALUES, max_size=6))
def test_yaml_text_depends_on_the_content_not_the_key_order(document: dict[str, Any]) -> None:
    assert to_yaml(dict(reversed(list(document.items())))) == to_yaml(document)


# TOML has no null, and arrays of tables are not written: tables nest, arrays hold scalars.
TOML_SCALARS = st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(max_size=20)
TOML_TABLES = st.recursive(
    st.dictionaries(KEYS, TOML_SCALARS | st.lists(TOML_SCALARS, max_size=3), max_size=4),
    lambda inner: st.dictionaries(KEYS, inner, min_size=1, max_size=3),
    max_leaves=12,
)


@UNTIMED
@given(st.dictionaries(KEYS, TOML_TABLES, max_size=4))
def test_toml_reads_back_what_was_written(document: dict[str, Any]) -> None:
    assert tomllib.loads(to_toml(document)) == document


def test_strings_that_yaml_would_retype_stay_strings() -> None:
    document = {"no": "yes", "on": "off", "version": "1.30", "mode": "0755", "null": "~", "y": "n", "e": "1e3"}
    text = to_yaml(document)
    assert yaml.safe_load(text) == document
    assert '"no": "yes"' in text and 'version: "1.30"' in text


def test_floats_keep_their_type_in_yaml_1_1() -> None:
    # PyYAML (YAML 1.1) reads 1e+16 without a dot as a string.
    assert yaml.safe_load(to_yaml({"big": 1e16, "small": -2.5e-07})) == {"big": 1e16, "small": -2.5e-07}


@pytest.mark.parametrize("value", [math.inf, object(), {1: "x"}])
def test_what_yaml_cannot_carry_is_refused_by_name(value: object) -> None:
    with pytest.raises(UserDataError, match="cannot write"):
        to_yaml({"field": value})
