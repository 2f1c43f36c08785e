"""`nodewright disrupt`: the planner's decision on a snapshot file, in the shape the README promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cluster_builder import M5_ON_DEMAND, T0, Cluster, iso

from nodewright.cli import main

NOW = iso(T0)


def snapshot(tmp_path: Path, cluster: Cluster, as_list: bool = False) -> str:
    path = tmp_path / "cluster.yaml"
    if as_list:
        path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": cluster.docs}))
    else:
        path.write_text(yaml.safe_dump_all(cluster.docs))
    return str(path)


def scaled_in() -> Cluster:
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "100%"}]}, requirements=M5_ON_DEMAND)
    cluster.node("idle", "m5.large")
    cluster.pod("agent-idle", "idle", owner="DaemonSet")
    cluster.node("busy", "m5.xlarge")
    cluster.pod("web-0", "busy", cpu="1")
    cluster.pod("web-1", "busy", cpu="1")
    cluster.node("light", "m5.large")
    cluster.pod("api-0", "light", cpu="250m")
    cluster.pod("done-0", "light", cpu="1")["status"]["phase"] = "Succeeded"  # finished pods hold nothing
    return cluster


def test_json_prints_the_planners_decisions_in_the_promised_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["disrupt", "--json", "--now", NOW, snapshot(tmp_path, scaled_in(), as_list=True)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert set(shown) == {"commands", "skipped", "cost_per_hour_before", "cost_per_hour_after", "nodeoverlays"}
    by_claim = {c["nodeclaim"]: c for c in shown["commands"]}
    assert by_claim["claim-idle"]["method"] == "emptiness" and by_claim["claim-idle"]["reason"] == "Empty"
    # The busy node saves the most per unit of disruption: one of its pods joins the light node, the other goes
    # to a smaller replacement.
    busy = by_claim["claim-busy"]
    assert busy["reason"] == "Underutilized" and busy["pods"] == ["web/web-0", "web/web-1"]
    assert busy["replacement"]["instance_types"] == ["m5.large"] and busy["savings_per_hour"] == pytest.approx(0.096)
    for command in shown["commands"]:
        assert set(command) == {
            "nodeclaim", "node", "nodepool", "reason", "method", "replacement", "replacements", "pods",
            "savings_per_hour", "price_overlay",
        }  # fmt: skip
        assert command["price_overlay"] is None  # no NodeOverlay in this snapshot
    assert shown["cost_per_hour_before"] == pytest.approx(0.096 * 2 + 0.192)
    assert shown["cost_per_hour_after"] == pytest.approx(0.192)
    assert [s["nodeclaim"] for s in shown["skipped"]] == ["claim-light"]


def test_json_names_the_nodeoverlay_that_priced_a_node_and_a_replacement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = scaled_in()
    half = {
        "apiVersion": "nodewright.io/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": {"name": "half-large"},
        "spec": {
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}],
            "priceAdjustment": "-50%",
        },
    }
    cluster.docs.append(half)
    assert main(["disrupt", "--json", "--now", NOW, snapshot(tmp_path, cluster)]) == 0
    shown = json.loads(capsys.readouterr().out)
    by_claim = {c["nodeclaim"]: c for c in shown["commands"]}
    assert by_claim["claim-idle"]["price_overlay"] == "half-large"  # an m5.large, counted at half price
    busy = by_claim["claim-busy"]
    assert busy["price_overlay"] is None  # the m5.xlarge keeps its listed price
    assert busy["replacement"]["price_overlay"] == "half-large"
    assert busy["replacement"]["price_per_hour"] == pytest.approx(0.048)
    # Two m5.large at half price and the m5.xlarge: the overlay is in the cost too.
    assert shown["cost_per_hour_before"] == pytest.approx(0.048 * 2 + 0.192)
    assert shown["nodeoverlays"] == {"applied": ["half-large"], "refused": []}


def test_the_table_names_every_node_and_the_cost_before_and_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["disrupt", "--now", NOW, snapshot(tmp_path, scaled_in())]) == 0
    out = capsys.readouterr().out
    assert "claim-idle" in out and "emptiness" in out and "LEFT ALONE" in out
    assert "COST $0.3840/hour now, $0.1920/hour after" in out


def test_bad_input_gets_the_errors_validate_gives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = scaled_in()
    cluster.find("NodePool", "general")["spec"]["disruption"]["consolidateAfter"] = "soon"
    cluster.docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {}})
    assert main(["disrupt", snapshot(tmp_path, cluster)]) == 1
    err = capsys.readouterr().err
    assert "NodePool/general: spec.disruption.consolidateAfter" in err
    assert "Deployment/web: kind: disrupt reads the pods that run" in err
    assert main(["disrupt", "--now", "yesterday", snapshot(tmp_path, scaled_in())]) == 1
    assert "--now: 'yesterday' is not an RFC 3339 time" in capsys.readouterr().err


def replaced_fleet() -> Cluster:
    """Three drifted and three expired nodes: one full (its pods need a new node), one whose pod fits on the
    spare node, one empty; the spare node has room for one small pod."""
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "100%"}], "consolidateAfter": "Never"}, requirements=M5_ON_DEMAND)
    cluster.node("spare", "m5.xlarge", age=60)
    cluster.pod("filler-0", "spare", cpu="3")
    for kind, spec in (("drift", {"claim_annotations": {"nodewright.io/nodepool-hash": "stale"}}), ("old", {})):
        extra: dict[str, str] = {} if kind == "drift" else {"expireAfter": "1h"}
        cluster.node(f"{kind}-full", "m5.xlarge", age=7200, **spec, **extra)  # type: ignore[arg-type]
        cluster.pod(f"{kind}-big-0", f"{kind}-full", cpu="2")
        cluster.pod(f"{kind}-big-1", f"{kind}-full", cpu="1")
        cluster.node(f"{kind}-fits", "m5.large", age=7200, **spec, **extra)  # type: ignore[arg-type]
        cluster.pod(f"{kind}-small-0", f"{kind}-fits", cpu="100m", memory="64Mi")
        cluster.node(f"{kind}-empty", "m5.large", age=7200, **spec, **extra)  # type: ignore[arg-type]
    return cluster


def test_json_names_what_a_drift_or_expiration_would_launch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 22 item 13: the workflow launches what the moving pods need; the dry run shows it as for consolidation.
    for kind, method in (("drift", "drift"), ("old", "expiration")):
        cluster = replaced_fleet()
        for other in ("drift", "old"):
            if other != kind:
                for suffix in ("full", "fits", "empty"):
                    cluster.docs = [
                        d
                        for d in cluster.docs
                        if f"{other}-{suffix}" not in (d["metadata"]["name"], d.get("spec", {}).get("nodeName"))
                        and d["metadata"]["name"] != f"claim-{other}-{suffix}"
                    ]
        assert main(["disrupt", "--json", "--now", NOW, snapshot(tmp_path, cluster)]) == 0
        shown = json.loads(capsys.readouterr().out)
        by_claim = {c["nodeclaim"]: c for c in shown["commands"] if c["method"] == method}
        assert set(by_claim) == {f"claim-{kind}-full", f"claim-{kind}-fits", f"claim-{kind}-empty"}, shown
        full = by_claim[f"claim-{kind}-full"]
        assert full["replacement"] is not None and full["replacements"] == [full["replacement"]]
        assert full["replacement"]["instance_types"][0] == "m5.xlarge"  # 3 vCPU of pods need a 4-vCPU m5
        assert full["replacement"]["price_per_hour"] == pytest.approx(0.192)
        assert by_claim[f"claim-{kind}-empty"]["replacement"] is None
        # its one small pod fits on the spare node: nothing to launch
        assert by_claim[f"claim-{kind}-fits"]["replacement"] is None


def test_the_dry_run_shows_a_repair_with_its_condition_and_a_held_pool_with_its_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = Cluster()
    cluster.pool("alone")
    cluster.node("broken", pool="alone")
    cluster.pod("web-0", "broken", cpu="1", nodeSelector={"karpenter.sh/nodepool": "alone"})
    cluster.pool("shaky")
    for name in ("shaky-0", "shaky-1", "shaky-2"):
        cluster.node(name, pool="shaky")
    for name in ("broken", "shaky-0", "shaky-1"):
        cluster.find("Node", name)["status"]["conditions"] = [
            {"type": "Ready", "status": "Unknown", "lastTransitionTime": iso(T0 - 45 * 60)}
        ]
    path = snapshot(tmp_path, cluster)
    assert main(["disrupt", "--json", "--now", NOW, path]) == 0
    shown = json.loads(capsys.readouterr().out)
    [repair] = [c for c in shown["commands"] if c["method"] == "repair"]
    assert (repair["nodeclaim"], repair["reason"]) == ("claim-broken", "Unhealthy")
    assert repair["condition"] == "Ready=Unknown for 45m0s (toleration 30m0s)"
    assert repair["pods"] == ["web/web-0"] and repair["replacement"]["instance_types"]  # what would launch
    skipped = {s["nodeclaim"]: s["reason"] for s in shown["skipped"]}
    assert "(2 of 3 in NodePool shaky)" in skipped["claim-shaky-0"]
    assert main(["disrupt", "--now", NOW, path]) == 0
    assert "Ready=Unknown for 45m0s" in capsys.readouterr().out  # the table names the condition too
    assert main(["disrupt", "--json", "--no-node-repair", "--now", NOW, path]) == 0
    assert not [c for c in json.loads(capsys.readouterr().out)["commands"] if c["method"] == "repair"]


def test_a_node_holding_a_capacity_buffers_room_is_skipped_not_emptied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = scaled_in()
    cluster.buffer("room", replicas=2, cpu="500m", node="idle")
    assert main(["disrupt", "--json", "--now", NOW, snapshot(tmp_path, cluster)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert "claim-idle" not in {c["nodeclaim"] for c in shown["commands"]}
    skipped = {s["nodeclaim"]: s["reason"] for s in shown["skipped"]}
    assert skipped["claim-idle"] == 'Node "idle" has buffer pods'
