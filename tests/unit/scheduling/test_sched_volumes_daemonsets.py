"""Volume topology, EBS attachment limits and DaemonSet overhead."""

from __future__ import annotations

import dataclasses

from builders import (
    affinity_term,
    by_name,
    daemonset,
    inflight,
    itype,
    node,
    node_terms,
    pod,
    pool,
    pvc,
    req,
    run,
    small_catalog,
    storage_class,
    toleration,
    unschedulable,
    zonal_pv,
)

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import ARCH, ZONE
from nodewright.catalog.types import InstanceType
from nodewright.model.objects import PersistentVolume, Pod, StorageClass
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint
from nodewright.scheduling.classes import EBS_VOLUMES, volume_options


def mounting(name: str, *claims: str) -> Pod:
    """A small pending pod that mounts these claims."""
    return pod(name, cpu="100m", memory="128Mi", pvc_names=claims)


def attaching(limit: int) -> InstanceType:
    """An instance type with room for many small pods that may attach `limit` EBS volumes."""
    return itype("m5.2xlarge", 8, 32, 0.384, ebs_limit=limit)


# ----- volume topology -----------------------------------------------------------------------------------


def test_bound_claim_pins_zone_of_its_volume() -> None:
    results = run(
        [pod("db-0", pvc_names=("data-db-0",))],
        pvcs=[pvc("data-db-0", "gp3", "pv-1")],
        pvs=[zonal_pv("pv-1", "us-east-1b")],
        storage_classes=[storage_class("gp3")],
    )
    (claim,) = results.nodeclaims
    assert claim.zones == ("us-east-1b",)
    assert claim.cheapest.zone == "us-east-1b"


def test_bound_claim_rules_out_existing_node_in_other_zone() -> None:
    roomy = node("roomy-a", by_name(small_catalog(), "m5.4xlarge"), zone="us-east-1a")
    results = run(
        [pod("db-0", pvc_names=("data",))],
        nodes=[roomy],
        pvcs=[pvc("data", "gp3", "pv-1")],
        pvs=[zonal_pv("pv-1", "us-east-1c")],
        storage_classes=[storage_class("gp3")],
    )
    assert not results.existing
    (claim,) = results.nodeclaims
    assert claim.zones == ("us-east-1c",)


def test_bound_claim_in_zone_no_pool_serves_is_unschedulable() -> None:
    only_a = pool("only-a", req(ZONE, "In", "us-east-1a"))
    results = run(
        [pod("db-0", pvc_names=("data",))],
        pools=[only_a],
        pvcs=[pvc("data", "gp3", "pv-1")],
        pvs=[zonal_pv("pv-1", "us-east-1c")],
        storage_classes=[storage_class("gp3")],
    )
    assert not results.nodeclaims
    reason = unschedulable(results)["default/db-0"]
    assert "NodePool only-a" in reason and ZONE in reason


def test_unbound_wait_for_first_consumer_follows_allowed_topologies() -> None:
    results = run(
        [pod("db-0", pvc_names=("data",))],
        pvcs=[pvc("data", "zonal-c")],
        storage_classes=[storage_class("zonal-c", "us-east-1c")],
    )
    (claim,) = results.nodeclaims
    assert claim.zones == ("us-east-1c",)


def test_unbound_wait_for_first_consumer_without_topologies_is_free() -> None:
    results = run([pod("db-0", pvc_names=("data",))], pvcs=[pvc("data", "gp3")], storage_classes=[storage_class("gp3")])
    (claim,) = results.nodeclaims
    assert len(claim.zones) == 3


def test_missing_claim_is_unschedulable_naming_it() -> None:
    results = run([pod("db-0", pvc_names=("ghost",))])
    assert "ghost" in unschedulable(results)["default/db-0"]


