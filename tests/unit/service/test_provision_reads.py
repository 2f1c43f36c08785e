"""What provision() reads and trusts: hints, not pods; the watch cache, checked; only the pods a decision needs;
one planner at a time; and the events and log lines that explain it."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from service_fakes import FakeCloud, FixedClock, SmallCatalog, nodeclass, nodepool, pod
from test_provision_service import actions, batch_of, hint, world

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.catalog.catalog import Catalog
from nodewright.ports import ProvisioningView
from nodewright.service.batch import Batch, PodHint
from nodewright.service.provision import delivery, explain, provision
from nodewright.service.provision.serial import PLANNER_LOCK

CATALOG = SmallCatalog()
ZONE_SPREAD = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
    "labelSelector": {"matchLabels": {"app": "spread"}},
}


def bound(name: str, node: str, labels: Mapping[str, str], cpu: str = "1") -> dict[str, Any]:
    doc = pod(name, cpu=cpu)
    doc["metadata"]["labels"] = dict(labels)
    doc["spec"]["nodeName"] = node
    doc["status"] = {"phase": "Running"}
    return doc


def node(name: str, zone: str, cpu: str = "16") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone, "kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}},
    }


# ------------------------------------------------------------------------------------------------ hints


def test_a_forged_hint_is_sized_by_the_pod_in_the_api_server_and_a_made_up_one_is_skipped() -> None:
    cluster, cloud, state, clock = world(pod("web-0", cpu="100m", memory="128Mi"))
    batch = Batch("forged", "demo", [PodHint("web", "web-0"), PodHint("web", "made-up"), PodHint("web", "web-0")])
    result = provision(batch, cluster, cloud, state, clock, CATALOG)
    [launched] = result.launched
    catalog = Catalog(CATALOG.instance_types())
    # The smallest type of the catalog that holds a 100m pod, not what a forged spec would have asked for.
    assert catalog[launched.instance_type].vcpu == 2
    assert [d.subject for d in actions(result, "skipped")] == ["pod/web/made-up"]


def test_hinted_pods_that_are_not_pending_as_read_are_skipped_with_the_reason() -> None:
    terminating = pod("going")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    other = pod("volcano", schedulerName="volcano")
    fresh = pod("fresh")
    fresh["status"] = {"phase": "Pending"}  # the kube-scheduler has not tried it yet
    cluster, cloud, state, clock = world(terminating, other, fresh)
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    assert not result.launched and not cloud.fleets
    assert {d.subject: d.reason for d in actions(result, "skipped")} == {
        "pod/web/going": "not pending as read from the API server: terminating",
        "pod/web/volcano": "not pending as read from the API server: other-scheduler",
        "pod/web/fresh": "not pending as read from the API server: not-yet-scheduled",
    }


class LaggingCache(InMemoryCluster):
    """A watch cache that has not seen the newest pods yet: `read()` serves an older pending set."""

    def __init__(self, *args: Any, lagging: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lagging = dict(lagging)

    def read_for_provisioning(self) -> ProvisioningView:
        return replace(super().read_for_provisioning(), pending=self.lagging)


def test_a_hint_the_watch_cache_has_not_seen_yet_is_read_consistently_in_its_namespace_only() -> None:
    clock = FixedClock()
    seen = pod("api-0", namespace="api")
    cluster = LaggingCache([nodepool(), nodeclass(), pod("web-0"), seen], clock=clock.now, lagging={"api/api-0": seen})
    result = provision(batch_of(cluster), cluster, FakeCloud(), InMemoryState(), clock, CATALOG)
    # The cache had api/api-0 at the hinted version; only web's pending pods are read again, consistently.
    assert [r for r in cluster.reads if r.startswith("pending_pods")] == ["pending_pods web"]
    assert sorted(k for c in result.launched for k in c.pods) == ["api/api-0", "web/web-0"]


def test_a_hinted_pod_the_cache_holds_at_a_later_version_needs_no_second_read() -> None:
    # The kube-scheduler rewrote the pod's condition message after the forwarder's hint: the cache is ahead of the
    # hint, not behind it, and the pod is planned as the cache holds it.
    clock = FixedClock()
    hinted = pod("web-0")
    later = {**hinted, "metadata": {**hinted["metadata"], "resourceVersion": "5"}}
    cluster = LaggingCache([nodepool(), nodeclass(), hinted], clock=clock.now, lagging={"web/web-0": later})
    hints = [PodHint("web", "web-0", hinted["metadata"]["uid"], "1")]
    result = provision(Batch("ahead", "demo", hints), cluster, FakeCloud(), InMemoryState(), clock, CATALOG)
    assert not [r for r in cluster.reads if r.startswith("pending_pods")]
    assert [k for c in result.launched for k in c.pods] == ["web/web-0"]


def test_a_cache_at_the_hinted_version_needs_no_second_read() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    assert "pending_pods" not in cluster.reads


# ------------------------------------------------------------------------------ reading only what it needs


def test_existing_nodes_are_the_kube_schedulers_and_their_pods_are_not_read() -> None:
    cluster, cloud, state, clock = world(node("big", "us-east-1a"), bound("db-0", "big", {"app": "db"}), pod("web-0"))
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    # The pod was found Unschedulable with "big" in the cluster: new capacity, and no pod list was read.
    assert [c.pods for c in result.launched] == [("web/web-0",)] and not actions(result, "existing")
    assert not [r for r in cluster.reads if r.startswith(("bound_pods", "pods_on_node"))]


def test_a_zone_spread_reads_the_pods_its_selector_counts_and_balances_against_them() -> None:
    running = [node(f"n-{z}", f"us-east-1{z}", cpu="1") for z in "ab"]
    placed = [bound(f"spread-{z}{i}", f"n-{z}", {"app": "spread"}) for z in "ab" for i in range(2)]
    unrelated = bound("db-0", "n-a", {"app": "db"})
    pending = [pod(f"spread-new-{i}", cpu="1", topologySpreadConstraints=[ZONE_SPREAD]) for i in range(2)]
    for p in pending:
        p["metadata"]["labels"] = {"app": "spread"}
    cluster, cloud, state, clock = world(*running, *placed, unrelated, *pending)
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    # Two running in each of a and b, none in c: both new pods go to us-east-1c.
    assert {c.zone for c in result.launched} == {"us-east-1c"}
    assert sum(len(c.pods) for c in result.launched) == 2
    assert [r for r in cluster.reads if r.startswith("bound_pods")] == ["bound_pods web"]


def test_the_pods_of_a_node_being_disrupted_are_planned_with_the_batch_and_its_room_is_not_counted() -> None:
    leaving = node("leaving", "us-east-1a")
    leaving["spec"] = {"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}
    deleting = node("deleting", "us-east-1b")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    cluster, cloud, state, clock = world(
        leaving,
        deleting,
        node("staying", "us-east-1c"),
        bound("db-0", "leaving", {"app": "db"}),
        bound("db-1", "deleting", {"app": "db"}),
        bound("db-2", "staying", {"app": "db"}),
        pod("web-0"),
    )
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    # As Karpenter's provisioner does with deleting nodes: their pods need a place too; the others are left.
    assert sorted(p for c in result.launched for p in c.pods) == ["web/db-0", "web/db-1", "web/web-0"]
    assert sorted(r for r in cluster.reads if r.startswith("pods_on_node")) == [
        "pods_on_node deleting",
        "pods_on_node leaving",
    ]


# ------------------------------------------------------------------------------------- one planner


def test_a_planner_that_cannot_take_the_lock_plans_nothing_and_says_who_holds_it() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    state.acquire_lock(PLANNER_LOCK, "replace-exec-1/abc", clock.now(), 60)
    slept: list[float] = []
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG, sleep=slept.append)
    [busy] = actions(result, "busy")
    assert "replace-exec-1/abc" in busy.reason
    assert not cloud.fleets and cluster.reads == [] and sum(slept) >= 19
    # The lock expires by itself should its holder die.
    clock.t += 61
    assert provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG).launched


class AtomicState(InMemoryState):
    """DynamoDB's conditional write is atomic; the dict here is made so for threads."""

    guard = threading.Lock()

    def acquire_lock(self, name: str, owner: str, now: float, ttl_seconds: int) -> str:
        with self.guard:
            return super().acquire_lock(name, owner, now, ttl_seconds)


