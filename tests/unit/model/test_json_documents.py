"""A file of strict JSON is read by the JSON decoder (model.json_documents), with what the API server reads."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from nodewright.model import yaml_documents
from nodewright.model.json_documents import load_json
from nodewright.model.loader import load_text

from .helpers import NODECLASS, NODEPOOL, pod

SPEC = {"containers": [{"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}


def _pods_list() -> dict[str, Any]:
    items = [NODEPOOL, NODECLASS, *(pod(SPEC, f"web-{i}", {"app": "web"}) for i in range(3))]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def test_a_json_file_loads_as_its_yaml_does() -> None:
    listed = _pods_list()
    from_json, json_errors = load_text(json.dumps(listed, indent=4), "pods")
    from_yaml, yaml_errors = load_text(yaml.safe_dump(listed), "pods")
    assert not json_errors and not yaml_errors
    assert from_json.pending_pods == from_yaml.pending_pods and len(from_json.pending_pods) == 3
    assert from_json.nodepools == from_yaml.nodepools and from_json.objects == from_yaml.objects


def test_a_json_file_does_not_go_through_the_yaml_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> list[Any]:
        raise AssertionError("parsed as YAML")

    monkeypatch.setattr(yaml_documents, "load_all", refuse)
    inputs, errors = load_text("\n  " + json.dumps(_pods_list()), "pods.json")
    assert not errors and [p.name for p in inputs.pending_pods] == ["web-0", "web-1", "web-2"]


def test_json_numbers_and_escapes_read_as_json_not_as_yaml_1_1() -> None:
    text = '{"cpu": 1e3, "half": 5E-1, "count": 3, "big": 12345678901234567890, "smile": "\\ud83d\\ude00"}'
    assert load_json(text) == [{"cpu": 1000.0, "half": 0.5, "count": 3, "big": 12345678901234567890, "smile": "😀"}]
    # What the YAML path made of the same file: an exponent without a dot is a string in YAML 1.1.
    assert yaml.load('{"cpu": 1e3}', Loader=yaml.CSafeLoader) == {"cpu": "1e3"}


def test_json_types_are_the_ones_the_yaml_path_gives_for_plain_json() -> None:
    doc = {"a": [1, -2, 2.5, True, False, None, "yes", "on", "0755", "2026-01-02T03:04:05Z", "1e3"], "b": {}}
    text = json.dumps(doc)
    assert load_json(text) == yaml_documents.load_all(text) == [doc]
    assert [type(v) for v in load_json(text)[0]["a"]] == [type(v) for v in doc["a"]]  # type: ignore[index]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "apiVersion: v1\nkind: Pod\n",
        "{a: 1}",  # YAML flow style, not JSON
        '{"a": NaN}',
        '{"a": Infinity}',
        '{"a": 1}\n---\n{"b": 2}',
        '{"a": 1}{"b": 2}',
        '{"a": 1,}',
        '"a string"',
        "\ufeff{}",
    ],
)
def test_what_is_not_strict_json_is_left_to_the_yaml_path(text: str) -> None:
    assert load_json(text) is None


def test_yaml_flow_style_and_json_syntax_errors_read_as_before() -> None:
    inputs, errors = load_text('{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {"containers": []}}', "f")
    assert [e.message for e in errors] and not inputs.pending_pods  # read as YAML: the empty containers refused
    _, errors = load_text('{"apiVersion": "v1",\n "kind": "Pod" "metadata": {}}', "broken.json")
    assert len(errors) == 1 and "YAML syntax error" in errors[0].message and "line 2" in str(errors[0])
