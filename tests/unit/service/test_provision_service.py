"""provision() against in-memory ports: ordering, idempotency, ICE, limits, registration, cleanup."""

from __future__ import annotations

from typing import Any

from service_fakes import ZONES, FakeCloud, FixedClock, SmallCatalog, node_for, nodeclass, nodepool, pod

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.catalog.catalog import CapacityReservation, Catalog
from nodewright.localworld.userdata import parse_user_data
from nodewright.ports import LaunchTemplateRecord
from nodewright.service.batch import Batch, PodHint
from nodewright.service.provision import cleanup, provision
from nodewright.service.provision.serial import PLANNER_LOCK
from nodewright.tags import KARPENTER_TAGS

CATALOG = SmallCatalog()


def world(*docs: dict[str, Any]) -> tuple[InMemoryCluster, FakeCloud, InMemoryState, FixedClock]:
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(), nodeclass(), *docs], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    return cluster, cloud, InMemoryState(), clock


def hint(doc: dict[str, Any]) -> PodHint:
    metadata = doc["metadata"]
    return PodHint(metadata["namespace"], metadata["name"], metadata["uid"], metadata["resourceVersion"])


def batch_of(cluster: InMemoryCluster, batch_id: str = "b1") -> Batch:
    return Batch(batch_id, "demo", [hint(d) for d in cluster.of_kind("Pod") if not d["spec"].get("nodeName")])


def run(cluster: InMemoryCluster, cloud: FakeCloud, state: InMemoryState, clock: FixedClock, batch_id: str = "b1"):  # type: ignore[no-untyped-def]
    return provision(batch_of(cluster, batch_id), cluster, cloud, state, clock, CATALOG)


def actions(result: Any, action: str) -> list[Any]:
    return [d for d in result.decisions if d.action == action]


def test_every_nodeclaim_exists_before_the_planner_lock_goes_and_each_launches_after_its_own_creation() -> None:
    cluster, cloud, state, clock = world(*(pod(f"web-{i}") for i in range(4)))
    release = state.release_lock

    def logged_release(name: str, owner: str) -> None:
        cluster.log.append(f"release {name}")
        release(name, owner)

    state.release_lock = logged_release  # type: ignore[method-assign]
    result = run(cluster, cloud, state, clock)
    names = [c.name for c in result.launched]
    assert len(names) >= 2
    claim_log = [entry for entry in cluster.log if "nodeclaim/" in entry or entry.startswith("release")]
    # Every claim exists before the planner lock is released (a concurrent plan then counts them); each claim
    # launches as soon as its own creation returned (as Karpenter's NodeClaim controller does), each
    # create -> fleet -> update -> conditions.
    released = claim_log.index(f"release {PLANNER_LOCK}")
    assert {f"create nodeclaim/{name}" for name in names} <= set(claim_log[:released])
    claim_log.remove(f"release {PLANNER_LOCK}")
    for name in names:
        steps = [entry for entry in claim_log if entry.endswith(f"nodeclaim/{name}")]
        assert steps == [
            f"create nodeclaim/{name}",
            f"fleet nodeclaim/{name}",
            f"update nodeclaim/{name}",
            f"conditions nodeclaim/{name}",
        ]
    assert len(claim_log) == 4 * len(names)
    assert sorted(p for c in result.launched for p in c.pods) == [f"web/web-{i}" for i in range(4)]


def test_a_claim_this_run_created_launches_without_looking_for_instances_to_adopt() -> None:
    cluster, cloud, state, clock = world(*(pod(f"web-{i}", cpu="3") for i in range(6)))
    result = run(cluster, cloud, state, clock)
    assert len(result.launched) >= 2
    assert not [e for e in cloud.cluster_log if e.startswith("instances of")]


