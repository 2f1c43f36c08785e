"""Which nodes voluntary disruption may consider, why the others are not candidates, and in which order."""

from __future__ import annotations

from typing import Any

from cluster_builder import T0, Cluster, instance_types, iso
from hypothesis import given
from hypothesis import strategies as st

from nodewright.disruption.candidates import EVENTUAL, candidate, candidates, consolidatable, eviction_cost
from nodewright.disruption.pdb import computed_allowed
from nodewright.disruption.plan import plan
from nodewright.disruption.simulate import movable
from nodewright.disruption.state import PodFactsCache, cluster_state
from nodewright.model.objects import LabelSelector, Pod, PodDisruptionBudget

DND_KEY = "karpenter.sh/do-not-disrupt"
DND = {DND_KEY: "true"}


def refusals(cluster: Cluster) -> dict[str, str]:
    return candidates(cluster.state())[1]


def test_a_plain_node_is_a_candidate_with_its_price_and_pods_that_must_move() -> None:
    cluster = Cluster()
    cluster.node("a", "m5.xlarge")
    cluster.pod("web-0", "a")
    cluster.pod("agent-a", "a", owner="DaemonSet")
    [found], refused = candidates(cluster.state())
    assert refused == {}
    assert found.name == "claim-a" and found.price > 0
    assert [p.key for p in found.reschedulable] == ["web/web-0"]  # the DaemonSet pod stays with the node
    assert len(found.pods) == 2


def test_nodes_that_cannot_go_now_are_not_candidates_and_keep_why() -> None:
    cluster = Cluster()
    cluster.node("starting", initialized=False)
    cluster.node("guarded", annotations=DND)
    cluster.node("held")
    cluster.pod("keep-0", "held", annotations=DND)
    cluster.node("budgeted")
    cluster.pod("db-0", "budgeted", labels={"app": "db"})
    cluster.pdb("db", {"app": "db"}, allowed=0)
    cluster.node("twice")
    cluster.pod("api-0", "twice", labels={"app": "api", "tier": "x"})
    cluster.pdb("api-a", {"app": "api"}, allowed=1)
    cluster.pdb("api-b", {"tier": "x"}, allowed=1)
    cluster.node("tainted", taints=[{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}])
    cluster.node("locked")
    refused = candidates(cluster.state(locked=["claim-locked"]))[1]
    assert refused["claim-starting"] == "node isn't initialized"
    assert "do-not-disrupt" in refused["claim-guarded"] and "annotation" in refused["claim-guarded"]
    assert refused["claim-held"] == 'pod web/keep-0 has "karpenter.sh/do-not-disrupt" annotation'
    assert "PodDisruptionBudget web/db allows no disruption" in refused["claim-budgeted"]
    assert "more than one PodDisruptionBudget" in refused["claim-twice"]
    assert refused["claim-tainted"] == "node is deleting or marked for deletion"
    assert refused["claim-locked"] == "candidate is already being disrupted"


def test_a_node_a_pending_pod_was_just_nominated_to_is_not_a_candidate() -> None:
    cluster = Cluster()
    claim, _ = cluster.node("fresh", age=30)
    claim["metadata"]["annotations"]["nodewright.io/pods"] = '["web/late-0"]'
    cluster.pod("late-0")  # still pending
    assert refusals(cluster)["claim-fresh"] == "node is nominated for a pending pod"


def test_drift_is_eventual_a_grace_period_lets_it_past_blocking_pods() -> None:
    cluster = Cluster()
    cluster.node("bounded", terminationGracePeriod="1h")
    cluster.pod("keep-0", "bounded", annotations=DND)
    state = cluster.state()
    [member] = state.fleet
    assert isinstance(candidate(state, member), str)
    assert not isinstance(candidate(state, member, EVENTUAL), str)


