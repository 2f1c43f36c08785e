"""Growth reads the claims that may take a batch by shape (`Claims._growable_bins`): without required hostname pod
affinity, the claims that have not grown come from `Claims.taking` (one answer per NodePool, shape and type) and
the grown ones from `Claims.grown`. The list must be exactly the run's new claims that `_grow_pass` does not skip for
their taints or requirements (with every grown claim, which it checks itself), in placement order, so that growth
places every pod where the walk over every claim did."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from builders import pod, pool, run, toleration

from nodewright.model.objects import HOSTNAME_LABEL
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint, Toleration
from nodewright.scheduling import solver as solver_module
from nodewright.scheduling.bins import Bin
from nodewright.scheduling.claims import Claims
from nodewright.scheduling.classes import PodClass, TopologyTerm
from nodewright.scheduling.pools import ReqKey
from nodewright.scheduling.preferences import untolerated

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.bench.random_generator import generate  # noqa: E402


def _binds_to_hosts(terms: tuple[TopologyTerm, ...]) -> bool:
    return any(t.kind == "affinity" and t.topology_key == HOSTNAME_LABEL for t in terms)


@contextmanager
def checked_growable() -> Iterator[list[int]]:
    """Check every list `_growable_bins` makes without hostname affinity against the run's new claims filtered one by
    one as `_grow_pass` filters them (taints, `bin_compat`), grown claims kept; yields [lists checked, claims left
    out, grown claims listed]."""
    growable = Claims._growable_bins
    counts = [0, 0, 0]

    def checked(
        self: Claims,
        cls: PodClass,
        terms: tuple[TopologyTerm, ...],
        requirements: Requirements,
        rkey: ReqKey,
        tolerations: tuple[Toleration, ...],
    ) -> list[Bin]:
        found = growable(self, cls, terms, requirements, rkey, tolerations)
        if _binds_to_hosts(terms):
            return found
        every = [
            b
            for b in self.new_bins
            if b.grown
            or (
                not (b.taints and untolerated(tolerations, b.taints) is not None)
                and self.bin_compat(b, requirements, rkey) is not None
            )
        ]
        assert found == every
        counts[0] += 1
        counts[1] += len(self.new_bins) - len(found)
        counts[2] += sum(b.grown for b in found)
        return found

    Claims._growable_bins = checked  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        Claims._growable_bins = growable  # type: ignore[method-assign]


@contextmanager
def every_claim_grows() -> Iterator[None]:
    """Patch growth to visit every new claim without hostname affinity, as it did before it read them by shape."""
    growable = Claims._growable_bins

    def every(
        self: Claims,
        cls: PodClass,
        terms: tuple[TopologyTerm, ...],
        requirements: Requirements,
        rkey: ReqKey,
        tolerations: tuple[Toleration, ...],
    ) -> list[Bin]:
        if _binds_to_hosts(terms):
            return growable(self, cls, terms, requirements, rkey, tolerations)
        return list(self.new_bins)

    Claims._growable_bins = every  # type: ignore[method-assign]
    try:
        yield
    finally:
        Claims._growable_bins = growable  # type: ignore[method-assign]


@pytest.mark.parametrize("seed", [4100, 7303, 9515, 9525])
def test_growth_lists_every_claim_it_would_not_skip(seed: int) -> None:
    cluster = generate(seed, 1000)
    with checked_growable() as counts:
        solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert counts[0] > 0, "the cluster must ask for growth"
    assert counts[1] > 0, "the cluster must have claims growth leaves out by shape"
    assert counts[2] > 0, "the cluster must have grown claims growth lists again"


@pytest.mark.parametrize("seed", [7309, 9525])
def test_growth_by_shape_gives_the_plan_of_the_walk_over_every_claim(seed: int) -> None:
    cluster = generate(seed, 1000)
    by_shape = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    with every_claim_grows():
        walked = solver_module.solve(cluster.pending, **cluster.solve_kwargs())
    assert by_shape.to_json() == walked.to_json()


def test_a_claim_of_a_tainted_nodepool_grows_for_pods_that_tolerate_its_taint_only() -> None:
    # One node may be launched, tainted: the claim grows for the second pod that tolerates the taint (growth lists
    # the claims of the shapes whose taints the batch tolerates), never for the pod that does not.
    taint = Taint("dedicated", "NoSchedule", "team")
    capped = pool("capped", taints=[taint], limits={"nodes": 1})
    tolerates = (toleration("dedicated", "team", "NoSchedule"),)
    pending = [
        pod("a", cpu="1500m", memory="1Gi", tolerations=tolerates),
        pod("b", cpu="1500m", memory="512Mi", tolerations=tolerates),
        pod("c", cpu="1500m", memory="768Mi"),
    ]
    results = run(pending, pools=[capped])
    (claim,) = results.nodeclaims
    assert set(claim.pods) == {"default/a", "default/b"}
    assert [u.pod for u in results.unschedulable] == ["default/c"]
