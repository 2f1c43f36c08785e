"""Scheduling behaviours that a Karpenter user relies on and that the solver got wrong when these tests
were written. Each test is a minimal reproducer: its comment says what Kubernetes / Karpenter would do.
"""

from __future__ import annotations

from builders import (
    by_name,
    daemonset,
    itype,
    node,
    pod,
    pods,
    pool,
    pvc,
    req,
    run,
    small_catalog,
    spread,
    storage_class,
    unschedulable,
    zonal_pv,
)

from nodewright.catalog.labels import ARCH, INSTANCE_FAMILY, ZONE
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Node


def keys(prefix: str, n: int) -> list[str]:
    return [f"default/{prefix}-{i}" for i in range(n)]


def full_node_in_b_and_pool_in_a() -> tuple[Node, NodePool]:
    # A full node in zone b makes b a domain with zero matching pods; the NodePool only launches in zone a.
    filler = pod("filler", cpu="1900m", memory="1Gi")
    full_b = node("full-b", by_name(small_catalog(), "c5.large"), zone="us-east-1b", bound=[filler])
    return full_b, pool("zone-a", req(ZONE, "In", "us-east-1a"))


# ----- crashes ------------------------------------------------------------------------------------------


def test_catalog_without_exotic_types_does_not_crash() -> None:
    # A pool whose types are all generic (or a catalog of one type) must not raise.
    results = run([pod("p")], types=[by_name(small_catalog(), "m5.large")])
    assert [c.instance_types for c in results.nodeclaims] == [("m5.large",)]


def test_gpu_pod_does_not_crash() -> None:
    # Only exotic types fit a GPU pod: the generic phase of the choice is empty and must not raise.
    results = run([pod("gpu", extra={"nvidia.com/gpu": 1})], types=[by_name(small_catalog(), "g4dn.xlarge")])
    assert [c.instance_types for c in results.nodeclaims] == [("g4dn.xlarge",)]


def test_zone_spread_pod_no_pool_can_serve_is_unschedulable_not_a_crash() -> None:
    # No zone is a domain for this pod (its arch is not offered): it is unschedulable, solve() must not raise.
    arm = pod("arm", node_selector={ARCH: "arm64"}, labels={"app": "a"}, topology_spread=(spread(ZONE, 1, app="a"),))
    results = run([arm], pools=[pool("amd", req(ARCH, "In", "amd64"))])
    assert "default/arm" in unschedulable(results)


# ----- topology spread ----------------------------------------------------------------------------------------


def test_do_not_schedule_blocks_when_skew_would_break() -> None:
    full_b, zone_a = full_node_in_b_and_pool_in_a()
    hard = pods("hard", 3, cpu="100m", labels={"app": "hard"}, topology_spread=(spread(ZONE, 1, app="hard"),))
    results = run(hard, pools=[zone_a], nodes=[full_b])
    placed = [k for k in keys("hard", 3) if k not in unschedulable(results)]
    assert len(placed) == 1
    reason = next(iter(unschedulable(results).values()))
    assert "topology spread" in reason and ZONE in reason


def test_zone_spread_with_node_limit_keeps_skew() -> None:
    # One node may be launched (zone a); b and c are still domains with 0 pods, so only 1 pod may go to a.
    web = pods(
        "web", 4, cpu="100m", memory="128Mi", labels={"app": "web"}, topology_spread=(spread(ZONE, 1, app="web"),)
    )
    results = run(web, pools=[pool("capped", limits={"nodes": 1})])
    placed = [k for k in keys("web", 4) if k not in unschedulable(results)]
    assert len(placed) == 1, [(c.zones, c.pods) for c in results.nodeclaims]


# ----- everything else ----------------------------------------------------------------------------------------


def test_min_values_unsatisfiable_makes_pod_unschedulable() -> None:
    # Only the m5 family has types with 6 free vCPUs, so minValues 2 on families cannot be met.
    families = pool("mv", req(INSTANCE_FAMILY, "In", "c5", "m5", "r5", min_values=2))
    results = run([pod("p", cpu="6", memory="1Gi")], pools=[families])
    assert not results.nodeclaims, [c.instance_types for c in results.nodeclaims]
    assert "default/p" in unschedulable(results)


def test_reason_when_no_nodepool_exists() -> None:
    results = run([pod("p")], pools=[])
    assert unschedulable(results)["default/p"]


def test_ebs_attachment_limit_counts_volumes_already_attached_on_existing_node() -> None:
    limited = itype("m5.2xlarge", 8, 32, 0.384, ebs_limit=2)
    bound = [pod(f"old-{i}", cpu="100m", memory="128Mi", pvc_names=(f"old-{i}",)) for i in range(2)]
    existing = node("full-of-volumes", limited, bound=bound)
    results = run(
        [pod("new", cpu="100m", memory="128Mi", pvc_names=("new",))],
        nodes=[existing],
        types=[limited],
        pvcs=[pvc("old-0", "gp3", "pv-0"), pvc("old-1", "gp3", "pv-1"), pvc("new", "gp3")],
        pvs=[zonal_pv("pv-0", "us-east-1a"), zonal_pv("pv-1", "us-east-1a")],
        storage_classes=[storage_class("gp3")],
    )
    # The node already attaches its limit of 2 EBS volumes: the new volume needs another node.
    assert "full-of-volumes" not in results.existing
    assert len(results.nodeclaims) == 1


def test_daemonset_selecting_label_the_pool_lacks_does_not_count() -> None:
    gpu_only = daemonset("gpu-agent", cpu="1", memory="256Mi", node_selector={"accelerator": "nvidia"})
    (claim,) = run([pod("p", cpu="1", memory="512Mi")], daemonsets=[gpu_only]).nodeclaims
    assert claim.instance_types[0] == "c5.large"
