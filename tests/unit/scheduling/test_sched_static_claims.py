"""Static NodePools in scheduling: their NodeClaims come from the template for no pods, and pods never open one."""

from __future__ import annotations

import dataclasses

from builders import INSTANCE_TYPE, by_name, node, nodeclass, pod, pool, req, run, small_catalog

from nodewright.catalog.labels import ZONE
from nodewright.scheduling.static_claims import static_claims


def test_static_claims_are_the_template_cheapest_first_without_accelerators() -> None:
    static = dataclasses.replace(pool("static"), replicas=3)
    claims, why = static_claims(static, 3, [nodeclass()], small_catalog())
    assert why == "" and len(claims) == 3
    first = claims[0]
    assert first.nodepool == "static" and first.pods == ()
    assert first.cheapest.instance_type in ("c5.large", "m6g.large")  # the cheapest the pool allows
    assert "g4dn.xlarge" not in first.instance_types and "m5.metal" not in first.instance_types
    assert first.labels["karpenter.sh/nodepool"] == "static"


def test_static_claims_keep_the_pool_requirements() -> None:
    static = dataclasses.replace(pool("static", req(INSTANCE_TYPE, "In", "m5.xlarge"), req(ZONE, "In", "us-east-1b")))
    claims, why = static_claims(dataclasses.replace(static, replicas=1), 1, [nodeclass()], small_catalog())
    assert why == ""
    assert claims[0].instance_types == ("m5.xlarge",) and claims[0].zones == ("us-east-1b",)


def test_a_static_pool_whose_requirements_allow_nothing_says_why() -> None:
    static = dataclasses.replace(pool("static", req(INSTANCE_TYPE, "In", "no.such")), replicas=2)
    claims, why = static_claims(static, 2, [nodeclass()], small_catalog())
    assert claims == [] and why


def test_pending_pods_never_open_a_nodeclaim_in_a_static_pool() -> None:
    static = dataclasses.replace(pool("static", weight=0), replicas=1)
    results = run([pod("web")], pools=[static])
    assert results.nodeclaims == () and len(results.unschedulable) == 1
    dynamic = run([pod("web")], pools=[static, pool("dynamic")])
    assert [c.nodepool for c in dynamic.nodeclaims] == ["dynamic"]


def test_pods_still_schedule_onto_a_static_pools_nodes() -> None:
    static = dataclasses.replace(pool("static"), replicas=1)
    existing = node("static-node", by_name(small_catalog(), "m5.xlarge"), pool_name="static")
    results = run([pod("web")], pools=[static], nodes=[existing])
    assert results.existing == {"static-node": ("default/web",)}
