"""Scale-down and roll, end to end: the planner Lambda's ticks decide, the stack's workflow takes nodes away.

Each proof runs on the session's local world with the synthesized stack: the planner is invoked as EventBridge
Scheduler would invoke it (one call per tick), its decisions start the real state machine, whose steps evict
through the real API server (PodDisruptionBudgets answer 429) and terminate moto instances. Every proof watches
its PodDisruptionBudget from a thread while nodes go, and asserts it held throughout: the budget's healthy pods
never fell below what it demands.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from test_disruption import ReadyWatch, Stack, claim_summary, nodeclaims
from test_provisioning import Pool, converge, deployment, running
from worldkit import World, wait_for

from nodewright.catalog.snapshot import SnapshotSource
from nodewright.disruption.plan import plan
from nodewright.disruption.state import cluster_state

ON_DEMAND = {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}
DISRUPTED = "karpenter.sh/disrupted"
AL2023_AMD64 = "/aws/service/eks/optimized-ami/{version}/amazon-linux-2023/x86_64/standard/recommended/image_id"


def types(*names: str) -> list[dict[str, Any]]:
    return [ON_DEMAND, {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(names)}]


@pytest.fixture
def scaling_pool(local_world: World, namespace: str, stack: Stack) -> Iterator[Callable[..., Pool]]:
    """A NodePool of this test that consolidates (the other tests' pools never do)."""
    made: list[Pool] = []

    def make(requirements: list[dict[str, Any]], disruption: dict[str, Any], **template: Any) -> Pool:
        pool = Pool(local_world, stack.provisioner.node_role, namespace, requirements, None, disruption)
        if template:
            custom = client.CustomObjectsApi(local_world.api_client)
            patch = {"spec": {"template": {"spec": template}}}
            custom.patch_cluster_custom_object("nodewright.io", "v1", "nodepools", pool.name, patch)
        made.append(pool)
        return pool

    yield make
    for pool in made:
        pool.teardown()


# ----------------------------------------------------------------------------------------------- helpers


def launched(world: World, pool: Pool) -> list[dict[str, Any]]:
    return [c for c in nodeclaims(world, pool) if (c.get("status") or {}).get("providerID")]


def cost(world: World, pool: Pool) -> float:
    """What the pool's launched NodeClaims cost an hour (each records its offering's price at launch)."""
    return round(
        sum(
            float(c["metadata"].get("annotations", {}).get("nodewright.io/price-per-hour", 0))
            for c in launched(world, pool)
        ),
        6,
    )


def pool_nodes(world: World, pool: Pool) -> list[Any]:
    return list(world.core.list_node(label_selector=f"karpenter.sh/nodepool={pool.name}").items)


def tick(stack: Stack) -> dict[str, Any]:
    """One planner tick, as the schedule invokes it."""
    response = stack.world.aws("lambda").invoke(FunctionName=stack.outputs["PlannerFunctionName"], Payload=b"{}")
    body: dict[str, Any] = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, body
    return body


def execution_arn(stack: Stack, name: str) -> str:
    return next(e["executionArn"] for e in stack.executions() if e["name"] == name)


def settle(
    stack: Stack,
    pool: Pool,
    done: Callable[[], bool],
    timeout: float = 300,
    skipped: list[dict[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """Tick the planner, let each execution it starts for this pool finish, until `done()` holds and a tick finds
    nothing more to do. Returns what the ticks started for the pool, each with its execution's final status;
    appends to `skipped` each tick's reasons for leaving the pool's nodes alone."""
    started: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while True:
        body = tick(stack)
        if skipped is not None:
            skipped.append({k: v for k, v in body["skipped"].items() if k.startswith(pool.name)})
        ours = [s for s in body["started"] if s["nodeclaim"].startswith(pool.name)]
        for entry in ours:
            finished = stack.finish(execution_arn(stack, entry["execution"]))
            entry["status"], entry["output"] = finished["status"], str(finished.get("output"))[:1500]
        started.extend(ours)
        if not ours and done():
            return started
        assert time.monotonic() < deadline, f"not settled after {timeout}s; started {started}\n{_state(stack, pool)}"
        time.sleep(1)


def _state(stack: Stack, pool: Pool) -> str:
    """The pool's NodeClaims, nodes and the namespace's pods, for a failure message."""
    world = stack.world
    lines = []
    for c in nodeclaims(world, pool):
        status = c.get("status") or {}
        conditions = {k["type"]: k["status"] for k in status.get("conditions") or []}
        lines.append(
            f"nodeclaim {c['metadata']['name']} {status.get('providerID')} {status.get('imageID')} {conditions}"
        )
    for n in pool_nodes(world, pool):
        taints = [f"{t.key}:{t.effect}" for t in n.spec.taints or []]
        lines.append(f"node {n.metadata.name} {n.spec.provider_id} unschedulable={n.spec.unschedulable} {taints}")
    namespace = pool.name.removesuffix("-pool")
    for p in world.core.list_namespaced_pod(namespace).items:
        deleting = bool(p.metadata.deletion_timestamp)
        lines.append(f"pod {p.metadata.name} {p.status.phase} on {p.spec.node_name} deleting={deleting}")
    return "\n".join(lines)


class BudgetWatch:
    """Samples a PodDisruptionBudget's status from a thread: `held()` is true when, once its pods were all healthy,
    the healthy count never fell below what the budget demands."""

    def __init__(self, world: World, namespace: str, name: str) -> None:
        self.world, self.namespace, self.name = world, namespace, name
        self.samples: list[tuple[int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            status = self.world.policy.read_namespaced_pod_disruption_budget(self.name, self.namespace).status
            if status is not None and status.desired_healthy is not None:
                self.samples.append((status.current_healthy or 0, status.desired_healthy))
            time.sleep(0.2)

    def held(self) -> bool:
        satisfied = False
        for current, desired in self.samples:
            satisfied = satisfied or current >= desired
            if satisfied and current < desired:
                return False
        return satisfied

    def __enter__(self) -> BudgetWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def budget(world: World, namespace: str, app: str, **spec: Any) -> None:
    world.policy.create_namespaced_pod_disruption_budget(
        namespace,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": app},
            "spec": {"selector": {"matchLabels": {"app": app}}, **(spec or {"maxUnavailable": 1})},
        },
    )


def scale(world: World, namespace: str, name: str, replicas: int) -> None:
    world.apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": replicas}})
    wait_for(lambda: len(running(world, namespace)) == replicas or None, 60, f"{name} at {replicas} replicas")


def ready_nodes(world: World, pool: Pool) -> int:
    return sum(
        1 for n in pool_nodes(world, pool) if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
    )


def node_events(world: World, node: str, reason: str) -> list[Any]:
    selector = f"involvedObject.name={node},reason={reason}"
    return list(world.core.list_namespaced_event("default", field_selector=selector).items)


# ------------------------------------------------------------------------------------------------- proofs
# Each proof waits for several disruption workflows, one after another: minutes on a busy 2-core machine.
pytestmark = pytest.mark.timeout(900)


def test_a_deployment_scaled_in_ends_on_fewer_cheaper_nodes_within_its_budget(
    local_world: World,
    namespace: str,
    stack: Stack,
    scaling_pool: Callable[..., Pool],
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large", "m5.xlarge", "m5.2xlarge"), {"consolidateAfter": "5s"})
    deployment(world, namespace, pool, "web", 12, "1500m", "1Gi")
    budget(world, namespace, "web")
    converge(stack.provisioner, namespace, 12)
    before_nodes, before_cost = len(launched(world, pool)), cost(world, pool)
    assert before_nodes >= 3
    scale(world, namespace, "web", 2)
    with BudgetWatch(world, namespace, "web") as held, ReadyWatch(world, namespace, "web") as ready:
        started = settle(
            stack,
            pool,
            lambda: ready_nodes(world, pool) == len(launched(world, pool)) and len(running(world, namespace)) == 2,
        )
    after_nodes, after_cost = len(launched(world, pool)), cost(world, pool)
    print(
        json.dumps(
            {"nodes": [before_nodes, after_nodes], "cost_per_hour": [before_cost, after_cost], "started": started}
        )
    )
    assert {s["method"] for s in started} & {"emptiness"}, started  # the nodes the scale-in emptied went first
    assert all(s["status"] == "SUCCEEDED" for s in started), started
    assert after_nodes < before_nodes and after_cost < before_cost
    assert len(running(world, namespace)) == 2
    assert held.held() and ready.lowest(time.time()) >= 1


def test_three_lightly_used_nodes_become_one_while_a_min_available_budget_holds(
    local_world: World,
    namespace: str,
    stack: Stack,
    scaling_pool: Callable[..., Pool],
) -> None:
    world = local_world
    # Budgets that let all three go at once, so one multi-node decision takes them (Karpenter's default of 10%
    # would take them one by one, through single-node consolidation).
    pool = scaling_pool(types("m5.xlarge"), {"consolidateAfter": "5s", "budgets": [{"nodes": "100%"}]})
    # Three pods that need a node each, then three small ones that land beside them, one per node.
    deployment(world, namespace, pool, "big", 3, "3", "1Gi")
    responses = converge(stack.provisioner, namespace, 3)
    deployment(world, namespace, pool, "web", 3, "600m", "512Mi")
    budget(world, namespace, "web", minAvailable=2)
    responses += converge(stack.provisioner, namespace, 6)
    assert len(launched(world, pool)) == 3, (
        f"{[claim_summary(c) for c in nodeclaims(world, pool)]}; "
        f"provisioner said {[d for r in responses for d in r.get('decisions', [])]}"
    )
    world.apps.delete_namespaced_deployment("big", namespace)
    wait_for(lambda: len(running(world, namespace)) == 3 or None, 60, "the big pods gone")  # each node ~15% used
    # Every node's last pod event (a big pod's removal) is now behind it: past consolidateAfter, all three are
    # candidates at the first tick, so multi-node consolidation sees them together (a node still in its window
    # would be neither a candidate nor a destination, and single-node moves would take the nodes one by one).
    time.sleep(5 + 3)
    before = cost(world, pool)
    skipped: list[dict[str, str]] = []
    with BudgetWatch(world, namespace, "web") as held, ReadyWatch(world, namespace, "web") as ready:
        started = settle(
            stack,
            pool,
            lambda: (
                len(launched(world, pool)) == 1
                and ready_nodes(world, pool) == 1
                and len(running(world, namespace)) == 3
            ),
            skipped=skipped,
        )
    print(json.dumps({"cost_per_hour": [before, cost(world, pool)], "started": started}))
    assert any(s["method"] == "multi-node" for s in started), f"{started}\nskipped by tick: {skipped}"
    assert cost(world, pool) < before
    assert sorted(p.status.phase for p in running(world, namespace)) == ["Running"] * 3
    assert held.held() and ready.lowest(time.time()) >= 2


def test_a_changed_template_label_rolls_the_nodes_one_at_a_time(
    local_world: World,
    namespace: str,
    stack: Stack,
    scaling_pool: Callable[..., Pool],
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.xlarge"), {"consolidateAfter": "Never", "budgets": [{"nodes": "1"}]})
    deployment(world, namespace, pool, "web", 3, "3", "1Gi")
    budget(world, namespace, "web")
    converge(stack.provisioner, namespace, 3)
    old = {n.metadata.name for n in pool_nodes(world, pool)}
    assert len(old) == 3
    custom = client.CustomObjectsApi(world.api_client)
    patch = {"spec": {"template": {"metadata": {"labels": {"e2e/rev": "2"}}}}}
    custom.patch_cluster_custom_object("nodewright.io", "v1", "nodepools", pool.name, patch)

    disrupting: list[int] = []
    stop = threading.Event()

    def count_disrupting() -> None:
        while not stop.is_set():
            taken = [n for n in pool_nodes(world, pool) if any(t.key == DISRUPTED for t in n.spec.taints or [])]
            disrupting.append(len(taken))
            time.sleep(0.2)

    def rolled() -> bool:
        nodes = pool_nodes(world, pool)
        return (
            len(nodes) == 3
            and all(n.metadata.labels.get("e2e/rev") == "2" for n in nodes)
            and len(running(world, namespace)) == 3
        )

    watcher = threading.Thread(target=count_disrupting, daemon=True)
    with BudgetWatch(world, namespace, "web") as held:
        watcher.start()
        try:
            started = settle(stack, pool, rolled, timeout=480)
        finally:
            stop.set()
            watcher.join()
    print(json.dumps({"started": started, "most_disrupting_at_once": max(disrupting)}))
    assert {s["reason"] for s in started} == {"Drifted"} and len(started) == 3
    assert max(disrupting) == 1  # the budget: never two nodes disrupting at once
    assert old.isdisjoint(n.metadata.name for n in pool_nodes(world, pool))
    assert held.held()


def test_a_new_ami_release_rolls_the_nodes_to_the_new_image(
    local_world: World,
    namespace: str,
    stack: Stack,
    scaling_pool: Callable[..., Pool],
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large"), {"consolidateAfter": "Never", "budgets": [{"nodes": "100%"}]})
    deployment(world, namespace, pool, "web", 2, "1500m", "1Gi")
    budget(world, namespace, "web")
    converge(stack.provisioner, namespace, 2)
    version = world.aws("eks").describe_cluster(name=world.state.cluster)["cluster"]["version"]
    release = world.release_ami(AL2023_AMD64.format(version=version))
    assert {c["status"]["imageID"] for c in launched(world, pool)} == {release["old"]}

    def rolled() -> bool:
        images = {c["status"].get("imageID") for c in launched(world, pool)}
        return images == {release["new"]} and len(running(world, namespace)) == 2

    with BudgetWatch(world, namespace, "web") as held:
        started = settle(stack, pool, rolled, timeout=600)
    print(json.dumps({"release": release, "started": started}))
    assert {s["reason"] for s in started} == {"Drifted"} and len(started) == 2
    assert held.held()


def test_a_zero_budget_window_blocks_and_consolidation_proceeds_once_it_closes(
    local_world: World,
    namespace: str,
    stack: Stack,
    scaling_pool: Callable[..., Pool],
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large"), {"consolidateAfter": "5s"})
    deployment(world, namespace, pool, "web", 1, "1", "512Mi")
    converge(stack.provisioner, namespace, 1)
    [node] = [n.metadata.name for n in pool_nodes(world, pool)]
    scale(world, namespace, "web", 0)

    def close_window_now() -> float:
        """A nodes: "0" budget whose cron window is this minute; returns when that minute ends."""
        now = datetime.datetime.now(datetime.UTC)
        window = {"nodes": "0", "schedule": f"{now.minute} {now.hour} * * *", "duration": "1m"}
        patch = {"spec": {"disruption": {"consolidateAfter": "5s", "budgets": [window, {"nodes": "100%"}]}}}
        client.CustomObjectsApi(world.api_client).patch_cluster_custom_object(
            "nodewright.io", "v1", "nodepools", pool.name, patch
        )
        return now.replace(second=0, microsecond=0).timestamp() + 60

    [claim] = [c["metadata"]["name"] for c in launched(world, pool)]
    closes = close_window_now()
    time.sleep(6)  # consolidateAfter

    def blocked_by_the_window() -> bool:
        """One tick inside an open window; True once it held the node back by the budget. The node turns
        Consolidatable only once the pod's removal has reached its NodeClaim (forwarder, then provisioner), so the
        first ticks may still find it inside consolidateAfter."""
        nonlocal closes
        if time.time() >= closes - 5:  # too close to the minute's end for a tick: open a window in the next one
            time.sleep(max(0.0, closes - time.time()) + 0.5)
            closes = close_window_now()
        body = tick(stack)
        assert not [s for s in body["started"] if s["nodeclaim"].startswith(pool.name)], body
        return "nodes=0" in body["skipped"].get(claim, "") and time.time() < closes

    wait_for(blocked_by_the_window, 90, "a tick held back by the nodes=0 window", interval=2)
    # As Karpenter does, the budget reports once, on the NodePool; the node it holds back gets no event of its own.
    empty = "No allowed disruptions for disruption reason Empty due to blocking budget"

    def pool_event() -> Any:
        return next((e for e in node_events(world, pool.name, "DisruptionBlocked") if e.message == empty), None)

    blocked = wait_for(pool_event, 30, "the NodePool's DisruptionBlocked event for Empty")
    assert blocked.involved_object.kind == "NodePool"
    assert not node_events(world, node, "DisruptionBlocked")
    time.sleep(max(0.0, closes - time.time()) + 1)
    started = settle(stack, pool, lambda: not pool_nodes(world, pool))
    assert [(s["method"], s["status"]) for s in started] == [("emptiness", "SUCCEEDED")]


def test_a_do_not_disrupt_pod_keeps_its_node_from_consolidation_but_not_from_expiry(
    local_world: World,
    namespace: str,
    stack: Stack,
    scaling_pool: Callable[..., Pool],
) -> None:
    world = local_world
    pool = scaling_pool(
        types("m5.2xlarge"), {"consolidateAfter": "5s"}, expireAfter="60s", terminationGracePeriod="10s"
    )
    deployment(world, namespace, pool, "keep", 1, "250m", "256Mi")
    world.apps.patch_namespaced_deployment(
        "keep",
        namespace,
        {"spec": {"template": {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}}}},
    )
    converge(stack.provisioner, namespace, 1)
    [claim] = launched(world, pool)
    name = claim["metadata"]["name"]
    created = datetime.datetime.fromisoformat(claim["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    time.sleep(6)
    reasons = []
    while time.time() < created.timestamp() + 50:  # an underused node, ticked until just before it expires
        body = tick(stack)
        assert not [s for s in body["started"] if s["nodeclaim"] == name], body
        reasons.append(body["skipped"].get(name, ""))
        time.sleep(3)
    assert any("do-not-disrupt" in r for r in reasons), reasons

    # Expiration replaces the node (the pod needs a home), so the pool keeps one node: a new one.
    def expired_node_gone() -> bool:
        return name not in {c["metadata"]["name"] for c in launched(world, pool)}

    started = settle(stack, pool, expired_node_gone, timeout=180)
    assert [(s["nodeclaim"], s["reason"], s["status"]) for s in started] == [(name, "Expired", "SUCCEEDED")]


def snapshot(world: World) -> list[dict[str, Any]]:
    """The cluster as the planner reads it (what `kubectl get -o yaml` would print)."""
    custom = client.CustomObjectsApi(world.api_client)
    docs: list[dict[str, Any]] = []
    for plural, kind in (("nodepools", "NodePool"), ("ec2nodeclasses", "EC2NodeClass"), ("nodeclaims", "NodeClaim")):
        for item in custom.list_cluster_custom_object("nodewright.io", "v1", plural)["items"]:
            docs.append({**item, "kind": kind, "apiVersion": "nodewright.io/v1"})
    for kind, listed in (
        ("Node", world.core.list_node()),
        ("Pod", world.core.list_pod_for_all_namespaces()),
        ("PodDisruptionBudget", world.policy.list_pod_disruption_budget_for_all_namespaces()),
    ):
        for item in world.api_client.sanitize_for_serialization(listed)["items"]:
            if kind == "Pod" and (item.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            docs.append({**item, "kind": kind, "apiVersion": "policy/v1" if kind == "PodDisruptionBudget" else "v1"})
    return docs


def test_a_pod_that_lands_on_the_chosen_node_before_the_execution_runs_invalidates_it(
    local_world: World,
    namespace: str,
    stack: Stack,
    scaling_pool: Callable[..., Pool],
) -> None:
    world = local_world
    pool = scaling_pool(types("m5.large"), {"consolidateAfter": "5s", "budgets": [{"nodes": "100%"}]})
    deployment(world, namespace, pool, "web", 1, "1", "512Mi")
    converge(stack.provisioner, namespace, 1)
    [node] = [n.metadata.name for n in pool_nodes(world, pool)]
    scale(world, namespace, "web", 0)
    time.sleep(6)
    # The planner's decision, made by its own code on the cluster as it is now...
    state, _ = cluster_state(snapshot(world), SnapshotSource().instance_types(), time.time())
    decided = plan(state, {})
    [command] = [c for c in decided.commands(state.now) if c.node == node]
    assert command.method == "emptiness"
    # ... then a pod lands on the node before the execution runs.
    world.core.create_namespaced_pod(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "late", "labels": {"app": "late"}},
            "spec": {
                "nodeName": node,
                "containers": [{"name": "app", "image": "app"}],
                "tolerations": [{**pool.taint, "operator": "Equal"}],
            },
        },
    )
    wait_for(lambda: len(running(world, namespace)) == 1 or None, 60, "the late pod running")
    described = stack.finish(stack.start(command))
    output = json.loads(described["output"])
    assert described["status"] == "SUCCEEDED" and output["identify"]["outcome"] == "invalidated", output
    # Either check refuses it: the pod event restarted consolidateAfter, and the node holds a pod.
    assert any(why in output["identify"]["reason"] for why in ("no longer empty", "no longer Consolidatable"))
    node_now = world.core.read_node(node)
    assert not node_now.spec.unschedulable and not any(t.key == DISRUPTED for t in node_now.spec.taints or [])
    assert [p.metadata.name for p in running(world, namespace)] == ["late"]  # nothing was evicted
    assert node_events(world, node, "DisruptionInvalidated")
