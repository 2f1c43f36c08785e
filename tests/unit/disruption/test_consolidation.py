"""Emptiness and consolidation as Karpenter v1 decides them, through `plan()` on built clusters."""

from __future__ import annotations

from typing import Any

from cluster_builder import M5_ON_DEMAND, T0, Cluster, iso

from nodewright.disruption.consolidation import MIN_SPOT_TO_SPOT_TYPES, restrict
from nodewright.disruption.decision import EMPTINESS, MULTI_NODE, SINGLE_NODE
from nodewright.disruption.plan import plan
from nodewright.scheduling import LaunchOption, PlannedNodeClaim, Results

ALL = {"budgets": [{"nodes": "100%"}]}


def decide(cluster: Cluster, **state: Any) -> tuple[Any, dict[str, Any]]:
    snapshot = cluster.state(**state)
    decided = plan(snapshot, {})
    return decided, decided.to_json(snapshot)


def test_an_empty_node_goes_without_a_replacement_once_consolidate_after_passed() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "5m", **ALL}, requirements=M5_ON_DEMAND)
    cluster.node("idle", "m5.large")
    cluster.pod("agent-idle", "idle", owner="DaemonSet")
    cluster.node("busy", "m5.xlarge")
    cluster.pod("web-0", "busy", cpu="3")
    decided, shown = decide(cluster)
    [command] = shown["commands"]
    assert (command["nodeclaim"], command["method"], command["reason"]) == ("claim-idle", EMPTINESS, "Empty")
    assert command["replacement"] is None and command["pods"] == [] and command["savings_per_hour"] > 0
    # A pod removed from the node a minute ago restarts the timer (status.lastPodEventTime: the forwarder reports
    # the pod event, the provisioner writes it).
    cluster.find("NodeClaim", "claim-idle")["status"]["lastPodEventTime"] = "2027-01-15T07:59:00Z"
    decided, shown = decide(cluster)
    assert shown["commands"] == [] and "has not passed" in decided.skipped["claim-idle"]


def test_a_nodeclaim_pointed_at_a_node_nodewright_did_not_launch_makes_it_no_candidate() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "5m", **ALL}, requirements=M5_ON_DEMAND)
    _, node = cluster.node("idle", "m5.large")
    assert [c["nodeclaim"] for c in decide(cluster)[1]["commands"]] == ["claim-idle"]  # while it is ours
    # The node of a managed node group: no karpenter.sh/nodepool label, only the providerID the claim names.
    del node["metadata"]["labels"]["karpenter.sh/nodepool"]
    _, shown = decide(cluster)
    assert shown["commands"] == []
    assert not any(m.registered for m in cluster.state().fleet if m.nodeclaim == "claim-idle")
    # Nor a node of another NodePool (Karpenter's, say, under the same providerID).
    node["metadata"]["labels"]["karpenter.sh/nodepool"] = "karpenters"
    assert decide(cluster)[1]["commands"] == []


def test_consolidate_after_never_disables_emptiness_and_consolidation() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "Never", **ALL})
    cluster.node("idle", "m5.large")
    decided, shown = decide(cluster)
    assert shown["commands"] == [] and "consolidation disabled" in decided.skipped["claim-idle"]


def test_a_node_whose_pods_fit_elsewhere_is_deleted() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL, requirements=M5_ON_DEMAND)
    cluster.node("big", "m5.xlarge")
    for i in range(3):
        cluster.pod(f"web-{i}", "big", cpu="1")
    cluster.node("small", "m5.large")
    cluster.pod("api-0", "small", cpu="500m")
    decided, shown = decide(cluster)
    [command] = shown["commands"]
    assert command["nodeclaim"] == "claim-small" and command["replacement"] is None
    assert command["method"] == SINGLE_NODE and command["pods"] == ["web/api-0"]
    # Tried first (same savings per unit of disruption, and its name sorts first), the big node has no move.
    assert decided.unconsolidatable["claim-big"] == "Can't replace with a cheaper node"
    assert shown["cost_per_hour_after"] < shown["cost_per_hour_before"]


def test_an_oversized_node_is_replaced_by_a_strictly_cheaper_one() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    cluster.node("big", "m5.4xlarge")
    cluster.pod("web-0", "big", cpu="1")
    cluster.pod("web-1", "big", cpu="1")
    decided, shown = decide(cluster)
    [decision] = decided.decisions
    replacement = decision.replacement
    assert replacement is not None and decision.method == SINGLE_NODE
    assert all(o.price < decision.price for o in replacement.options)
    # An on-demand node may come back as its own type bought as spot: cheaper is what counts (single-node).
    assert replacement.price < decision.price / 4
    [command] = shown["commands"]
    assert command["savings_per_hour"] == round(decision.price - replacement.price, 6)


