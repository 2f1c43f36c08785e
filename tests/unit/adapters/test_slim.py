"""The list pages' objects without what nothing reads (`adapters.slim`): smaller, and every reader sees the same
thing (the parsed pod and Node, a pod's disruption facts, the fleet join, a planner tick's decisions)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

from nodewright.adapters.slim import LAST_APPLIED, slim
from nodewright.disruption.fleet import fleet_nodes
from nodewright.disruption.state import pod_facts
from nodewright.model.loader import load_documents

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench import planner_scale as bench  # noqa: E402


def cluster(nodes: int = 3) -> tuple[list[bench.BenchNode], dict[str, list[dict[str, Any]]]]:
    fleet = bench.fleet(nodes)
    return fleet, bench.documents(fleet)


def slimmed(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [slim(copy.deepcopy(d), kind) for d in docs]


def test_a_pod_and_a_node_shrink_by_more_than_half() -> None:
    _, lists = cluster()
    for path, kind in (("/api/v1/pods", "Pod"), ("/api/v1/nodes", "Node")):
        doc = lists[path][0]
        assert len(json.dumps(slimmed([doc], kind)[0])) < len(json.dumps(doc)) / 2


def test_what_is_cut_is_what_nothing_reads() -> None:
    _, lists = cluster()
    pod = copy.deepcopy(lists["/api/v1/pods"][0])
    pod["metadata"]["annotations"][LAST_APPLIED] = "{}"
    pod["spec"]["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}})
    out = slim(pod, "Pod")
    assert "managedFields" not in out["metadata"] and LAST_APPLIED not in out["metadata"]["annotations"]
    assert "containerStatuses" not in out["status"]
    assert {c["type"] for c in out["status"]["conditions"]} == {"PodScheduled", "Ready"}
    assert out["spec"]["containers"][0] == {
        k: v
        for k, v in lists["/api/v1/pods"][0]["spec"]["containers"][0].items()
        if k in ("name", "resources", "ports")
    }
    # A claim keeps its reference; a projected token volume is its name alone.
    assert out["spec"]["volumes"] == [{"name": "kube-api-access-x7k2p"}, pod["spec"]["volumes"][1]]
    node = slim(copy.deepcopy(lists["/api/v1/nodes"][0]), "Node")
    assert "images" not in node["status"] and node["status"]["allocatable"]
    assert node["metadata"]["labels"] == lists["/api/v1/nodes"][0]["metadata"]["labels"]


def test_every_reader_sees_the_same_cluster() -> None:
    _, lists = cluster(4)
    full = [d for docs in lists.values() for d in docs]
    cut = [slim(copy.deepcopy(d), str(d.get("kind"))) for d in full]
    (before, errors_before), (after, errors_after) = (
        load_documents(full, "c", summaries=False),
        load_documents(cut, "c", summaries=False),
    )
    assert errors_before == errors_after == []
    assert before.nodes == after.nodes and before.nodeclaims == after.nodeclaims
    assert [pod_facts(d) for d in full if d["kind"] == "Pod"] == [pod_facts(d) for d in cut if d["kind"] == "Pod"]
    pools = {p.name: p for p in before.nodepools}

    def join(docs: list[dict[str, Any]]) -> list[Any]:
        return fleet_nodes(
            [d for d in docs if d["kind"] == "NodeClaim"], [d for d in docs if d["kind"] == "Node"], pools
        )

    assert join(full) == join(cut)


def test_a_malformed_object_is_left_for_the_parser_to_report() -> None:
    doc: dict[str, Any] = {"kind": "Pod", "metadata": [], "spec": {"containers": ["x"], "volumes": [3]}, "status": 1}
    assert slim(doc, "Pod") == {
        "kind": "Pod",
        "metadata": [],
        "spec": {"containers": ["x"], "volumes": [3]},
        "status": 1,
    }