def test_claims_found_existing_look_for_instances_to_adopt_once_for_the_whole_batch() -> None:
    cluster, cloud, state, clock = world(*(pod(f"web-{i}", cpu="3") for i in range(6)))
    first = run(cluster, cloud, state, clock)
    assert len(first.launched) >= 2
    # An earlier run of the same delivery created the claims and launched them, but recorded nothing, and this
    # run's read does not show them (they are left out of it): it plans them again under the same names.
    for launched in first.launched:
        cluster.objects[("NodeClaim", "", launched.name)]["status"] = {}
    state.deliveries.clear()
    cluster.nodeclaims = lambda: []  # type: ignore[method-assign]
    again = run(cluster, cloud, state, clock)
    assert [e for e in cloud.cluster_log if e.startswith("instances of")] == [
        f"instances of {len(first.launched)} nodeclaims"
    ]
    assert sorted(c.instance_id for c in again.launched) == sorted(c.instance_id for c in first.launched)
    assert all(c.reused for c in again.launched)


def test_a_launched_nodeclaim_records_the_instance_and_its_pods_are_nominated() -> None:
    cluster, cloud, state, clock = world(pod("web-0"), pod("web-1"))
    result = run(cluster, cloud, state, clock)
    [launched] = result.launched
    claim = cluster.nodeclaim(launched.name)
    assert claim is not None
    assert claim["status"]["providerID"] == f"aws:///{launched.zone}/{launched.instance_id}"
    conditions = {c["type"]: (c["status"], c["reason"]) for c in claim["status"]["conditions"]}
    assert conditions == {
        "Launched": ("True", "Launched"),
        "Registered": ("Unknown", "NodeNotFound"),
        "Initialized": ("Unknown", "NodeNotFound"),
        "Ready": ("Unknown", "ReconcilingDependents"),
    }
    labels = claim["metadata"]["labels"]
    assert labels["node.kubernetes.io/instance-type"] == launched.instance_type
    assert labels["karpenter.sh/capacity-type"] == launched.capacity_type == "spot"
    assert labels["topology.kubernetes.io/zone"] == launched.zone
    assert float(claim["metadata"]["annotations"]["nodewright.io/price-per-hour"]) == round(launched.price, 6)
    # The simulation's cheapest option is what launched (nothing refused it).
    assert sorted(launched.pods) == ["web/web-0", "web/web-1"]
    assert {e.pod for e in cluster.events if e.reason == "Nominated"} == set(launched.pods)
    assert all(launched.name in e.message for e in cluster.events)
    # The fleet request: instant, tagged, the user data carries the pool's labels and the unregistered taint.
    [fleet] = cloud.fleets
    tags = {t["Key"]: t["Value"] for t in fleet["TagSpecifications"][0]["Tags"]}
    assert tags["kubernetes.io/cluster/demo"] == "owned"
    assert tags["nodewright.io/cluster"] == "demo"
    assert tags["nodewright.io/nodeclaim"] == launched.name
    assert tags["nodewright.io/nodepool"] == "general"
    assert not set(tags) & set(KARPENTER_TAGS)
    # One template per AMI variant in the fleet (arm64 and x86 types both fit), each config naming its own.
    configs = {c["LaunchTemplateSpecification"]["LaunchTemplateName"] for c in fleet["LaunchTemplateConfigs"]}
    assert configs == set(cloud.templates)
    assert {t.image_id for t in cloud.templates.values()} == {"ami-arm", "ami-x86"}
    for template in cloud.templates.values():
        boot = parse_user_data(template.user_data)
        assert boot.labels["team"] == "web" and boot.labels["karpenter.sh/nodepool"] == "general"
        assert ("karpenter.sh/unregistered", "NoExecute") in {(t.key, t.effect) for t in boot.taints}


def test_the_launch_records_the_nodes_capacity_and_allocatable_from_the_catalog_and_node_class() -> None:
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c6g.large"]},
    ]
    node_class = nodeclass()
    node_class["spec"]["kubelet"] = {"maxPods": 20}
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(requirements=requirements), node_class, pod("web-0")], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    [launched] = run(cluster, cloud, InMemoryState(), clock).launched
    status = (cluster.nodeclaim(launched.name) or {})["status"]
    # c6g.large: 2 vCPU, 4,096 MiB minus 64 MiB (arm64) minus the 7.5 % VM overhead; maxPods from the node
    # class, kube-reserved memory from the ENI limit (3 x (10 - 1) + 2 = 29 pods: 574 MiB), eviction 100 MiB,
    # kube-reserved cpu 60m + 10m, ephemeral storage 20Gi minus 1Gi reserved and the 10 % nodefs threshold.
    assert status["capacity"] == {"cpu": "2", "ephemeral-storage": "20Gi", "memory": "3729Mi", "pods": "20"}
    assert status["allocatable"] == {"cpu": "1930m", "ephemeral-storage": "17Gi", "memory": "3055Mi", "pods": "20"}
    assert status["imageID"] == "ami-arm"
    # The template it launched from is named, so garbage collection keeps it while the claim exists.
    template = (cluster.nodeclaim(launched.name) or {})["metadata"]["annotations"]["nodewright.io/launch-template"]
    assert cloud.templates[template].image_id == "ami-arm"