def test_candidates_come_most_savings_per_unit_of_disruption_first() -> None:
    cluster = Cluster()
    cluster.node("many", "m5.xlarge")
    for i in range(4):
        cluster.pod(f"web-{i}", "many")
    cluster.node("important", "m5.xlarge")
    cluster.pod("vip-0", "important", annotations={"controller.kubernetes.io/pod-deletion-cost": str(2**30)})
    cluster.node("one", "m5.xlarge")
    cluster.pod("solo-0", "one")
    cluster.node("dear", "m5.4xlarge")  # four times the price for the same four pods
    for i in range(4):
        cluster.pod(f"big-{i}", "dear")
    found = candidates(cluster.state())[0]
    assert [c.name for c in found] == ["claim-dear", "claim-one", "claim-many", "claim-important"]
    costs = {c.name: c.reschedule_cost for c in found}
    assert costs["claim-one"] == 2.0 and costs["claim-many"] == 5.0 and costs["claim-important"] > 9.0


def test_pods_that_cost_nothing_to_move_leave_a_node_empty() -> None:
    cluster = Cluster()
    cluster.node("idle")
    cluster.pod("agent-idle", "idle", owner="DaemonSet")
    cluster.pod("filler-0", "idle", priority=-(2**31) + 1)  # a placeholder whose eviction costs nothing
    [found] = candidates(cluster.state())[0]
    assert found.empty and [p.key for p in found.reschedulable] == ["web/filler-0"]


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 10**9))
def test_eviction_cost_stays_within_karpenters_bounds(deletion_cost: int, priority: int) -> None:
    pod = Pod(
        "ns", "p", annotations={"controller.kubernetes.io/pod-deletion-cost": str(deletion_cost)}, priority=priority
    )
    assert -10.0 <= eviction_cost(pod) <= 10.0


def test_consolidatable_once_consolidate_after_has_passed_since_the_last_pod_event() -> None:
    cluster = Cluster()
    cluster.pool(disruption={"consolidateAfter": "10m"})
    cluster.node("a", age=3600)
    cluster.pod("web-0", "a", bound_ago=300)
    state = cluster.state()
    [member] = state.fleet
    pool = state.pools["general"]
    assert "has not passed" in consolidatable(member, pool, T0 - 300, T0)
    assert consolidatable(member, pool, T0 - 601, T0) == ""
    # A removal the forwarder recorded restarts the timer too.
    claim = cluster.find("NodeClaim", "claim-a")
    claim["status"]["lastPodEventTime"] = "2027-01-15T07:58:00Z"
    [recent] = cluster.state().fleet
    assert "has not passed" in consolidatable(recent, pool, 0.0, T0)
    cluster.pool(disruption={"consolidateAfter": "Never"})
    never = cluster.state().pools["general"]
    assert "consolidation disabled" in consolidatable(member, never, 0.0, T0)


def budget(**spec: str) -> PodDisruptionBudget:
    return PodDisruptionBudget("web", "b", LabelSelector((("app", "web"),)), **spec)


def test_a_budget_without_status_is_computed_from_the_pods() -> None:
    pods = [Pod("web", f"web-{i}", labels={"app": "web"}) for i in range(4)]
    healthy = {"web/web-0", "web/web-1", "web/web-2"}
    assert computed_allowed(budget(min_available="2"), pods, healthy) == 1
    assert computed_allowed(budget(min_available="75%"), pods, healthy) == 0
    assert computed_allowed(budget(max_unavailable="2"), pods, healthy) == 1
    assert computed_allowed(budget(max_unavailable="50%"), pods, set()) == 0


