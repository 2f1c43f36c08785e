"""New NodeClaims grow into larger instance types when pods must join them (as Karpenter's in-flight
NodeClaims narrow their instance types instead of refusing pods)."""

from __future__ import annotations

from builders import affinity_term, pod, pool, run, small_catalog, unschedulable

from nodewright.catalog.allocatable import allocatable
from nodewright.model.objects import HOSTNAME_LABEL


def test_claim_grows_into_larger_type_rather_than_break_node_limit() -> None:
    # Two different pods of 1.5 CPU: one node may be launched, and an m5.xlarge holds both.
    capped = pool("capped", limits={"nodes": 1})
    results = run([pod("a", cpu="1500m", memory="1Gi"), pod("b", cpu="1500m", memory="512Mi")], pools=[capped])
    assert not results.unschedulable, results.unschedulable
    (claim,) = results.nodeclaims
    assert set(claim.pods) == {"default/a", "default/b"}
    # The claim's options are the types that hold both pods; the smallest type no longer qualifies.
    types = {t.name: t for t in small_catalog()}
    for name in claim.instance_types:
        assert allocatable(types[name])["cpu"] >= 3000, name


def test_grown_claim_stays_within_cpu_limit() -> None:
    # cpu limit 4: the claim may grow to a 4-vCPU type but never beyond, so the third pod is refused.
    capped = pool("capped", limits={"cpu": "4", "nodes": 1})
    results = run([pod(n, cpu="1500m", memory="512Mi") for n in "abc"], pools=[capped])
    (claim,) = results.nodeclaims
    types = {t.name: t for t in small_catalog()}
    assert all(types[name].vcpu <= 4 for name in claim.instance_types), claim.instance_types
    assert len(claim.pods) == 2
    assert len(unschedulable(results)) == 1


def test_pods_with_hostname_affinity_join_the_claim_of_their_target_by_growing_it() -> None:
    # The target pod opens a small claim; ten followers require its node (hostname affinity). Instead of
    # refusing them, the claim becomes a type that holds all eleven.
    target = pod("target", cpu="1", memory="1Gi", labels={"app": "db"})
    followers = [
        pod(
            f"f-{i}",
            cpu="1",
            memory="1Gi",
            labels={"app": "web"},
            pod_affinity=(affinity_term(HOSTNAME_LABEL, app="db"),),
        )
        for i in range(5)
    ]
    results = run([target, *followers])
    assert not results.unschedulable, results.unschedulable
    (claim,) = results.nodeclaims
    assert len(claim.pods) == 6
    types = {t.name: t for t in small_catalog()}
    chosen = types[claim.cheapest.instance_type]
    assert allocatable(chosen)["cpu"] >= 6000