def test_the_same_batch_twice_launches_once() -> None:
    cluster, cloud, state, clock = world(*(pod(f"web-{i}") for i in range(6)))
    first = run(cluster, cloud, state, clock)
    second = run(cluster, cloud, state, clock)
    assert len(cloud.fleets) == len(first.launched) >= 1
    assert not second.launched
    assert {d.subject for d in actions(second, "waiting")} == {f"pod/web/web-{i}" for i in range(6)}
    # A different batch id with the same pods still does not launch: they wait for the claim in flight.
    third = run(cluster, cloud, state, clock, batch_id="b2")
    assert not third.launched and len(cloud.fleets) == len(first.launched)


def test_a_rerun_finds_the_claim_and_does_not_launch_it_again_even_without_nomination() -> None:
    cluster, cloud, state, clock = world(*(pod(f"web-{i}") for i in range(2)))
    first = run(cluster, cloud, state, clock)
    [claim] = first.launched
    # Lose the nomination annotation (as if the claim were written by an older version): the name still matches.
    cluster.objects[("NodeClaim", "", claim.name)]["metadata"]["annotations"].pop("nodewright.io/pods")
    cluster.objects.pop(("NodeClaim", "", claim.name))
    cluster.create_nodeclaim({"apiVersion": "nodewright.io/v1", "kind": "NodeClaim", "metadata": {"name": "x"}})
    again = run(cluster, cloud, state, clock)
    # The claim object was gone, so it is re-created and launched at once: CreateFleet's ClientToken (the same
    # claim, the same attempt) gets EC2's first answer, the same instance, and no second one exists.
    assert [c.instance_id for c in again.launched] == [claim.instance_id]
    assert len(cloud.instances) == 1
    assert cloud.fleets[0]["ClientToken"] == cloud.fleets[1]["ClientToken"]


def test_insufficient_capacity_marks_the_offering_and_the_claim_launches_on_the_next() -> None:
    cluster, cloud, state, clock = world(pod("web-0", cpu="1500m"))
    dry = provision(
        batch_of(cluster),
        InMemoryCluster(cluster.of_kind("NodePool") + cluster.of_kind("EC2NodeClass") + cluster.of_kind("Pod")),
        FakeCloud(),
        InMemoryState(),
        clock,
        CATALOG,
    )
    cheapest = dry.launched[0]
    cloud.refuse.add((cheapest.instance_type, cheapest.zone, "spot"))
    result = run(cluster, cloud, state, clock)
    [launched] = result.launched
    assert (launched.instance_type, launched.zone) != (cheapest.instance_type, cheapest.zone)
    assert len(cloud.fleets) == 1  # the next override in the same fleet launched
    assert state.unavailable_offerings(clock.now()) == {(cheapest.instance_type, cheapest.zone, "spot")}
    assert state.marks[(cheapest.instance_type, cheapest.zone, "spot")][0] == clock.now() + 180
    assert actions(result, "unavailable")[0].subject == f"offering/{cheapest.instance_type}/{cheapest.zone}/spot"
    # Three minutes later the mark has expired.
    assert state.unavailable_offerings(clock.now() + 181) == frozenset()


def test_marked_offerings_are_not_requested_and_spot_falls_back_to_on_demand() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    every_spot = {
        (it.name, z, "spot")
        for it in Catalog(CATALOG.instance_types())
        for z in ("us-east-1a", "us-east-1b", "us-east-1c")
    }
    cloud.refuse |= every_spot
    result = run(cluster, cloud, state, clock)
    [launched] = result.launched
    assert launched.capacity_type == "on-demand"
    assert [f["TargetCapacitySpecification"]["DefaultTargetCapacityType"] for f in cloud.fleets] == [
        "spot",
        "on-demand",
    ]
    assert all(len(c["Overrides"]) <= 60 for f in cloud.fleets for c in f["LaunchTemplateConfigs"])