def test_spot_to_spot_needs_the_setting_and_fifteen_cheaper_types() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    cluster.node("spotty", "m5.4xlarge", capacity_type="spot")
    cluster.pod("web-0", "spotty")
    decided, shown = decide(cluster)
    assert shown["commands"] == []
    assert "SpotToSpotConsolidation is disabled" in decided.unconsolidatable["claim-spotty"]
    decided, _ = decide(cluster, spot_to_spot=True)
    [decision] = decided.decisions
    assert decision.replacement is not None
    assert decision.replacement.capacity_types == ("spot",)
    assert len(decision.replacement.instance_types) == MIN_SPOT_TO_SPOT_TYPES  # launched with the 15 cheapest
    cheap = Cluster()
    cheap.pool(disruption=ALL)
    cheap.node("small", "t3.small", capacity_type="spot")
    cheap.pod("web-0", "small", cpu="100m", memory="128Mi")
    decided, _ = decide(cheap, spot_to_spot=True)
    assert decided.decisions == []
    assert "requires 15 cheaper instance type options" in decided.unconsolidatable["claim-small"]


def test_several_underused_nodes_consolidate_at_once_into_at_most_one_new_node() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    for name in ("a", "b", "c"):
        cluster.node(name, "m5.xlarge")
        cluster.pod(f"{name}-web-0", name, cpu="700m", memory="2Gi")
    decided, shown = decide(cluster)
    [decision] = decided.decisions
    assert decision.method == MULTI_NODE and len(decision.candidates) == 3
    assert decision.replacement is not None and decision.replacement.price < decision.price
    assert {c["nodeclaim"] for c in shown["commands"]} == {"claim-a", "claim-b", "claim-c"}
    # The replacement and its price are reported once, on the first node.
    assert sum(c["replacement"] is not None for c in shown["commands"]) == 1
    assert round(sum(c["savings_per_hour"] for c in shown["commands"]), 6) == decision.savings_per_hour


def test_a_tick_takes_one_consolidation_and_budgets_hold_every_method() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"budgets": [{"nodes": "1"}]})
    cluster.node("idle", "m5.large")
    for name in ("a", "b"):
        cluster.node(name, "m5.2xlarge")
        cluster.pod(f"{name}-web-0", name)
    decided, shown = decide(cluster)
    assert [c["nodeclaim"] for c in shown["commands"]] == ["claim-idle"]
    held = decided.blocked["claim-a"]
    assert "budget nodes=1" in held and "NodePool general" in held


def test_a_zero_budget_in_its_cron_window_blocks_and_names_the_budget() -> None:
    cluster = Cluster()
    window = {"nodes": "0", "schedule": "0 8 * * *", "duration": "1h"}  # T0 is 08:00 UTC
    cluster.pool(disruption={"budgets": [window, {"nodes": "100%"}]})
    cluster.node("idle", "m5.large")
    decided, shown = decide(cluster)
    assert shown["commands"] == [] and "schedule '0 8 * * *'" in decided.blocked["claim-idle"]
    _, shown = decide(cluster, now=T0 + 2 * 3600)
    assert [c["nodeclaim"] for c in shown["commands"]] == ["claim-idle"]


def test_when_empty_pools_leave_nodes_with_pods_alone() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidationPolicy": "WhenEmpty", **ALL})
    cluster.node("big", "m5.4xlarge")
    cluster.pod("web-0", "big")
    decided, shown = decide(cluster)
    assert shown["commands"] == [] and "policy WhenEmpty" in decided.skipped["claim-big"]


def test_pods_that_cannot_move_make_the_node_unconsolidatable_with_why() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    cluster.node("pinned", "m5.xlarge", claim_labels={"example.com/rack": "a1"})
    cluster.find("Node", "pinned")["metadata"]["labels"]["example.com/rack"] = "a1"
    cluster.pod("web-0", "pinned", nodeSelector={"example.com/rack": "a1"})  # no NodePool makes that label
    decided, _ = decide(cluster)
    assert decided.decisions == []
    assert "web/web-0" in decided.unconsolidatable["claim-pinned"]