def test_ebs_attachment_limit_caps_volumes_per_new_node() -> None:
    types = [attaching(2)]
    names = [f"db-{i}" for i in range(5)]
    results = run(
        [mounting(n, f"data-{n}") for n in names],
        types=types,
        pvcs=[pvc(f"data-{n}", "gp3") for n in names],
        storage_classes=[storage_class("gp3")],
    )
    assert not results.unschedulable
    assert sorted(len(c.pods) for c in results.nodeclaims) == [1, 2, 2]


def test_pods_sharing_an_ebs_claim_attach_it_once_per_node() -> None:
    # Five pods mounting the same claim attach one volume: a node that may attach 2 takes them all, beside a pod
    # with a claim of its own; a sixth pod with yet another claim needs a second node.
    types = [attaching(2)]
    shared = [mounting(f"web-{i}", "cache") for i in range(5)]
    own = [mounting(f"db-{i}", f"data-{i}") for i in range(2)]
    results = run(
        [*shared, *own],
        types=types,
        pvcs=[pvc("cache", "gp3"), pvc("data-0", "gp3"), pvc("data-1", "gp3")],
        storage_classes=[storage_class("gp3")],
    )
    assert not results.unschedulable
    assert sorted(len(c.pods) for c in results.nodeclaims) == [1, 6]
    assert sorted(c.requests[EBS_VOLUMES] for c in results.nodeclaims) == [1, 2]


def test_an_existing_node_counts_a_claim_its_pods_share_once() -> None:
    # Its three bound pods share one claim: of the node's 2 attachments one is left, for one new claim.
    it = attaching(2)
    bound = [mounting(f"web-{i}", "cache") for i in range(3)]
    existing = node("old", it, bound=bound)
    claims = [pvc("cache", "gp3"), pvc("data-0", "gp3"), pvc("data-1", "gp3")]
    pending = [mounting(f"db-{i}", f"data-{i}") for i in range(2)]
    results = run(pending, types=[it], nodes=[existing], pvcs=claims, storage_classes=[storage_class("gp3")])
    assert len(results.existing["old"]) == 1 and len(results.nodeclaims) == 1


def test_a_running_pods_volume_being_deleted_is_still_attached() -> None:
    # The bound pod's claim is being deleted: no new pod may start with it, but its volume stays attached until
    # the pod goes, so of the node's 2 attachments one is left.
    it = attaching(2)
    existing = node("old", it, bound=[mounting("web", "cache")])
    leaving = dataclasses.replace(pvc("cache", "gp3"), unusable="is being deleted")
    claims = [leaving, pvc("data-0", "gp3"), pvc("data-1", "gp3")]
    pending = [mounting(f"db-{i}", f"data-{i}") for i in range(2)]
    results = run(pending, types=[it], nodes=[existing], pvcs=claims, storage_classes=[storage_class("gp3")])
    assert len(results.existing["old"]) == 1 and len(results.nodeclaims) == 1


def test_a_claim_in_flight_takes_pods_with_ebs_volumes_up_to_its_types_limit() -> None:
    # The claim in flight (an m5.2xlarge that may attach 2) carries a nominated pod with a volume: one more pod
    # with a claim of its own joins it, the next needs a node of its own.
    it = attaching(2)
    nominated = mounting("db-0", "data-0")
    claims = [pvc(f"data-{i}", "gp3") for i in range(3)]
    pending = [mounting(f"db-{i}", f"data-{i}") for i in (1, 2)]
    flying = inflight("c", it, nominated=[nominated])
    results = run(pending, types=[it], nodeclaims=[flying], pvcs=claims, storage_classes=[storage_class("gp3")])
    assert results.existing == {"c": ("default/db-1",)} and len(results.nodeclaims) == 1


def test_non_ebs_volume_does_not_count_against_ebs_limit() -> None:
    types = [attaching(1)]
    names = [f"nfs-{i}" for i in range(3)]
    results = run(
        [mounting(n, f"data-{n}") for n in names],
        types=types,
        pvcs=[pvc(f"data-{n}", "nfs") for n in names],
        storage_classes=[StorageClass("nfs", "nfs.csi.k8s.io", "Immediate")],
    )
    assert len(results.nodeclaims) == 1