def test_nodepool_limits_cap_the_launch_and_the_rest_stay_pending_with_a_reason() -> None:
    cluster, cloud, state, clock = world(*(pod(f"web-{i}", cpu="1") for i in range(40)))
    cluster.put(nodepool(limits={"cpu": "8"}))
    result = run(cluster, cloud, state, clock)
    catalog = Catalog(CATALOG.instance_types())
    launched_cpu = sum(catalog[c.instance_type].vcpu for c in result.launched)
    assert 0 < launched_cpu <= 8
    refused = actions(result, "unschedulable")
    assert refused and all("limit" in d.reason for d in refused)
    assert len(refused) + sum(len(c.pods) for c in result.launched) == 40
    assert {e.reason for e in cluster.events if e.type == "Warning"} == {"FailedScheduling"}
    # The next batch holds the same pods: the claims in flight count against the limit, nothing more launches.
    again = run(cluster, cloud, state, clock, batch_id="b2")
    assert not again.launched
    assert len(actions(again, "unschedulable")) == len(refused)


def test_registration_marks_the_claim_and_removes_the_unregistered_taint() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    [launched] = run(cluster, cloud, state, clock).launched
    cluster.put(node_for(cloud.instances[launched.instance_id], "ip-10-0-0-1.ec2.internal"))
    result = run(cluster, cloud, state, clock, batch_id="b2")
    assert [d.subject for d in actions(result, "registered")] == [f"nodeclaim/{launched.name}"]
    claim = cluster.nodeclaim(launched.name)
    assert claim is not None and claim["status"]["nodeName"] == "ip-10-0-0-1.ec2.internal"
    # The node is Ready, has no startup taint and reports what the claim asked for: initialized at once.
    assert {c["type"]: c["status"] for c in claim["status"]["conditions"]} == dict.fromkeys(
        ("Launched", "Registered", "Initialized", "Ready"), "True"
    )
    node = cluster.objects[("Node", "", "ip-10-0-0-1.ec2.internal")]
    assert node["spec"]["taints"] == []
    assert node["metadata"]["labels"]["karpenter.sh/registered"] == "true"
    assert node["metadata"]["labels"]["karpenter.sh/initialized"] == "true"
    # The pending pod is left to the kube-scheduler for a grace period; nothing new is launched.
    assert not result.launched
    assert [d.reason for d in actions(result, "waiting")] == [
        f"nominated to nodeclaim/{launched.name}, whose node ip-10-0-0-1.ec2.internal has registered"
    ]
    # Still pending two minutes later: the kube-scheduler had the node all that time and did not bind the pod,
    # so the node is no longer counted as room for it (existing nodes are the kube-scheduler's to fill), and the
    # pod is planned on new capacity.
    clock.t += 121
    later = run(cluster, cloud, state, clock, batch_id="b3")
    assert [c.pods for c in later.launched] == [("web/web-0",)]
    assert not actions(later, "existing")


def test_a_registration_payload_without_pods_registers_the_node_and_plans_nothing() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    [launched] = run(cluster, cloud, state, clock).launched
    cluster.put(node_for(cloud.instances[launched.instance_id], "ip-10-0-0-1.ec2.internal"))
    fleets = len(cloud.fleets)

    class NoPlanning(FakeCloud):
        """Fails the test if the registration path resolves node classes (the planning half of provision)."""

        def cluster_info(self) -> Any:
            raise AssertionError("a registration must not plan")

    quiet = NoPlanning(cluster_log=cloud.cluster_log, instances=cloud.instances)
    batch = Batch("reg-1", "demo", [], nodes=["ip-10-0-0-1.ec2.internal", "ip-10-9-9-9.ec2.internal"])
    result = provision(batch, cluster, quiet, state, clock, CATALOG)
    assert [d.subject for d in actions(result, "registered")] == [f"nodeclaim/{launched.name}"]
    assert cluster.objects[("Node", "", "ip-10-0-0-1.ec2.internal")]["spec"]["taints"] == []
    claim = cluster.nodeclaim(launched.name)
    assert claim is not None and {c["type"]: c["status"] for c in claim["status"]["conditions"]}["Ready"] == "True"
    # A node the payload names that matches no launched claim is reported, not silently dropped.
    assert [(d.subject, d.action) for d in actions(result, "skipped")] == [("node/ip-10-9-9-9.ec2.internal", "skipped")]
    assert not result.launched and len(cloud.fleets) == fleets and not quiet.fleets
    # The pending pod is not planned again by a registration (it waits for the kube-scheduler).
    assert not actions(result, "waiting") and not actions(result, "nominated")


