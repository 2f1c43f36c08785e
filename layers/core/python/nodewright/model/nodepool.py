"""NodePool: the validated form of a Karpenter v1 / nodewright.io/v1 NodePool.

Parsing and validation (with errors that name the field) live in `nodewright.model.parse`; this module
only holds the values the rest of nodewright reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model.requirements import Requirement, Requirements
from nodewright.model.taints import Taint

NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"


@dataclass(frozen=True, slots=True)
class NodeClassRef:
    """A NodePool's reference to its EC2NodeClass (group, kind, name)."""

    group: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Budget:
    """At most `nodes` (a count such as "3" or a percentage such as "10%") disrupted at once.

    With `schedule` (cron) and `duration` (seconds) the budget is active only in that window; `reasons`
    restricts it to some disruption reasons (Underutilized, Empty, Drifted); empty means all.
    """

    nodes: str
    schedule: str | None = None
    duration_seconds: int | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Disruption:
    """A NodePool's disruption settings: consolidation policy, consolidateAfter and budgets."""

    consolidation_policy: str = "WhenEmptyOrUnderutilized"  # or WhenEmpty
    consolidate_after_seconds: int | None = 0  # None means Never
    budgets: tuple[Budget, ...] = (Budget(nodes="10%"),)


@dataclass(frozen=True, slots=True)
class NodePool:
    """A NodePool (nodewright.io/v1 or karpenter.sh/v1): what nodes may be launched, and their limits."""

    name: str
    node_class_ref: NodeClassRef
    requirements: tuple[Requirement, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    # None means Never; Karpenter's default is 720h.
    expire_after_seconds: int | None = 720 * 3600
    termination_grace_period_seconds: int | None = None
    disruption: Disruption = field(default_factory=Disruption)
    # Canonical integers per resource; the key "nodes" caps the number of nodes.
    limits: Mapping[str, int] = field(default_factory=dict)
    weight: int = 0
    # spec.replicas: a static NodePool keeps this many nodes whatever the pods (None: sized from pending pods).
    replicas: int | None = None
    api_version: str = "nodewright.io/v1"
    source: str = ""  # file (or API object) it came from, for messages
    uid: str = ""  # metadata.uid of an API object: the owner its NodeClaims name

    @property
    def static(self) -> bool:
        """Whether the pool is static (`spec.replicas` set): its size is the user's, not the pods'."""
        return self.replicas is not None

    @property
    def node_limit(self) -> int | None:
        """`limits.nodes`: the most NodeClaims the pool may have at once, None when unbounded."""
        return self.limits.get("nodes")

    def node_requirements(self) -> Requirements:
        """Requirements plus template labels plus the karpenter.sh/nodepool label: what every node has."""
        labels = {**self.labels, NODEPOOL_LABEL: self.name}
        return Requirements.of(self.requirements).intersect(Requirements.from_labels(labels))