def test_do_not_disrupt_and_pdbs_keep_nodes_from_consolidation_but_not_from_expiration() -> None:
    cluster = Cluster(now=T0 + 800 * 3600)
    cluster.pool(disruption=ALL)
    cluster.node("guarded", "m5.4xlarge", age=10)
    cluster.pod("keep-0", "guarded", annotations={"karpenter.sh/do-not-disrupt": "true"})
    cluster.node("old", "m5.4xlarge", age=800 * 3600)
    cluster.pod("keep-1", "old", annotations={"karpenter.sh/do-not-disrupt": "true"})
    decided, shown = decide(cluster)
    assert [(c["nodeclaim"], c["method"]) for c in shown["commands"]] == [("claim-old", "expiration")]
    assert "do-not-disrupt" in decided.skipped["claim-guarded"]


def test_restrict_keeps_only_the_decided_offerings_below_the_ceiling() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    cluster.node("big", "m5.4xlarge")
    cluster.pod("web-0", "big", cpu="1")
    [decision] = plan(cluster.state(), {}).decisions
    replacement = decision.replacement
    assert replacement is not None
    allowed = replacement.options[0]
    claim = PlannedNodeClaim(
        name="r",
        nodepool="general",
        instance_types=(allowed.instance_type, "m5.8xlarge"),
        capacity_types=("spot", "on-demand"),
        zones=("us-east-1a", "us-east-1b", "us-east-1c"),
        launch_options=(
            LaunchOption(allowed.instance_type, allowed.capacity_type, allowed.zone, allowed.price),
            LaunchOption("m5.8xlarge", "on-demand", "us-east-1a", 1.536),
        ),
        pods=("web/web-0",),
        requirements=(),
        labels={},
        taints=(),
        startup_taints=(),
        requests={},
    )
    narrowed = restrict(Results(nodeclaims=(claim,)), replacement)
    assert isinstance(narrowed, Results)
    [only] = narrowed.nodeclaims
    assert only.instance_types == (allowed.instance_type,) and len(only.launch_options) == 1
    two = Results(nodeclaims=(claim, claim))
    assert "planned one" in str(restrict(two, replacement))


def test_balanced_pools_take_only_moves_that_save_enough_for_their_disruption() -> None:
    def cluster_with(policy: str) -> Cluster:
        cluster = Cluster()
        cluster.pool(disruption={"consolidationPolicy": policy, **ALL}, requirements=M5_ON_DEMAND)
        cluster.node("crowded", "m5.xlarge")
        for i in range(8):  # cheap to fit elsewhere, costly to disrupt: eight pods to evict
            cluster.pod(f"web-{i}", "crowded", cpu="100m")
        for name in ("a", "b", "c"):
            cluster.node(name, "m5.xlarge")
            cluster.pod(f"{name}-batch-0", name, cpu="3500m")  # fits nowhere else
        return cluster

    decided, shown = decide(cluster_with("WhenEmptyOrUnderutilized"))
    assert [c["nodeclaim"] for c in shown["commands"]] == ["claim-crowded"]
    # Balanced: deleting it saves 25% of the pool's cost for 60% of its disruption (9 of 15), under the 1/2 ratio.
    decided, shown = decide(cluster_with("Balanced"))
    assert shown["commands"] == []
    assert "is Balanced" in decided.unconsolidatable["claim-crowded"]


def test_a_rebalances_early_replacement_is_left_alone_until_its_protection_ends() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "5m", **ALL}, requirements=M5_ON_DEMAND)
    cluster.node("early", "m5.large")  # launched for a rebalance's pods, which are still on the recommended node
    until = cluster.now + 300
    cluster.find("NodeClaim", "claim-early")["metadata"].setdefault("annotations", {})[
        "nodewright.io/protected-until"
    ] = iso(until)
    _, shown = decide(cluster)
    assert shown["commands"] == []
    assert (
        "launched early for a rebalance recommendation"
        in {s["nodeclaim"]: s["reason"] for s in shown["skipped"]}["claim-early"]
    )
    cluster.now = until + 1
    _, shown = decide(cluster)
    assert [(c["nodeclaim"], c["reason"]) for c in shown["commands"]] == [("claim-early", "Empty")]