def test_registrations_collect_old_launch_templates_no_claim_names_and_pod_batches_do_not() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    [launched] = run(cluster, cloud, state, clock).launched
    used = (cluster.nodeclaim(launched.name) or {})["metadata"]["annotations"]["nodewright.io/launch-template"]
    records = [
        LaunchTemplateRecord(used, clock.t - 7200, "default"),
        LaunchTemplateRecord("nodewright-old", clock.t - 7200, "default"),
        LaunchTemplateRecord("nodewright-new", clock.t - 60, "default"),
    ]

    class Store:
        def __init__(self) -> None:
            self.deleted: list[str] = []

        def launch_templates(self) -> list[LaunchTemplateRecord]:
            return [r for r in records if r.name not in self.deleted]

        def delete_launch_template(self, name: str) -> None:
            self.deleted.append(name)

    store = Store()
    provision(batch_of(cluster, "b2"), cluster, cloud, state, clock, CATALOG, templates=store)
    assert store.deleted == []  # not on the launch path
    result = provision(Batch("reg", "demo", [], nodes=[]), cluster, cloud, state, clock, CATALOG, templates=store)
    assert store.deleted == ["nodewright-old"]
    assert [d.subject for d in actions(result, "deleted")] == ["launchtemplate/nodewright-old"]


def test_an_event_the_api_server_refuses_does_not_undo_the_launches() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))

    class Refusing(InMemoryCluster):
        def record_events(self, events: Any) -> None:
            raise RuntimeError("HTTP 403: namespace web is being terminated")

    refusing = Refusing(list(cluster.objects.values()), clock=clock.now)
    result = provision(batch_of(refusing), refusing, cloud, state, clock, CATALOG)
    [launched] = result.launched
    assert refusing.nodeclaim(launched.name) is not None and len(cloud.fleets) == 1
    [skipped] = [d for d in actions(result, "skipped") if d.subject == "events"]
    assert "being terminated" in skipped.reason


def test_pods_bound_elsewhere_free_their_room_on_the_claim_in_flight() -> None:
    cluster, cloud, state, clock = world(pod("web-0", cpu="1500m"))
    [first] = run(cluster, cloud, state, clock).launched
    # The pod ran somewhere else after all (another node had room); a new pod of the same size arrives.
    cluster.objects[("Pod", "web", "web-0")]["spec"]["nodeName"] = "elsewhere"
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "elsewhere"},
            "spec": {"taints": [{"key": "full", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "10"}},
        }
    )
    cluster.put(pod("late-0", cpu="1500m"))
    result = run(cluster, cloud, state, clock, batch_id="b2")
    # The claim in flight has room again, so nothing new is launched for the late pod.
    assert not result.launched
    assert [d.reason for d in actions(result, "existing")] == [f"fits on {first.name}, which exists or is in flight"]


def test_a_claim_without_a_node_after_15_minutes_is_terminated_and_deleted() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    [launched] = run(cluster, cloud, state, clock).launched
    clock.t += 14 * 60
    assert not cleanup(cluster, cloud, clock).decisions
    clock.t += 61
    result = cleanup(cluster, cloud, clock)
    assert [d.action for d in result.decisions] == ["terminated"]
    assert cloud.terminated == [launched.instance_id]
    assert cluster.nodeclaim(launched.name) is None


