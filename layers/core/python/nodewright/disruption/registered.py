"""The registered cluster as every scheduling simulation of one snapshot starts from it.

A planner tick simulates many times (multi-node consolidation's binary search alone up to 13 times, single-node
consolidation up to 50, drift up to 10) against the same snapshot: each simulation takes a few candidates away and
hands the rest to the solver. What does not depend on the candidates (which nodes are being disrupted already,
which are still starting, which nodes may take pods at all and as what room, the NodeClaims in flight, the NodePools
bounded by their EC2NodeClasses) is worked out here once per snapshot (`ClusterState.registered`), and each
simulation forks it: it removes its candidates' nodes from these lists instead of walking the whole fleet again.
A fork yields exactly what a walk of the fleet would (`disruption.simulate`; a unit test compares both).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nodewright.disruption.fleet import FleetNode
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import Node
from nodewright.scheduling.existing import Registration

if TYPE_CHECKING:
    from nodewright.disruption.state import ClusterState


@dataclass(frozen=True, slots=True)
class Usable:
    """A node a simulation may place pods on unless its candidates take it away: the node as it is, the node as
    its free room alone (`ClusterState.room`), that room's cpu, memory and pods, and whether a pod bound to it has
    required anti-affinity (then it keeps its pods, which may forbid a domain)."""

    node: Node
    room: Node
    free: tuple[int, int, int]
    anti_affinity: bool


@dataclass(frozen=True, slots=True)
class Registered:
    """What every simulation of a snapshot shares.

    `usable`: the Ready nodes and the nodes of NodeClaims still starting, in the inputs' order. `disrupting`: the
    nodes being disrupted already (a lock, the disrupted taint, a deletion). `nodes_of`: NodeClaim -> the nodes of
    the fleet members of that name. `position`: member -> its place in the fleet (by identity), so members found
    by node come back in the fleet's order. `members_on`: node -> its fleet members. `starting`: node -> how a move
    onto it is refused while it is not initialized (Karpenter's UninitializedNodeError wording). `unregistered`:
    the NodeClaims not registered yet and not being disrupted, with their member, in the inputs' order.
    `nodepools`: the NodePools bounded as the provisioner launches for them (`ClusterState.bounded`). `solver`: the
    solver's registration of the usable nodes, by whether they go as they are or as their room (see
    `simulate._registration`), made by the first simulation that needs it and forked by each.
    """

    usable: tuple[Usable, ...]
    disrupting: frozenset[str]
    nodes_of: Mapping[str, tuple[str, ...]]
    position: Mapping[int, int]
    members_on: Mapping[str, tuple[FleetNode, ...]]
    starting: Mapping[str, str]
    unregistered: tuple[tuple[NodeClaim, FleetNode], ...]
    nodepools: tuple[NodePool, ...]
    solver: dict[bool, Registration] = field(default_factory=dict, compare=False)

    def gone(self, leaving: Collection[str]) -> set[str]:
        """The nodes a simulation takes away: those of the NodeClaims `leaving` and those being disrupted."""
        out = set(self.disrupting)
        for name in leaving:
            out.update(self.nodes_of.get(name, ()))
        return out

    def members(self, nodes: Collection[str]) -> list[FleetNode]:
        """The fleet members on these nodes, in the fleet's order."""
        found = [m for node in nodes for m in self.members_on.get(node, ())]
        return sorted(found, key=lambda m: self.position[id(m)])


def registered(state: ClusterState) -> Registered:
    """Work out the snapshot's `Registered` (call `ClusterState.registered`, which keeps it)."""
    members_on: dict[str, list[FleetNode]] = {}
    nodes_of: dict[str, list[str]] = {}
    for m in state.fleet:
        if m.node:
            members_on.setdefault(m.node, []).append(m)
            nodes_of.setdefault(m.nodeclaim, []).append(m.node)
    starting = {m.node: f"nodeclaim/{m.nodeclaim}, node/{m.node}" for m in state.fleet if m.node and not m.initialized}
    return Registered(
        usable=tuple(_usable(state, n) for n in state.inputs.nodes if n.ready or n.name in starting),
        disrupting=frozenset(m.node for m in state.fleet if m.node and state.disrupting(m)),
        nodes_of={name: tuple(nodes) for name, nodes in nodes_of.items()},
        position={id(m): i for i, m in enumerate(state.fleet)},
        members_on={node: tuple(found) for node, found in members_on.items()},
        starting=starting,
        unregistered=_unregistered(state),
        nodepools=tuple(state.bounded(p) for p in state.inputs.nodepools),
    )


def _usable(state: ClusterState, node: Node) -> Usable:
    room = state.room(node)
    free = (room.allocatable.get("cpu", 0), room.allocatable.get("memory", 0), room.allocatable.get("pods", 0))
    return Usable(node, room, free, any(p.pod_anti_affinity for p in node.pods))


def _unregistered(state: ClusterState) -> tuple[tuple[NodeClaim, FleetNode], ...]:
    members = {m.nodeclaim: m for m in state.fleet}
    out: list[tuple[NodeClaim, FleetNode]] = []
    for claim in state.inputs.nodeclaims:
        member = members.get(claim.name)
        if member is None or member.registered or state.disrupting(member):
            continue
        out.append((claim, member))
    return tuple(out)
