"""The existing nodes registered by one solve, kept for the next solves of a warm container.

A provisioner's batch solves against every node of the cluster, and at 10,000 nodes registering each as a bin
(`existing.Registration`: its room, labels, DaemonSets to come) is a fifth of a warm batch, redone on nodes that
did not change since the last batch. `KeptRegistration` keeps a registration made from scratch and hands each
solve a fork of it (`Registration.fork`, as the planner's simulations of one snapshot do): the fork keeps the
entries of the nodes given as the very same objects with an equal NodeClaim and registers the others.

Why the kept state cannot go stale: a Node is the same object only while its (uid, resourceVersion) is (parses
are kept by version, `model.loader`), and a node handed over with pods, or with its room changed (`full_nodes`,
reservations), is a new object; a node not given is taken away; a NodeClaim is compared by value; NodePools,
EC2NodeClasses and the limits' counts are worked out for every fork. What the kept bins were derived from besides
(the catalog's instance types, the DaemonSets, the scheduling cache) must be the same objects or equal, else the
registration is made from scratch again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TypeVar

from nodewright.model.objects import Node
from nodewright.scheduling.existing import Registration, SolveInputs

# A fork that would register more than this share of the nodes again (and at least REBASE_MIN of them) makes the
# next solves' base from scratch instead: each later fork would pay for those nodes again.
REBASE_SHARE = 8
REBASE_MIN = 64
# Forks share the base's numbering of requirement sets (`Pools.req_id`), which each solve's new sets extend: a
# container that lives for days starts again from scratch past this many, so the numbering does not grow unbounded.
REBASE_REQUIREMENT_SETS = 50_000

_T = TypeVar("_T")


def _same(kept: Sequence[_T], given: Sequence[_T]) -> bool:
    """Whether two sequences hold the same values (the same objects, for a catalog kept by the container)."""
    return len(kept) == len(given) and all(a is b or a == b for a, b in zip(kept, given, strict=True))


class KeptRegistration:
    """A registration of the last solve's nodes, forked by the next solve (see the module doc)."""

    def __init__(self) -> None:
        self.base: Registration | None = None
        self.nodes: dict[str, Node] = {}  # the base's nodes by name (to count how many a fork registers again)
        self.inputs: SolveInputs | None = None  # what the base was registered from

    def base_for(self, inputs: SolveInputs) -> tuple[SolveInputs, Registration]:
        """(the inputs a solve should use, the registration it forks). The inputs are `inputs` with the kept
        registration's catalog and DaemonSets when they are equal to those given (the fork requires the same
        objects); the registration is the kept one, or one made from scratch from `inputs` when the catalog,
        DaemonSets or scheduling cache differ, or when too many nodes changed (`REBASE_SHARE`), which the next
        solves then fork."""
        kept = self.inputs
        if (
            self.base is not None
            and kept is not None
            and kept.templates is inputs.templates
            and _same(kept.instance_types, inputs.instance_types)
            and _same(kept.daemonsets, inputs.daemonsets)
            and len(self.base.pools.req_keys) <= REBASE_REQUIREMENT_SETS
        ):
            aligned = replace(inputs, instance_types=kept.instance_types, daemonsets=kept.daemonsets)
            changed = sum(1 for n in inputs.nodes if self.nodes.get(n.name) is not n)
            if changed <= max(REBASE_MIN, len(inputs.nodes) // REBASE_SHARE):
                return aligned, self.base
        self.base = Registration(inputs)
        self.nodes = {n.name: n for n in inputs.nodes}
        self.inputs = inputs
        return inputs, self.base
