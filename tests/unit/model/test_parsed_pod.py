"""`ParsedPod.renamed`: another replica's copy of a parsed pod carries every field of the pod but its name, uid,
claim names and node (it names each field itself, for speed: a field added to Pod must be added there too)."""

from __future__ import annotations

import dataclasses
from typing import Any

from nodewright.model.objects import HostPort, Pod
from nodewright.model.pod_spec import ParsedPod


def _distinct_value(field: dataclasses.Field[Any]) -> Any:
    """A value for `field` unlike its default and unlike any other field's."""
    if field.type in ("str",):
        return f"value-of-{field.name}"
    if field.type == "int":
        return 7
    if field.type.startswith("Mapping"):
        return {field.name: "1"}
    if field.type.startswith("tuple"):
        return (HostPort("TCP", 80 + len(field.name)),)  # any object: only identity and equality are compared
    raise AssertionError(f"no sample value for Pod.{field.name}: {field.type}")


def test_a_renamed_replica_keeps_every_other_field() -> None:
    values = {field.name: _distinct_value(field) for field in dataclasses.fields(Pod)}
    original = Pod(**values)
    parsed = ParsedPod(original, static_claims=("data",), ephemeral_volumes=(("scratch", "gp3"),))
    copy = parsed.renamed("web-2", extra_claims=("extra",), node_name="node-b")
    expected = dataclasses.replace(
        original,
        name="web-2",
        uid=f"{original.namespace}/web-2",
        pvc_names=("data", "web-2-scratch", "extra"),
        node_name="node-b",
    )
    assert copy.pod == expected
    assert copy.static_claims == ("data",)
    assert copy.ephemeral_volumes == (("scratch", "gp3"),)
    # Shared, not copied: replicas hold the same labels, requests and terms.
    for name in ("labels", "requests", "tolerations", "topology_spread"):
        assert getattr(copy.pod, name) is getattr(original, name)


def test_a_renamed_replica_keeps_its_node_unless_given() -> None:
    parsed = ParsedPod(Pod("default", "web-0", node_name="node-a"))
    assert parsed.renamed("web-1").pod.node_name == "node-a"
    assert parsed.renamed("web-1", node_name="").pod.node_name == ""
