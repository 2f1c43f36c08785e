"""The demo applies the examples as nodewright.io/v1 objects that fit the local world."""

from __future__ import annotations

from pathlib import Path

from nodewright.localworld import demo, world
from nodewright.model.loader import load_documents

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _state() -> world.WorldState:
    return world.WorldState(
        state_dir="/tmp/x", cluster="demo-cluster", region="us-east-1", endpoint_url="http://127.0.0.1:1",
        api_server="https://127.0.0.1:2", kubeconfig="/tmp/k", ca_file="/tmp/ca", node_role_name="node-role",
        node_role_arn="arn:aws:iam::123456789012:role/node-role", vpc_id="vpc-1", subnet_ids={},
        security_group_id="sg-1", pids={}, logs={}, ready_seconds=0.0, short_waits=False,
    )  # fmt: skip


def test_node_classes_and_pools_become_nodewright_objects_for_the_world() -> None:
    docs = demo.for_the_world(demo.example_documents(EXAMPLES), _state(), "stack-node-role")
    classes = [d for d in docs if d["kind"] == "EC2NodeClass"]
    pools = [d for d in docs if d["kind"] == "NodePool"]
    assert classes and pools
    assert {d["apiVersion"] for d in classes + pools} == {"nodewright.io/v1"}
    for node_class in classes:
        spec = node_class["spec"]
        assert spec["role"] == "stack-node-role" and "instanceProfile" not in spec
        assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo-cluster"}}]
        assert spec["securityGroupSelectorTerms"] == spec["subnetSelectorTerms"]
    # Its scale-in waits seconds, not the examples' minutes, before empty and underused nodes go.
    assert {d["spec"]["disruption"]["consolidateAfter"] for d in pools} == {demo.DEMO_CONSOLIDATE_AFTER}
    # What the demo applies still passes nodewright's own validation.
    inputs, errors = load_documents([d for d in docs if d["kind"] in ("NodePool", "EC2NodeClass")], "demo")
    assert not errors, [str(e) for e in errors]
    assert {p.name for p in inputs.nodepools} == {d["metadata"]["name"] for d in pools}


def test_the_examples_themselves_are_not_changed() -> None:
    original = demo.example_documents(EXAMPLES)
    demo.for_the_world(original, _state(), "stack-node-role")
    assert any(d.get("apiVersion") == "karpenter.k8s.aws/v1" for d in original)