def test_throttling_deletes_the_unlaunched_claims_so_a_later_batch_retries() -> None:
    # 40 pods of 12 CPUs: one claim each (the largest type in the small catalog has 16).
    cluster, cloud, state, clock = world(*(pod(f"big-{i}", cpu="12") for i in range(40)))
    cloud.throttle = True
    result = run(cluster, cloud, state, clock)
    assert not result.launched
    # Backs off: only the launches already under way when the first throttle came back asked EC2.
    assert 1 <= len(cloud.fleets) <= 16 < 40
    assert len(actions(result, "throttled")) == 40
    assert cluster.of_kind("NodeClaim") == []


def test_a_node_class_with_a_foreign_role_is_reported_and_its_pools_skipped() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    cluster.put(nodeclass(role="someone-else"))
    result = run(cluster, cloud, state, clock)
    assert not result.launched
    [invalid] = actions(result, "invalid")
    assert invalid.subject == "ec2nodeclass/default" and "someone-else" in invalid.reason
    assert actions(result, "skipped")[0].subject == "nodepool/general"
    assert actions(result, "unschedulable")


def test_pods_bound_since_the_batch_was_sent_are_skipped() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    batch = batch_of(cluster)
    cluster.objects[("Pod", "web", "web-0")]["spec"]["nodeName"] = "elsewhere"
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "elsewhere"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "10"}},
        }
    )
    result = provision(batch, cluster, cloud, state, clock, CATALOG)
    assert [d.action for d in result.decisions] == ["skipped"]
    assert not cloud.fleets


def test_arm64_pods_launch_on_arm64_types_with_the_arm64_image() -> None:
    cluster, cloud, state, clock = world(
        *(pod(f"arm-{i}", nodeSelector={"kubernetes.io/arch": "arm64"}) for i in range(3))
    )
    result = run(cluster, cloud, state, clock)
    catalog = Catalog(CATALOG.instance_types())
    assert result.launched and all(catalog[c.instance_type].architecture == "arm64" for c in result.launched)
    assert {t.image_id for t in cloud.templates.values()} == {"ami-arm"}


def test_a_refused_request_deletes_the_claim_with_the_reason() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    cloud.reject = "InvalidParameterValue: bad template"
    result = run(cluster, cloud, state, clock)
    assert not result.launched
    [failed] = actions(result, "launch-failed")
    assert "InvalidParameterValue: bad template" in failed.reason
    assert cluster.of_kind("NodeClaim") == []
    assert [d.subject for d in actions(result, "unschedulable")] == ["pod/web/web-0"]


def test_a_launch_that_finds_a_resolved_subnet_gone_drops_the_class_resolution_and_other_refusals_do_not() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    cloud.reject = "InvalidParameterValue: bad template"
    run(cluster, cloud, state, clock)
    assert cloud.forgotten == []
    cloud.reject = "An error occurred (InvalidSubnetID.NotFound) when calling the CreateFleet operation: gone"
    run(cluster, cloud, state, clock, batch_id="b2")
    assert cloud.forgotten == ["default"]


def test_a_capacity_error_keeps_the_class_resolution() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    cloud.refuse = {(t.name, z, c) for t in CATALOG.instance_types() for z in ZONES for c in ("spot", "on-demand")}
    result = run(cluster, cloud, state, clock)
    assert not result.launched and actions(result, "unavailable") and cloud.forgotten == []


def test_a_claim_abandoned_before_its_launch_is_removed_after_two_minutes_and_its_pods_replanned() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    [launched] = run(cluster, cloud, state, clock).launched
    # As if the invocation had died after creating the claim: no providerID, no instance.
    claim = cluster.objects[("NodeClaim", "", launched.name)]
    claim.pop("status")
    cloud.instances.clear()
    clock.t += 60
    assert actions(run(cluster, cloud, state, clock, batch_id="b2"), "waiting")
    clock.t += 61
    result = run(cluster, cloud, state, clock, batch_id="b3")
    [removed] = actions(result, "terminated")
    assert removed.subject == f"nodeclaim/{launched.name}" and "never recorded as launched" in removed.reason
    assert len(result.launched) == 1 and result.launched[0].name != launched.name


