"""The parses kept by content (a cold provisioner's 3,000 Nodes and NodeClaims carry a few dozen distinct label keys
and requirements): a requirement that parsed clean is not checked again, but nothing that reported an error is kept,
equal-looking content of another type or owner parses on its own, and every error keeps its own path."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.model import fields
from nodewright.model.errors import Collector
from nodewright.model.fields import Owner, parse_requirement
from nodewright.model.requirements import Operator, Requirement, Requirements, ValueSet
from nodewright.model.schema import label_key_problem


def _parse(raw: Any, path: str = "spec.requirements[0]", owner: Owner = "NodeClaim") -> tuple[Any, list[str]]:
    ctx = Collector("test", "NodeClaim", "c")
    found = parse_requirement(ctx, raw, path, owner=owner)
    return found, [f"{e.path}: {e.message}" for e in ctx.errors]


@pytest.fixture(autouse=True)
def _empty_memo() -> None:
    fields._CLEAN.clear()


def test_a_clean_requirement_is_parsed_once_and_shared() -> None:
    raw = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a", "us-east-1b"]}
    first, errors = _parse(raw)
    second, again = _parse(dict(raw, values=list(raw["values"])))
    assert errors == again == []
    assert first == Requirement("topology.kubernetes.io/zone", Operator.IN, ("us-east-1a", "us-east-1b"))
    assert second is first


def test_a_requirement_with_an_error_reports_it_every_time_at_its_own_path() -> None:
    raw = {"key": "bad key!", "operator": "In", "values": ["a"]}
    for path in ("spec.requirements[0]", "spec.requirements[0]", "spec.requirements[3]"):
        found, errors = _parse(raw, path)
        assert found is None and len(errors) == 1 and errors[0].startswith(f"{path}.key: ")
    assert not fields._CLEAN


@pytest.mark.parametrize(
    ("clean", "odd"),
    [
        ({"minValues": 1}, {"minValues": True}),  # True == 1, and hashes alike: a bool is no minValues
        ({"values": ["1"]}, {"values": [1]}),  # a number is refused as a value, unlike its string
        ({}, {"extra": "field"}),  # an unknown field is reported
    ],
)
def test_content_of_another_type_is_not_taken_for_a_clean_one(clean: dict[str, Any], odd: dict[str, Any]) -> None:
    base = {"key": "nodewright.io/tier", "operator": "In", "values": ["1"]}
    found, errors = _parse({**base, **clean})
    assert found is not None and errors == []
    again, odd_errors = _parse({**base, **odd})
    assert again is None or again is not found
    assert odd_errors, "the odd requirement parsed clean: it was taken for the clean one"


def test_the_owner_is_part_of_the_key() -> None:
    # A NodeClaim may carry what a pod asked for; a NodePool may not constrain a restricted label domain.
    raw = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-a"]}
    claimed, errors = _parse(raw, owner="NodeClaim")
    assert claimed is not None and errors == []
    pooled, pool_errors = _parse(raw, owner="NodePool")
    assert pooled is None and pool_errors


def test_the_memo_is_bounded() -> None:
    for i in range(fields._CLEAN_LIMIT + 10):
        _parse({"key": "nodewright.io/n", "operator": "In", "values": [str(i)]})
    assert 0 < len(fields._CLEAN) <= fields._CLEAN_LIMIT


def test_label_key_checks_answer_alike_when_asked_again() -> None:
    for key in ("topology.kubernetes.io/zone", "Bad_Prefix/x", "/x", "", "a" * 64):
        assert label_key_problem(key) == label_key_problem(key)
    assert label_key_problem("topology.kubernetes.io/zone") is None
    assert label_key_problem("Bad_Prefix/x") is not None


def test_node_labels_with_a_deprecated_twin_meet_as_before() -> None:
    same = Requirements.from_labels(
        {"topology.kubernetes.io/zone": "us-east-1a", "failure-domain.beta.kubernetes.io/zone": "us-east-1a"}
    )
    assert same.get("topology.kubernetes.io/zone") == ValueSet(allowed=frozenset({"us-east-1a"}), absent_ok=False)
    differ = Requirements.from_labels(
        {"topology.kubernetes.io/zone": "us-east-1a", "failure-domain.beta.kubernetes.io/zone": "us-east-1b"}
    )
    assert differ.get("topology.kubernetes.io/zone").is_empty()