def test_node_reporting_its_ebs_limit_counts_the_volumes_its_pods_attach() -> None:
    # A node whose allocatable reports attachable-volumes-aws-ebs (1 here) has that many in all: its bound pod's
    # EBS claim uses it up, so a pod with another EBS claim needs a new node.
    it = by_name(small_catalog(), "m5.large")
    existing = node("n1", it, bound=[mounting("db-0", "data-0")])
    existing = dataclasses.replace(existing, allocatable={**existing.allocatable, EBS_VOLUMES: 1})
    results = run(
        [mounting("db-1", "data-1")],
        nodes=[existing],
        pvcs=[pvc("data-0", "gp3"), pvc("data-1", "gp3")],
        storage_classes=[storage_class("gp3", "us-east-1a")],
    )
    assert not results.existing and [c.pods for c in results.nodeclaims] == [("default/db-1",)]


def test_in_tree_ebs_storage_class_counts_against_the_ebs_limit() -> None:
    # kubernetes.io/aws-ebs (EKS's gp2 class) is served by the EBS CSI driver since CSI migration.
    types = [attaching(1)]
    names = [f"db-{i}" for i in range(2)]
    results = run(
        [mounting(n, f"data-{n}") for n in names],
        types=types,
        pvcs=[pvc(f"data-{n}", "gp2") for n in names],
        storage_classes=[StorageClass("gp2", "kubernetes.io/aws-ebs", "WaitForFirstConsumer")],
    )
    assert sorted(len(c.pods) for c in results.nodeclaims) == [1, 1]


def test_volume_with_ored_zones_lets_anti_affinity_pick_the_second() -> None:
    # Both volumes allow zone a or b (two ORed terms): the second pod, avoiding the first's zone, takes b.
    terms = node_terms([req(ZONE, "In", "us-east-1a")], [req(ZONE, "In", "us-east-1b")])
    pvs = [PersistentVolume(f"pv-{i}", terms, "ebs.csi.aws.com") for i in range(2)]
    pending = [
        pod(
            f"db-{i}",
            cpu="100m",
            memory="128Mi",
            labels={"app": "db"},
            pvc_names=(f"data-{i}",),
            pod_anti_affinity=(affinity_term(ZONE, app="db"),),
        )
        for i in range(2)
    ]
    results = run(pending, pvcs=[pvc(f"data-{i}", "", f"pv-{i}") for i in range(2)], pvs=pvs)
    assert not results.unschedulable
    assert sorted(z for c in results.nodeclaims for z in c.zones) == ["us-east-1a", "us-east-1b"]


def test_volume_options_keep_only_combinations_that_can_be_met() -> None:
    a, b = Requirements.of([req(ZONE, "In", "us-east-1a")]), Requirements.of([req(ZONE, "In", "us-east-1b")])
    arm = Requirements.of([req(ARCH, "In", "arm64")])
    assert volume_options([(a, b), (b, arm)]) == (a.intersect(arm), b, b.intersect(arm))
    # Every combination disjoint: all kept, so the pod's reason names the conflict.
    assert volume_options([(a,), (b,)]) == (a.intersect(b),)


# ----- DaemonSet overhead ---------------------------------------------------------------------------------------


def test_daemonset_overhead_counts_on_new_nodes() -> None:
    # Without the DaemonSet a 1-CPU pod fits a c5.large (1930m allocatable); with 1 CPU of DaemonSet it does not.
    (claim,) = run([pod("p", cpu="1", memory="512Mi")]).nodeclaims
    assert claim.instance_types[0] == "c5.large"
    ds = daemonset("logs", cpu="1", memory="256Mi", tolerations=(toleration(operator="Exists"),))
    (claim,) = run([pod("p", cpu="1", memory="512Mi")], daemonsets=[ds]).nodeclaims
    assert not {"c5.large", "m5.large", "r5.large", "m6g.large"} & set(claim.instance_types)
    for name in claim.instance_types:
        alloc = allocatable_for(by_name(small_catalog(), name), None)
        assert claim.requests["cpu"] + 1000 <= alloc["cpu"]


