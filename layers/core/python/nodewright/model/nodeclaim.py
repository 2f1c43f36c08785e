"""NodeClaim: capacity nodewright has asked for (in flight) or launched.

The scheduler treats an in-flight NodeClaim like a node that does not exist yet: pods may be placed on
it up to the allocatable of the smallest instance type it may still become.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model.objects import Pod
from nodewright.model.requirements import Requirement
from nodewright.model.taints import Taint

# Labels the node of every NodeClaim gets as it comes up (Karpenter's lifecycle controller sets them, and so does
# nodewright's): registered once the node has joined the cluster, initialized once it is ready and its startup
# taints are gone. LIFECYCLE_STAGES: the ones it carries at each stage, from joining to initialized.
REGISTERED_LABEL = "karpenter.sh/registered"
INITIALIZED_LABEL = "karpenter.sh/initialized"
LIFECYCLE_STAGES: tuple[Mapping[str, str], ...] = (
    {},
    {REGISTERED_LABEL: "true"},
    {REGISTERED_LABEL: "true", INITIALIZED_LABEL: "true"},
)
LIFECYCLE_LABELS = frozenset(LIFECYCLE_STAGES[-1])


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """A NodeClaim: capacity launched or being launched for a NodePool, with the pods nominated to it."""

    name: str
    nodepool: str
    # Requirements the claim was created with (instance types, zones, capacity types, labels).
    requirements: tuple[Requirement, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    # Resources the claim was sized for (the pods nominated to it plus DaemonSet overhead).
    requests: Mapping[str, int] = field(default_factory=dict)
    # Filled once launched.
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    instance_id: str = ""
    provider_id: str = ""
    node_name: str = ""
    price_per_hour: float = 0.0
    created_at: float = 0.0  # seconds since the epoch
    registered: bool = False
    initialized: bool = False
    nominated_pods: tuple[Pod, ...] = ()
    node_class: str = ""
    # status.conditions: type -> (status, reason), so a writer can tell whether a condition needs writing.
    conditions: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # When the Registered condition became True (its lastTransitionTime, epoch seconds); 0.0 when it is not True or
    # does not say. Parsed once per version, not read from the document by every batch.
    registered_at: float = 0.0