def test_a_warm_tick_reads_pod_facts_again_only_for_a_new_resource_version() -> None:
    cluster = Cluster()
    cluster.node("a", "m5.xlarge")
    pod = cluster.pod("web-0", "a")
    pod["metadata"]["resourceVersion"] = "1"
    known: PodFactsCache = {}
    first, _ = cluster_state(cluster.docs, instance_types(), T0, known_facts=known)
    assert not first.pods["web/web-0"].terminating and len(known) == 1
    pod["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:00Z"  # a change the API server would version
    unchanged, _ = cluster_state(cluster.docs, instance_types(), T0, known_facts=known)
    assert not unchanged.pods["web/web-0"].terminating  # same version: the facts read before
    pod["metadata"]["resourceVersion"] = "2"
    bumped, _ = cluster_state(cluster.docs, instance_types(), T0, known_facts=known)
    assert bumped.pods["web/web-0"].terminating
    assert set(known) == {(pod["metadata"]["uid"], "2")}  # the old version's facts are gone


def test_the_pod_facts_kept_follow_the_cluster_however_many_pods_it_has() -> None:
    """The facts kept are exactly the bound pods' of the last tick, with no size limit: a cluster of more pods than
    any fixed bound would read every pod's facts again each tick (the cache thrashed at 10,000 nodes)."""
    cluster = Cluster()
    cluster.node("a", "m5.24xlarge")
    pods = [cluster.pod(f"web-{i}", "a") for i in range(5)]
    for i, pod in enumerate(pods):
        pod["metadata"]["uid"], pod["metadata"]["resourceVersion"] = f"u{i}", "1"
    known: PodFactsCache = {}
    cluster_state(cluster.docs, instance_types(), T0, known_facts=known)
    first = dict(known)
    cluster.docs.remove(pods[0])
    cluster_state(cluster.docs, instance_types(), T0, known_facts=known)
    assert set(known) == {(f"u{i}", "1") for i in range(1, 5)}  # the deleted pod's facts went
    assert all(known[key] is first[key] for key in known)  # the others were not read again


def test_a_nodes_room_is_its_allocatable_less_its_pods_and_the_same_object_each_time() -> None:
    cluster = Cluster()
    cluster.node("a", "m5.xlarge")
    cluster.pod("web-0", "a", cpu="1", memory="1Gi")
    state = cluster.state()
    node = state.node("a")
    assert node is not None
    room = state.room(node)
    assert room.pods == () and room is state.room(node)
    assert room.allocatable["cpu"] == node.allocatable["cpu"] - 1000
    assert room.allocatable["memory"] == node.allocatable["memory"] - 1024**3


def started(pod: dict[str, Any], ago: float) -> dict[str, Any]:
    pod["status"]["startTime"] = iso(T0 - ago)
    return pod


def test_a_do_not_disrupt_duration_protects_the_pod_until_it_ends() -> None:
    cluster = Cluster()
    cluster.node("young", terminationGracePeriod="1h")
    started(cluster.pod("keep-0", "young", annotations={DND_KEY: "1h"}), ago=600)
    cluster.node("old")
    started(cluster.pod("done-0", "old", annotations={DND_KEY: "1h"}), ago=7200)
    cluster.node("unknown")
    cluster.pod("never-0", "unknown", annotations={DND_KEY: "2m"})  # no startTime: protected (fails safe)
    state = cluster.state()
    found, refused = candidates(state)
    assert refused == {
        "claim-young": 'pod web/keep-0 has "karpenter.sh/do-not-disrupt" annotation',
        "claim-unknown": 'pod web/never-0 has "karpenter.sh/do-not-disrupt" annotation',
    }
    [old] = found
    assert [p.key for p in movable(state, old)] == ["web/done-0"]  # its protection is over: it moves
    # Drift of a claim with a grace period gets past the pod, but the simulation plans no room for it while it holds.
    young = candidate(state, next(m for m in state.fleet if m.nodeclaim == "claim-young"), EVENTUAL)
    assert not isinstance(young, str) and movable(state, young) == []
    later = cluster.state(now=T0 + 3600)
    assert "claim-young" not in candidates(later)[1]


def test_an_invalid_do_not_disrupt_value_protects_nothing_and_is_reported() -> None:
    cluster = Cluster()
    cluster.node("a")
    started(cluster.pod("web-0", "a", annotations={DND_KEY: "forever"}), ago=60)
    cluster.node("b")
    cluster.pod("db-0", "b", labels={"app": "db"}, annotations={DND_KEY: "-5m"})
    cluster.pdb("db", {"app": "db"}, allowed=0)
    found, refused = candidates(cluster.state())
    [a] = found
    assert a.name == "claim-a" and len(a.invalid) == 1
    assert a.invalid[0].startswith("pod web/web-0: karpenter.sh/do-not-disrupt:") and "ignored" in a.invalid[0]
    # The budget holds the node the ignored annotation did not; the reason names both.
    assert refused["claim-b"].startswith("PodDisruptionBudget web/db allows no disruption of pod web/db-0")
    assert 'duration "-5m" must be positive' in refused["claim-b"]


def test_a_budget_selecting_a_daemonset_pod_holds_its_empty_node() -> None:
    cluster = Cluster()
    cluster.node("idle")
    cluster.pod("agent-idle", "idle", owner="DaemonSet", labels={"app": "agent"})
    cluster.pdb("agent", {"app": "agent"}, maxUnavailable=0)
    refused = refusals(cluster)
    assert refused["claim-idle"].startswith("PodDisruptionBudget web/agent allows no disruption of pod web/agent-idle")


def test_an_always_allow_budget_lets_a_pod_that_is_not_ready_go() -> None:
    cluster = Cluster()
    for name, policy, ready in (
        ("sick", "AlwaysAllow", "False"),
        ("well", "AlwaysAllow", "True"),
        ("strict", "IfHealthyBudget", "False"),
    ):
        cluster.node(name)
        pod = cluster.pod(f"{name}-0", name, labels={"app": name})
        pod["status"]["conditions"].append({"type": "Ready", "status": ready})
        cluster.pdb(name, {"app": name}, allowed=0, maxUnavailable=0, unhealthyPodEvictionPolicy=policy)
    state = cluster.state()
    found, refused = candidates(state)
    assert [c.name for c in found] == ["claim-sick"]
    assert set(refused) == {"claim-well", "claim-strict"}
    assert not state.pods["web/sick-0"].ready and state.pods["web/well-0"].ready
    # A fully blocking budget does not hold the pod that is not Ready either: the simulation plans room for it.
    assert [p.key for p in movable(state, found[0])] == ["web/sick-0"]


def test_a_budget_without_a_selector_selects_nothing_and_an_empty_one_the_whole_namespace() -> None:
    cluster = Cluster()
    cluster.node("a")
    cluster.pod("web-0", "a")
    cluster.pdb("none", {}, maxUnavailable=0)["spec"].pop("selector")
    assert refusals(cluster) == {}
    cluster.pdb("all", {}, maxUnavailable=0)  # selector: {matchLabels: {}}
    assert "PodDisruptionBudget web/all" in refusals(cluster)["claim-a"]
    pdb = next(p for p in cluster.state().pdbs.budgets if p.name == "none")
    assert pdb.selector is None and not pdb.selects(Pod("web", "x"))
    assert computed_allowed(pdb, [Pod("web", "x")], {"web/x"}) == 0


def test_a_pod_under_two_budgets_is_fully_blocked_and_gets_no_room_planned() -> None:
    # The eviction API refuses a pod two budgets select, whatever they allow (Karpenter's isFullyBlocked).
    cluster = Cluster()
    cluster.node("a", terminationGracePeriod="1h")
    cluster.pod("api-0", "a", labels={"app": "api", "tier": "x"})
    cluster.pdb("api-a", {"app": "api"}, allowed=1, maxUnavailable=1)
    cluster.pdb("api-b", {"tier": "x"}, allowed=1, maxUnavailable=1)
    state = cluster.state()
    [pod] = state.pods_on(state.fleet[0])
    assert state.pdbs.fully_blocked(pod)
    drifting = candidate(state, state.fleet[0], EVENTUAL)
    assert not isinstance(drifting, str) and movable(state, drifting) == []


def test_a_pod_reported_not_ready_is_not_healthy_for_a_budget_without_status() -> None:
    cluster = Cluster()
    cluster.node("a")
    cluster.pod("web-0", "a", labels={"app": "web"})
    sick = cluster.pod("web-1", "a", labels={"app": "web"})
    sick["status"]["conditions"].append({"type": "Ready", "status": "False"})
    cluster.pdb("web", {"app": "web"}, minAvailable=1)
    state = cluster.state()
    # Two pods, one healthy, one must stay available: nothing may be disrupted (it was 1 when readiness was unread).
    assert state.pdbs.allowed[("web", "web")] == 0


def test_a_node_whose_bound_pod_could_not_be_read_is_no_candidate_and_not_removed_as_empty() -> None:
    cluster = Cluster()
    cluster.node("node-a")
    cluster.pod("gpu-0", "node-a", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}])
    state, errors = cluster_state(cluster.docs, instance_types(), T0)
    assert [e.kind for e in errors] == ["Pod"]  # reported, as every document that does not load is
    [member] = state.fleet
    reason = candidate(state, member)
    assert isinstance(reason, str) and "web/gpu-0 could not be read" in reason
    assert plan(state, {}).decisions == []