def test_pods_are_not_moved_onto_a_node_still_inside_its_consolidate_after_window() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "1m", **ALL}, requirements=M5_ON_DEMAND)
    cluster.node("settling", "m5.large")
    cluster.pod("web-0", "settling", bound_ago=30)  # a pod event 30 s ago: the node is inside its 1m window
    cluster.node("source", "m5.large")
    cluster.pod("api-0", "source")
    decided, shown = decide(cluster)
    # The source's pod would fit on the settling node, the only way to remove the source (m5.large is the cheapest
    # type the pool allows); Karpenter's consolidation simulation does not place it there.
    assert shown["commands"] == []
    assert decided.unconsolidatable["claim-source"] == "Can't replace with a cheaper node"
    _, shown = decide(cluster, now=T0 + 60)  # the window has passed: one node's pod moves onto the other
    assert [(c["method"], c["replacement"]) for c in shown["commands"]] == [(SINGLE_NODE, None)]


def test_the_consolidate_after_window_does_not_keep_pending_pods_off_the_node() -> None:
    from nodewright.disruption.candidates import settling
    from nodewright.disruption.simulate import simulate

    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "1m", **ALL}, requirements=M5_ON_DEMAND)
    cluster.node("settling", "m5.large")
    cluster.pod("web-0", "settling", bound_ago=30)
    cluster.node("source", "m5.xlarge")
    cluster.pod("api-0", "source", cpu="100m")
    cluster.pod("pending-0", cpu="100m")
    state = cluster.state()
    assert settling(state) == {"settling"}
    [source] = [c for c in plan_candidates(state) if c.name == "claim-source"]
    sim = simulate(state, [source], settling=settling(state))
    assert "web/pending-0" in sim.results.existing.get("settling", ())
    assert "web/api-0" not in sim.results.existing.get("settling", ())


def plan_candidates(state: Any) -> list[Any]:
    from nodewright.disruption.candidates import candidates

    return candidates(state)[0]


def test_multi_node_takes_the_prefix_saving_most_not_the_longest_one_into_a_large_node() -> None:
    """Intended difference (issue 22 item 10): Karpenter's firstNConsolidationOption takes the longest prefix its
    binary search finds valid; nodewright, of the prefixes it tried, takes the one saving the most among those whose
    replacement is no dearer than the dearest node it removes (a long prefix's one large node cannot be split by
    later consolidation, and the consolidation quality bench ends dearer when the longest is taken)."""
    from nodewright.disruption.consolidation import compute
    from nodewright.disruption.methods import PlanContext
    from nodewright.disruption.plan import pool_budgets

    cluster = Cluster()
    on_demand_m5_c5 = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "c5"]},
    ]
    cluster.pool(disruption=ALL, requirements=on_demand_m5_c5)
    for name in ("a", "b", "c"):
        cluster.node(name, "m5.xlarge")
        cluster.pod(f"{name}-web-0", name, cpu="1500m", memory="2Gi")
    state = cluster.state()
    ctx = PlanContext(state, pool_budgets(state))
    longest = compute(ctx, ctx.candidates(), MULTI_NODE)  # what Karpenter takes: all three into one c5.2xlarge
    assert not isinstance(longest, str) and longest.replacement is not None
    assert longest.replacement.instance_types[0] == "c5.2xlarge" and len(longest.candidates) == 3
    decided = plan(state, {})
    [decision] = decided.decisions
    assert decision.method == MULTI_NODE and [c.name for c in decision.candidates] == ["claim-a", "claim-b"]
    assert decision.replacement is not None and decision.replacement.instance_types[0] == "c5.large"
    assert decision.savings_per_hour > longest.savings_per_hour


def test_nodes_consolidation_will_not_consider_are_unconsolidatable_with_karpenters_messages() -> None:
    cluster = Cluster()
    cluster.pool(disruption=ALL)
    cluster.pool("never", disruption={**ALL, "consolidateAfter": "Never"})
    cluster.node("unlabelled", "m5.4xlarge")
    for doc in (cluster.find("Node", "unlabelled"), cluster.find("NodeClaim", "claim-unlabelled")):
        del doc["metadata"]["labels"]["karpenter.sh/capacity-type"]
    cluster.pod("web-0", "unlabelled")
    cluster.node("kept", "m5.4xlarge", pool="never")
    cluster.pod("web-1", "kept")
    decided, shown = decide(cluster)
    assert shown["commands"] == []
    assert decided.unconsolidatable == {
        "claim-unlabelled": 'Node does not have label "karpenter.sh/capacity-type"',
        "claim-kept": 'NodePool "never" has consolidation disabled',
    }
