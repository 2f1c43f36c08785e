"""The NodePools of a `TemplateCache` share their per-instance-type work (`templates.SharedTypes`): every template
and every priced answer must be exactly what the NodePool prepared alone (its own fresh cache) gives."""

from __future__ import annotations

import dataclasses
import random

import pytest

from nodewright.catalog.labels import CAPACITY_TYPE, ZONE
from nodewright.catalog.types import Offering
from nodewright.model.requirements import Requirements, ValueSet
from nodewright.scheduling.candidates import Candidate, offering_key_of, req_key
from nodewright.scheduling.classes import required_node_options
from nodewright.scheduling.pools import Pools
from nodewright.scheduling.templates import PoolCompat, Template, TemplateCache
from tests.bench.random_clusters import RandomCluster, generate


def _pools(cluster: RandomCluster, cache: TemplateCache, pool_index: int | None = None) -> Pools:
    pools = cluster.nodepools if pool_index is None else (cluster.nodepools[pool_index],)
    return Pools(pools, cluster.nodeclasses, cluster.instance_types, cluster.daemonsets, [], [], [], cache)


def _candidate(c: Candidate) -> tuple[object, ...]:
    return (
        c.it.name,
        sorted(c.it.labels.items()),
        sorted(c.allocatable.items()),
        sorted(c.capacity.items()),
        c.offerings,
        c.exotic,
        sorted(c.ports),
        c.basics,
        c.floor,
    )


def _template(t: Template) -> tuple[object, ...]:
    return (
        req_key(t.requirements),
        t.taints,
        [_candidate(c) for c in t.candidates],
        t.unavailable_types,
        t.too_small_for_daemonsets,
    )


def _answer(answer: PoolCompat | str) -> object:
    if isinstance(answer, str):
        return answer
    return (
        req_key(answer.requirements),
        [(p, _candidate(c)) for p, c in answer.candidates],
        answer.zones,
        answer.basics,
        answer.prices,
        answer.frontier,
        dict(answer.largest),
        answer.domains_of(CAPACITY_TYPE),
    )


def _asks(cluster: RandomCluster, rng: random.Random) -> list[Requirements]:
    """The pods' required node requirements, each also pinned to a zone and a capacity type: the requirement sets
    a solve asks of the NodePools (a zonal spread pins each zone in turn)."""
    asks = {req_key(o): o for pod in cluster.pending for o in required_node_options(pod)}
    zones = sorted({o.zone for it in cluster.instance_types for o in it.offerings})
    pinned = []
    for option in asks.values():
        pinned.append(option.intersect(Requirements({ZONE: ValueSet(allowed=frozenset({rng.choice(zones)}))})))
        pinned.append(option.intersect(Requirements({CAPACITY_TYPE: ValueSet(allowed=frozenset({"spot"}))})))
    found = [*asks.values(), *pinned]
    rng.shuffle(found)
    return found


@pytest.mark.parametrize("seed", [6227, 6216, 6220, 8411])
def test_shared_preparation_gives_what_each_nodepool_prepared_alone_gives(seed: int) -> None:
    cluster = generate(seed, 300)
    rng = random.Random(seed)
    shared = _pools(cluster, TemplateCache())
    alone = {p.name: _pools(cluster, TemplateCache(), i) for i, p in enumerate(cluster.nodepools)}
    asks = _asks(cluster, rng)
    assert len(shared.contexts) == len(cluster.nodepools) > 0
    for ctx in shared.contexts:
        own = alone[ctx.pool.name].contexts[0]
        assert ctx.template is not None and own.template is not None
        assert _template(ctx.template) == _template(own.template)
    # The shared NodePools are asked in an interleaved order, so each reads what the others worked out first.
    for requirements in asks:
        for ctx in rng.sample(shared.contexts, len(shared.contexts)):
            own = alone[ctx.pool.name].contexts[0]
            assert ctx.template is not None and own.template is not None
            key = req_key(requirements)
            assert _answer(ctx.template.compat(requirements, key)) == _answer(own.template.compat(requirements, key))


def test_nodepools_alike_share_candidates() -> None:
    # The point of sharing: two NodePools with the same EC2NodeClass allocatable and DaemonSets get the same
    # candidate objects, whose caches (allowed offerings, pod copies) then serve both.
    cluster = generate(6227, 100)
    pools = _pools(cluster, TemplateCache())
    by_content: dict[tuple[object, ...], set[int]] = {}
    for ctx in pools.contexts:
        for c in ctx.candidates:
            by_content.setdefault((id(c.it), tuple(sorted(c.allocatable.items())), c.ports), set()).add(id(c))
    assert by_content and all(len(ids) == 1 for ids in by_content.values())
    assert sum(len(ctx.candidates) for ctx in pools.contexts) > len(by_content)


def test_an_offering_filter_allows_what_the_plain_key_allows() -> None:
    # A priced answer filters offerings through one OfferingFilter per content; other callers pass plain tuples.
    # Both must find the same cache entry and allow the same offerings, whichever fills the cache first.
    cluster = generate(6227, 50)
    pools = _pools(cluster, TemplateCache())
    shared = pools.templates._shared
    zones = sorted({o.zone for it in cluster.instance_types for o in it.offerings})
    keys = [
        offering_key_of(Requirements({ZONE: ValueSet(allowed=frozenset(zs)), CAPACITY_TYPE: ValueSet(allowed=ct)}))
        for zs in ([zones[0]], zones[:2], zones)
        for ct in (frozenset({"spot"}), frozenset({"on-demand", "reserved"}), None)
    ]
    candidates = [c for ctx in pools.contexts for c in ctx.candidates][:300]
    for key in keys:
        filtered = shared.filter(key)
        assert filtered == key and hash(filtered) == hash(key) and shared.filter(key) is filtered
        for c in candidates:
            fresh = dataclasses.replace(c, allowed={})
            assert fresh.offerings_with(key) == c.offerings_with(filtered) == c.offerings_with(key)
            expected = [o for o in c.offerings if all(vs.matches(v) for vs, v in zip(key, _values(o), strict=True))]
            assert fresh.offerings_with(key) == expected


def _values(o: Offering) -> tuple[str, str, str | None]:
    return (o.zone, o.capacity_type, o.reservation_id or None)