def test_a_node_nodewright_did_not_launch_keeps_its_unregistered_taint_in_the_simulation() -> None:
    foreign = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "someone-elses", "labels": {"karpenter.sh/nodepool": "general"}},
        "spec": {"taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
    }
    cluster, cloud, state, clock = world(pod("web-0"), foreign)
    result = run(cluster, cloud, state, clock)
    # Not placed on the tainted node: a claim is launched, and the node's taint is left alone.
    assert len(result.launched) == 1 and not actions(result, "existing")
    assert cluster.objects[("Node", "", "someone-elses")]["spec"]["taints"] != []


def test_when_every_offering_is_marked_unavailable_the_reason_says_so() -> None:
    cluster, cloud, state, clock = world(pod("web-0"))
    marks = {
        (it.name, o.zone, o.capacity_type): "InsufficientInstanceCapacity"
        for it in CATALOG.instance_types()
        for o in it.offerings
    }
    state.mark_unavailable(marks, clock.now(), 180)
    result = run(cluster, cloud, state, clock)
    [refused] = actions(result, "unschedulable")
    assert "marked unavailable after capacity errors" in refused.reason
    assert not result.launched


def test_a_nodepool_launches_only_into_the_capacity_reservations_its_own_ec2nodeclass_selects() -> None:
    # Karpenter offers a NodePool the reservations of its own EC2NodeClass only: a NodePool on another class,
    # even one allowing reserved capacity, must not launch into them.
    class ReservingCloud(FakeCloud):
        def capacity_reservations(self, resolved: Any) -> list[CapacityReservation]:
            if resolved.node_class.name != "reserved":
                return []
            return [CapacityReservation("cr-0123456789abcdef0", "m5.large", "us-east-1a", 5)]

    reserved = nodeclass("reserved")
    reserved["spec"]["capacityReservationSelectorTerms"] = [{"id": "cr-0123456789abcdef0"}]
    requirements = [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["reserved", "on-demand"]},
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]},
    ]
    other = nodepool("other", requirements=requirements)
    mine = nodepool("mine", requirements=requirements)
    mine["spec"]["template"]["spec"]["nodeClassRef"]["name"] = "reserved"
    docs = [other, mine, nodeclass(), reserved]
    docs += [pod("a", nodeSelector={"karpenter.sh/nodepool": "other"})]
    docs += [pod("b", nodeSelector={"karpenter.sh/nodepool": "mine"})]
    clock = FixedClock()
    cluster = InMemoryCluster(docs, clock=clock.now)
    cloud = ReservingCloud(cluster_log=cluster.log)
    result = run(cluster, cloud, InMemoryState(), clock)
    by_pool = {c.nodepool: c for c in result.launched}
    assert by_pool["mine"].capacity_type == "reserved" and by_pool["other"].capacity_type == "on-demand"
    assert {spec.reservation_id for spec in cloud.templates.values()} == {"", "cr-0123456789abcdef0"}


def test_a_claim_registered_moments_ago_whose_node_the_cached_read_misses_is_still_capacity_on_its_way() -> None:
    # The NodeClaims are read consistently, the nodes from the watch cache: for a moment after another holder of
    # the planner lock registered a claim, its node may be missing from this read. Its pod must wait for it, not be
    # planned again (a second node for the same pod).
    cluster, cloud, state, clock = world(pod("web-0"))
    [launched] = run(cluster, cloud, state, clock).launched
    node = node_for(cloud.instances[launched.instance_id], "ip-10-0-0-1.ec2.internal")
    cluster.put(node)
    run(cluster, cloud, state, clock, batch_id="b2")
    claim = cluster.nodeclaim(launched.name)
    assert claim is not None and claim["status"]["nodeName"] == "ip-10-0-0-1.ec2.internal"
    del cluster.objects[("Node", "", "ip-10-0-0-1.ec2.internal")]  # the cache is behind the claim
    clock.t += 5
    behind = run(cluster, cloud, state, clock, batch_id="b3")
    assert not behind.launched
    assert [d.reason for d in actions(behind, "waiting")] == [
        f"nominated to nodeclaim/{launched.name}, whose node is not in this read yet"
    ]
    # Past the grace period a node still missing is gone for this pod's purposes: it is planned again.
    clock.t += 120
    later = run(cluster, cloud, state, clock, batch_id="b4")
    assert [c.pods for c in later.launched] == [("web/web-0",)]
