"""yaml_documents.load_all returns what PyYAML's C safe loader returns: same objects, same types, same errors."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodewright.model import yaml_documents

SAFE: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CASES = {
    "pods": """
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default, labels: {app: web}}
spec:
  containers:
  - name: main
    resources: {requests: {cpu: 500m, memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: b}
spec: {priority: 10, enabled: yes, ratio: 0.5, empty: ~, when: 2024-01-02T03:04:05Z, octal: 0o17, hex: 0x1F}
""",
    "scalars that look typed": (
        "a: 'yes'\nb: \"10\"\nc: yes\nd: 10\ne: 1.5e3\nf: .inf\ng: null\nh: 2024-01-01\ni: 1_000\n"
    ),
    "empty documents": "---\n---\na: 1\n---\n",
    "merge keys": "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",
    "aliases share one object": "a: &l [1, 2]\nb: *l\n",
    "scalar alias": "a: &s hello\nb: *s\n",
    "non-string keys": "1: one\ntrue: yes\n2.5: x\n",
    "set and omap": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\n",
    "binary": "b: !!binary aGVsbG8=\n",
    "explicit str": "a: !!str 10\nb: !!int '7'\n",
    "top-level list and scalar": "- 1\n- x\n---\nplain\n",
    "duplicate keys": "a: 1\na: 2\n",
}


def _safe(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=SAFE))


def _shape(value: Any) -> Any:
    """Value and type at every level (1 == True == 1.0 in Python; the types must match too)."""
    if isinstance(value, dict):
        return ("dict", [(_shape(k), _shape(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_shape(v) for v in value])
    return (type(value).__name__, value)


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_documents_as_the_safe_loader(name: str) -> None:
    text = CASES[name]
    assert _shape(yaml_documents.load_all(text)) == _shape(_safe(text))


def test_aliased_containers_stay_one_object() -> None:
    [doc] = yaml_documents.load_all(CASES["aliases share one object"])
    assert doc["a"] is doc["b"]


@pytest.mark.parametrize(
    "text", ["a: [1, 2\n", "a: b: c\n", "x: !unknown 1\n", "a: &x 1\nb: *y\n", "- a\nb: c\n", "? [a, b]\n: c\n"]
)
def test_same_errors_as_the_safe_loader(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as expected:
        _safe(text)
    with pytest.raises(yaml.YAMLError) as got:
        yaml_documents.load_all(text)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


def test_resolution_is_kept_per_scalar() -> None:
    """On the PyYAML path, the same plain scalar is resolved once per text; a quoted one on its own."""
    calls: list[Any] = []
    base = yaml_documents._BASE

    class Counting(base):  # type: ignore[misc, valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            calls.append(value)
            return super().resolve(kind, value, implicit)

    original = yaml_documents._Loader.__bases__
    yaml_documents._Loader.__bases__ = (Counting,)
    try:
        docs = yaml_documents.pyyaml_load_all("a: 10\nb: 10\nc: '10'\n---\na: 10\n")
    finally:
        yaml_documents._Loader.__bases__ = original
    assert docs == [{"a": 10, "b": 10, "c": "10"}, {"a": 10}]
    assert calls.count("10") == 2  # once plain, once quoted
