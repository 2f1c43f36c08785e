"""Quantities parse exactly and convert to canonical integers (millicores for cpu, units otherwise)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodewright.model.quantity import QuantityError, format_canonical, parse_quantity, to_canonical


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("1.5k", Fraction(1500)),
        ("100Mi", Fraction(100 * 2**20)),
        ("1e-3", Fraction(1, 1000)),
        ("-1", Fraction(-1)),
        ("10n", Fraction(10, 10**9)),
        (3, Fraction(3)),
        (0.25, Fraction(1, 4)),
    ],
)
def test_parses_exactly(text: str | int | float, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1.2.3", "5 Gi", "1Gb", "1e", "Gi", "--1", "1ki", True])
def test_rejects_malformed(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)  # type: ignore[arg-type]


def test_canonical_units_round_up() -> None:
    assert to_canonical("cpu", "500m") == 500
    assert to_canonical("cpu", "0.1") == 100
    assert to_canonical("cpu", "1e3") == 1_000_000
    assert to_canonical("cpu", "1n") == 1  # a request never looks smaller than it is
    assert to_canonical("memory", "2Gi") == 2 * 2**30
    assert to_canonical("memory", "1.5") == 2
    assert to_canonical("nvidia.com/gpu", "1") == 1


@given(st.integers(min_value=0, max_value=10**9))
def test_cpu_millicores_round_trip(millis: int) -> None:
    assert to_canonical("cpu", format_canonical("cpu", millis)) == millis


@given(st.integers(min_value=0, max_value=2**50))
def test_memory_bytes_round_trip(value: int) -> None:
    assert to_canonical("memory", format_canonical("memory", value)) == value


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "k", "M", "G", "Ki", "Mi", "Gi", "m"]))
def test_suffix_scales(number: int, suffix: str) -> None:
    factors = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    expected = Fraction(number, 1000) if suffix == "m" else Fraction(number * factors[suffix])
    assert parse_quantity(f"{number}{suffix}") == expected


def test_repeated_strings_parse_the_same_and_the_unit_follows_the_resource() -> None:
    # Parsing is memoized per string: the resource's unit must still apply on every call.
    for _ in range(2):
        assert to_canonical("cpu", "1") == 1000
        assert to_canonical("memory", "1") == 1
        assert to_canonical("cpu", "250m") == 250


def test_a_malformed_string_raises_every_time() -> None:
    for _ in range(2):
        with pytest.raises(QuantityError, match="'2 Gi' is not a quantity"):
            to_canonical("memory", "2 Gi")
