"""NodeOverlay status as the planner writes it (`service.overlay_status`): Karpenter's ValidationSucceeded and Ready,
with the reason an overlay is applied nowhere; written only when it changes, and only on nodewright.io objects."""

from __future__ import annotations

from typing import Any

from nodewright.adapters.memory import InMemoryCluster
from nodewright.catalog import Catalog, SnapshotSource
from nodewright.catalog.overlay import apply_overlays
from nodewright.model.loader import load_documents
from nodewright.service.overlay_status import write_overlay_status


def overlay(name: str, key: str, values: list[str], api: str = "nodewright.io/v1alpha1", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api,
        "kind": "NodeOverlay",
        "metadata": {"name": name},
        "spec": {"requirements": [{"key": key, "operator": "In", "values": values}], **spec},
    }


def pass_(docs: list[dict[str, Any]]) -> tuple[InMemoryCluster, list[str]]:
    cluster = InMemoryCluster(docs)
    inputs, _ = load_documents(docs, "cluster")
    result = apply_overlays(Catalog(SnapshotSource().instance_types()), inputs.nodeoverlays)
    report = write_overlay_status(cluster, cluster.of_kind("NodeOverlay"), result)
    return cluster, report.written


def conditions(cluster: InMemoryCluster, name: str) -> dict[str, tuple[str, str]]:
    doc = cluster.objects[("NodeOverlay", "", name)]
    return {c["type"]: (c["status"], c["reason"]) for c in doc.get("status", {}).get("conditions", [])}


FAMILY = "karpenter.k8s.aws/instance-family"


def test_each_overlay_gets_its_verdict_and_a_second_pass_writes_nothing() -> None:
    docs = [
        overlay("good", FAMILY, ["r5"], priceAdjustment="-50%"),
        overlay("a-loser", FAMILY, ["r5", "m5"], price="1"),  # same weight, later in the order: conflicts
        overlay("bad", FAMILY, ["r5"], price="-1"),
        overlay("pooled", "karpenter.sh/nodepool", ["team-a"], price="1"),
        overlay("karpenters", FAMILY, ["c5"], api="karpenter.sh/v1alpha1", price="1"),
    ]
    cluster, written = pass_(docs)
    assert conditions(cluster, "good") == {
        "ValidationSucceeded": ("True", "ValidationSucceeded"),
        "Ready": ("True", "Ready"),
    }
    assert conditions(cluster, "a-loser")["ValidationSucceeded"] == ("False", "Conflict")
    assert conditions(cluster, "a-loser")["Ready"] == ("False", "Conflict")
    assert conditions(cluster, "bad")["ValidationSucceeded"] == ("False", "RuntimeValidation")
    assert conditions(cluster, "pooled")["ValidationSucceeded"] == ("False", "UnsupportedRequirement")
    assert conditions(cluster, "karpenters") == {}  # Karpenter's objects are Karpenter's to write
    assert sorted(written) == ["nodeoverlay/a-loser", "nodeoverlay/bad", "nodeoverlay/good", "nodeoverlay/pooled"]
    message = next(
        c["message"]
        for c in cluster.objects[("NodeOverlay", "", "bad")]["status"]["conditions"]
        if c["type"] == "ValidationSucceeded"
    )
    assert "spec.price" in message  # names the field
    again = write_overlay_status(
        cluster,
        cluster.of_kind("NodeOverlay"),
        apply_overlays(
            Catalog(SnapshotSource().instance_types()),
            load_documents(cluster.of_kind("NodeOverlay"), "c")[0].nodeoverlays,
        ),
    )
    assert again.written == []