def test_daemonset_overhead_fills_node_exactly() -> None:
    # m5.xlarge has 3920m: 3 pods of 1 CPU plus a 900m DaemonSet fit; 4 pods do not.
    types = [by_name(small_catalog(), "m5.xlarge")]
    ds = daemonset("agent", cpu="900m", memory="128Mi")
    results = run([pod(f"p-{i}", cpu="1", memory="256Mi") for i in range(4)], types=types, daemonsets=[ds])
    assert sorted(len(c.pods) for c in results.nodeclaims) == [1, 3]


def test_daemonset_not_tolerating_pool_taint_does_not_count() -> None:
    tainted = pool("tainted", taints=[Taint("dedicated", "NoSchedule", "x")])
    ds = daemonset("logs", cpu="1", memory="256Mi")
    p = pod("p", cpu="1", memory="512Mi", tolerations=(toleration("dedicated", "x"),))
    (claim,) = run([p], pools=[tainted], daemonsets=[ds]).nodeclaims
    assert claim.instance_types[0] == "c5.large"


def test_daemonset_tolerating_pool_taint_counts() -> None:
    tainted = pool("tainted", taints=[Taint("dedicated", "NoSchedule", "x")])
    ds = daemonset("logs", cpu="1", memory="256Mi", tolerations=(toleration("dedicated", "x"),))
    p = pod("p", cpu="1", memory="512Mi", tolerations=(toleration("dedicated", "x"),))
    (claim,) = run([p], pools=[tainted], daemonsets=[ds]).nodeclaims
    assert "c5.large" not in claim.instance_types


def test_daemonset_with_node_selector_counts_only_where_it_matches() -> None:
    arm_only = daemonset("arm-agent", cpu="1", memory="256Mi", node_selector={ARCH: "arm64"})
    (claim,) = run([pod("p", cpu="1", memory="512Mi")], daemonsets=[arm_only]).nodeclaims
    assert "c5.large" in claim.instance_types  # amd64: the DaemonSet does not run there
    assert "m6g.large" not in claim.instance_types  # arm64: it does, and leaves no room


def test_daemonset_selecting_label_the_pool_sets_counts() -> None:
    gpu_only = daemonset("gpu-agent", cpu="1", memory="256Mi", node_selector={"accelerator": "nvidia"})
    labelled = pool("gpu", labels={"accelerator": "nvidia"})
    (claim,) = run([pod("p", cpu="1", memory="512Mi")], pools=[labelled], daemonsets=[gpu_only]).nodeclaims
    assert "c5.large" not in claim.instance_types


def test_daemonset_with_non_matching_required_affinity_does_not_count() -> None:
    other_team = daemonset("team-b", cpu="1", memory="256Mi", required_node_terms=node_terms([req("team", "In", "b")]))
    team_a = pool("team-a", labels={"team": "a"})
    (claim,) = run([pod("p", cpu="1", memory="512Mi")], pools=[team_a], daemonsets=[other_team]).nodeclaims
    assert claim.instance_types[0] == "c5.large"


def test_daemonset_with_matching_required_affinity_counts() -> None:
    mine = daemonset("team-a", cpu="1", memory="256Mi", required_node_terms=node_terms([req("team", "In", "a")]))
    team_a = pool("team-a", labels={"team": "a"})
    (claim,) = run([pod("p", cpu="1", memory="512Mi")], pools=[team_a], daemonsets=[mine]).nodeclaims
    assert "c5.large" not in claim.instance_types