class SlowReads(InMemoryCluster):
    """Each read takes a while, so two planners started together overlap unless something serializes them."""

    def read_for_provisioning(self) -> ProvisioningView:
        time.sleep(0.05)
        return super().read_for_provisioning()


def test_a_batch_and_a_replacement_for_the_same_pod_at_once_plan_it_once() -> None:
    # web-0 is a StatefulSet pod: evicted from the node being replaced and recreated under the same name. The
    # workflow's LaunchReplacement and the forwarder's batch both want capacity for it, at the same moment.
    clock = FixedClock()
    cluster = SlowReads([nodepool(), nodeclass(), pod("web-0", cpu="2")], clock=clock.now)
    cloud, state = FakeCloud(cluster_log=cluster.log), AtomicState()
    results: dict[str, Any] = {}

    def run(batch_id: str) -> None:
        batch = Batch(batch_id, "demo", [hint(cluster.objects[("Pod", "web", "web-0")])])
        results[batch_id] = provision(batch, cluster, cloud, state, clock, CATALOG, sleep=time.sleep)

    threads = [threading.Thread(target=run, args=(b,)) for b in ("batch-1", "replace-exec-1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    launched = [c for r in results.values() for c in r.launched]
    assert len(launched) == 1 and len(cloud.fleets) == 1
    waited = [r for r in results.values() if not r.launched]
    assert [d.reason for d in actions(waited[0], "waiting")] == [
        f"nominated to nodeclaim/{launched[0].name}, which is in flight"
    ]
    assert state.locks == {}  # released by both


# --------------------------------------------------------------------------------- events and logs


def test_unschedulable_pods_get_one_failed_scheduling_event_per_reason_per_five_minutes() -> None:
    cluster, cloud, state, clock = world(pod("huge-0", cpu="500"))
    for batch_id in ("b1", "b2", "b3"):
        provision(batch_of(cluster, batch_id), cluster, cloud, state, clock, CATALOG)
        clock.t += 10
    events = [e for e in cluster.events if e.reason == "FailedScheduling"]
    assert len(events) == 1 and events[0].message.startswith("Failed to schedule pod, ")
    clock.t += 300
    provision(batch_of(cluster, "b4"), cluster, cloud, state, clock, CATALOG)
    assert len([e for e in cluster.events if e.reason == "FailedScheduling"]) == 2


def test_every_offering_out_of_capacity_is_explained_on_the_pods_and_the_nodeclaim() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    cloud.refuse |= {(it.name, o.zone, o.capacity_type) for it in CATALOG.instance_types() for o in it.offerings}
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    assert not result.launched
    [failed] = actions(result, "launch-failed")
    assert failed.details["cause"] == "capacity"
    assert {e.pod for e in cluster.events if e.reason == "InsufficientCapacityError"} == {
        "web/web-0",
        failed.subject,
    }
    # Once every offering is marked (after more refusals), the NodePool is told it has nothing left to offer.
    state.mark_unavailable(dict.fromkeys(cloud.refuse, "InsufficientInstanceCapacity"), clock.now(), 180)
    again = provision(batch_of(cluster, "b2"), cluster, cloud, state, clock, CATALOG)
    assert not again.launched and actions(again, "unschedulable")
    assert [e.pod for e in cluster.events if e.reason == "NoCompatibleInstanceTypes"] == ["nodepool/general"]


def test_the_log_gets_a_line_per_launch_and_per_pod_that_could_not_be_placed() -> None:
    cluster, cloud, state, clock = world(pod("web-0"), pod("huge-0", cpu="500"))
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG).to_json()
    lines = explain.log_lines(result)
    [launch] = [fields for level, message, fields in lines if message == "launched nodeclaim"]
    assert launch["pods"] == ["web/web-0"] and launch["instance_id"].startswith("i-")
    [refusal] = [(level, fields) for level, message, fields in lines if message == "could not schedule pod"]
    assert refusal[0] == "warning" and refusal[1]["pod"] == "web/huge-0" and refusal[1]["reason"]


# ---------------------------------------------------------------------------------------- deliveries


def test_only_a_delivery_that_launched_is_remembered_and_only_for_its_window() -> None:
    cluster, cloud, state, clock = world(pod("web-0"), pod("huge-0", cpu="500"))
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    answer = result.to_json()
    assert delivery.remember(state, result, answer, clock.now())
    replayed = delivery.recall(state, "b1", clock.now() + 60)
    assert replayed is not None and replayed["replayed"] and replayed["nodeclaims"] == answer["nodeclaims"]
    assert delivery.recall(state, "b1", clock.now() + delivery.DELIVERY_WINDOW_SECONDS + 1) is None
    nothing = provision(
        Batch("b2", "demo", [hint(cluster.objects[("Pod", "web", "huge-0")])]), cluster, cloud, state, clock, CATALOG
    )
    assert not delivery.remember(state, nothing, nothing.to_json(), clock.now())
    assert delivery.recall(state, "b2", clock.now()) is None


class BoundMeanwhile(InMemoryCluster):
    """The watch cache still shows `late` pending, at the version the forwarder saw; by the time its node's pods
    are read it is bound (a newer version)."""

    def read_for_provisioning(self) -> ProvisioningView:
        view = super().read_for_provisioning()
        late = self.objects[("Pod", "web", "late-0")]
        seen = {**late, "metadata": {**late["metadata"], "resourceVersion": "1"}}
        return replace(view, pending={**view.pending, "web/late-0": {**seen, "spec": {**late["spec"], "nodeName": ""}}})


def test_a_pod_bound_since_the_cached_read_is_skipped_and_not_counted_twice_on_its_node() -> None:
    from service_fakes import node_for

    clock = FixedClock()
    cluster = BoundMeanwhile([nodepool(), nodeclass(), pod("late-0", cpu="6"), pod("next-0", cpu="6")], clock=clock.now)
    cloud, state = FakeCloud(cluster_log=cluster.log), InMemoryState()
    # One claim launched for both; its node registers and the kube-scheduler binds late-0 there.
    [claim] = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG).launched
    assert sorted(claim.pods) == ["web/late-0", "web/next-0"]
    node = node_for(cloud.instances[claim.instance_id], "ip-10-0-0-1.ec2.internal")
    node["status"]["allocatable"] = {"cpu": "15", "memory": "60Gi", "pods": "110"}
    cluster.put(node)
    batch = Batch("b2", "demo", [hint(cluster.objects[("Pod", "web", n)]) for n in ("late-0", "next-0")])
    cluster.objects[("Pod", "web", "late-0")]["spec"]["nodeName"] = "ip-10-0-0-1.ec2.internal"
    cluster.objects[("Pod", "web", "late-0")]["metadata"]["resourceVersion"] = "2"
    again = provision(batch, cluster, cloud, state, clock, CATALOG)
    assert not again.launched
    assert [d.subject for d in actions(again, "skipped")] == ["pod/web/late-0"]
    # next-0 still has the room planned for it on the node (late-0 counted once, as bound).
    assert [d.subject for d in actions(again, "waiting")] == ["pod/web/next-0"]


def test_the_node_classes_are_resolved_while_the_pods_their_terms_select_are_read() -> None:
    pending = pod("spread-0", topologySpreadConstraints=[ZONE_SPREAD])
    pending["metadata"]["labels"] = {"app": "spread"}
    cluster, cloud, state, clock = world(node("n-a", "us-east-1a"), pending)
    resolving = threading.Event()
    seen_during_read: list[bool] = []
    resolve_node_class, bound_pods = cloud.resolve_node_class, cluster.bound_pods

    def resolve(node_class: Any, version: str) -> Any:
        resolving.set()
        return resolve_node_class(node_class, version)

    def read(namespace: str | None, selector: Any) -> Any:
        # Resolved one after the other, the classes would wait for this read: it would wait out its 5 s in vain.
        seen_during_read.append(resolving.wait(5))
        return bound_pods(namespace, selector)

    cloud.resolve_node_class = resolve  # type: ignore[method-assign]
    cluster.bound_pods = read  # type: ignore[method-assign]
    result = provision(batch_of(cluster), cluster, cloud, state, clock, CATALOG)
    assert seen_during_read == [True] and [c.pods for c in result.launched] == [("web/spread-0",)]
