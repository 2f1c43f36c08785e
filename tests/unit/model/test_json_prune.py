"""Leaving `metadata.managedFields` undecoded in `kubectl get -o json` text (json_prune): the documents equal the full
decode's but for `metadata.managedFields`, and a text that is not strict JSON is refused as before, on generated and
damaged texts; the bench's served pods are decoded without their managedFields."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.model import json_prune
from nodewright.model.json_documents import load_json
from tests.unit.model.test_yaml_prune import ENTRIES, LABEL, _served


def _without_managed_fields(documents: list[Any] | None) -> list[Any] | None:
    if documents is None:
        return None
    out = []
    for doc in documents:
        tops = [doc, *(doc.get("items") or [] if isinstance(doc, dict) and isinstance(doc.get("items"), list) else [])]
        for top in tops:
            if isinstance(top, dict) and isinstance(top.get("metadata"), dict):
                top["metadata"].pop("managedFields", None)
        out.append(doc)
    return out


def _assert_same(text: str) -> None:
    assert _without_managed_fields(load_json(text, prune=True)) == _without_managed_fields(load_json(text))


def _listed(objects: list[Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "items": objects, "kind": "List", "metadata": {"resourceVersion": ""}}


NUMBERS = st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.booleans(), st.none())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.one_of(ENTRIES, ENTRIES, NUMBERS), st.dictionaries(st.just("app"), LABEL)), max_size=4),
    st.sampled_from([4, 2]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_served_documents(
    docs: list[tuple[Any, dict[str, str]]], indent: int, listed: bool, sort_keys: bool, ascii_only: bool
) -> None:
    """Served objects as kubectl prints them (a List, or one object), any managedFields (strings with escapes,
    numbers, literals), several of one shape a text."""
    objects = [_served(i, managed, labels) for i, (managed, labels) in enumerate(docs)]
    value = _listed(objects) if listed or not objects else objects[0]
    _assert_same(json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=ascii_only))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ENTRIES, st.integers(0, 600), st.sampled_from([*'[]{}:,"\\\n x', "NaN", "1", "true", "\\u00e9", "]\n"]))
def test_damaged_text(managed: Any, where: int, insert: str) -> None:
    """A character or token put anywhere in a List of two served objects (the second keeps the first's shape): the
    same documents but for managedFields, or None (not JSON) on both."""
    text = json.dumps(_listed([_served(0, managed, {"app": "a"}), _served(1, managed, {"app": "b"})]), indent=4)
    where = where % (len(text) + 1)
    _assert_same(text[:where] + insert + text[where:])


ARRAY = '[\n        {\n            "manager": "x"\n        }\n    ]'
KEPT = [
    # not a top-level metadata's managedFields, or not certain: decoded whole
    '{\n    "spec": {\n        "managedFields": ' + ARRAY.replace("\n", "\n    ") + "\n    }\n}",
    '{\n    "metadata": {\n        "labels": {\n            "managedFields": '
    + ARRAY.replace("\n", "\n        ")
    + "\n        }\n    }\n}",
    '{\n    "metadata": {\n    "managedFields": ' + ARRAY + ',\n    "managedFields": 1\n    }\n}',
    '{\n    "metadata": {\n    "managedFields": ' + ARRAY.replace('"x"', '"\\u00e9"') + "\n    }\n}",
    '{\n    "metadata": {\n    "managedFields": ' + ARRAY.replace('"x"', "12") + "\n    }\n}",
    '{\n    "metadata": {\n    "managedFields": ' + ARRAY + ',\n    "n": NaN\n    }\n}',
    '{\n    "metadata": {\n    "managedFields": [\n    {"a": 1}\n    ]\n    }\n}',
]


@pytest.mark.parametrize("text", KEPT)
def test_uncertain_arrays_are_decoded(text: str) -> None:
    _assert_same(text)
    assert json_prune.load_pruned(text) is None


def test_served_pods_are_decoded_without_managed_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bench's served pods as `kubectl get -o json`: the decoder is never given their managedFields (but for the
    first of each shape), and the documents are the full ones but for them. Fails if the cut is removed."""
    from tests.bench.simulate_cli import documents

    text = json.dumps(_listed(documents("pods", 3)), indent=4, sort_keys=True)
    decoded: list[str] = []
    loads = json.loads

    def recording(given: str, **options: Any) -> Any:
        decoded.append(given)
        return loads(given, **options)

    monkeypatch.setattr(json, "loads", recording)
    read = load_json(text, prune=True)
    pods = 40 * 3
    assert sum(given.count('"fieldsV1"') for given in decoded) < pods / 4
    assert _without_managed_fields(read) == _without_managed_fields(load_json(text))
    assert read is not None and all("managedFields" not in item["metadata"] for item in read[0]["items"])