def test_daemonset_selecting_a_lifecycle_label_counts_without_becoming_a_claim_requirement() -> None:
    # Every node of a NodeClaim gets karpenter.sh/registered and karpenter.sh/initialized as it comes up, so a
    # DaemonSet that selects either runs on it: its pod must fit. The claim itself neither requires nor sets them.
    for key in ("karpenter.sh/registered", "karpenter.sh/initialized"):
        ds = daemonset("ready-only", cpu="1", memory="256Mi", required_node_terms=node_terms([req(key, "In", "true")]))
        (claim,) = run([pod("p", cpu="1", memory="512Mi")], daemonsets=[ds]).nodeclaims
        assert "c5.large" not in claim.instance_types, key
        assert key not in {r.key for r in claim.requirements} and key not in claim.labels, key


def test_daemonset_placed_before_a_lifecycle_label_comes_still_counts() -> None:
    # A DaemonSet for nodes not yet initialized (or registered but not initialized) gets its pod on the new node
    # before the label comes, and the pod stays: it counts, as it did before the lifecycle labels were read.
    early = [req("karpenter.sh/initialized", "NotIn", "true")]
    window = [req("karpenter.sh/registered", "In", "true"), req("karpenter.sh/initialized", "DoesNotExist")]
    for terms in (early, window):
        ds = daemonset("early", cpu="1", memory="256Mi", required_node_terms=node_terms(terms))
        (claim,) = run([pod("p", cpu="1", memory="512Mi")], daemonsets=[ds]).nodeclaims
        assert "c5.large" not in claim.instance_types, terms
    # One that asks for a value the labels never take does not.
    never = daemonset(
        "never", cpu="1", memory="256Mi", required_node_terms=node_terms([req("karpenter.sh/initialized", "In", "no")])
    )
    (claim,) = run([pod("p", cpu="1", memory="512Mi")], daemonsets=[never]).nodeclaims
    assert claim.instance_types[0] == "c5.large"


def test_in_flight_claim_holds_back_room_for_its_daemonset_pods() -> None:
    # An m5.xlarge in flight (3920m allocatable) with a 1-CPU DaemonSet to come has 2920m for pods: a 2.9-CPU
    # pod waits for it, a 3-CPU one does not (its node would be full once the DaemonSet pod binds).
    it = by_name(small_catalog(), "m5.xlarge")
    ds = daemonset("agent", cpu="1", memory="128Mi")
    fits = run([pod("p", cpu="2900m", memory="512Mi")], nodeclaims=[inflight("c", it)], daemonsets=[ds])
    assert fits.existing == {"c": ("default/p",)} and not fits.nodeclaims
    full = run([pod("p", cpu="3", memory="512Mi")], nodeclaims=[inflight("c", it)], daemonsets=[ds])
    assert not full.existing and len(full.nodeclaims) == 1
    # A DaemonSet whose pods do not tolerate the claim's taint holds nothing back there.
    tainted = dataclasses.replace(inflight("c", it), taints=(Taint("dedicated", "NoSchedule", "x"),))
    away = run(
        [pod("p", cpu="3", memory="512Mi", tolerations=(toleration("dedicated", "x", "NoSchedule"),))],
        nodeclaims=[tainted],
        daemonsets=[ds],
    )
    assert away.existing == {"c": ("default/p",)}


def test_pod_selecting_a_lifecycle_label_gets_a_new_claim_that_does_not_carry_it() -> None:
    # As in Karpenter v1.14, a new NodeClaim's node will be registered and initialized, so a pod that selects
    # either label being "true" fits it; the claim neither requires nor sets the label (its node gets it as it
    # comes up), and a pod asking for another value is refused.
    for key in ("karpenter.sh/registered", "karpenter.sh/initialized"):
        (claim,) = run([pod("p", cpu="1", memory="512Mi", node_selector={key: "true"})]).nodeclaims
        assert key not in {r.key for r in claim.requirements} and key not in claim.labels, key
        refused = run([pod("p", cpu="1", memory="512Mi", node_selector={key: "false"})])
        assert "default/p" in unschedulable(refused) and not refused.nodeclaims, key
