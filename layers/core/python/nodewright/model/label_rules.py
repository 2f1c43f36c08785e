"""Which node label keys a NodePool may use, and which values Karpenter knows for them.

These are Karpenter v1.14's rules (kubernetes-sigs/karpenter `pkg/apis/v1/labels.go` with the AWS provider's
additions in `pkg/apis/v1/labels.go`, and the CEL rules of both CRDs):

- Restricted: the `karpenter.sh` and `karpenter.k8s.aws` label domains (and their subdomains), except the
  well-known labels in them; `karpenter.sh/nodepool` (the provisioner sets it); `kubernetes.io/hostname`
  (every node has its own). Since v1.9 the `kubernetes.io` and `k8s.io` domains are open: a NodePool may
  require or set `node-role.kubernetes.io/worker` or `example.k8s.io/team` like any other label.
- Well-known: the keys Karpenter knows the values of from instance types and offerings. Any value is
  accepted for them except for `karpenter.sh/capacity-type`, whose values are fixed: a requirement `In` on it
  fails only when none of its values is valid (Karpenter fails open on a list that mixes valid and invalid
  values, and the valid ones are what offerings can match).
- Beta labels (`beta.kubernetes.io/arch`, `failure-domain.beta.kubernetes.io/zone`, ...) are checked as
  their GA names, as Karpenter normalizes them.

Labels in the kubernetes.io / k8s.io namespaces that the kubelet may not register with are accepted, as in
Karpenter: they are on the NodeClaim, and registration copies the NodeClaim's labels onto its Node
(`service.provision.lifecycle`, Karpenter's `registration.go` syncNode) before the node can take pods.

One kind of key Karpenter accepts is refused by name here rather than accepted and never honoured: the
well-known AWS labels nodewright cannot offer yet (dedicated tenancy, placement groups, interruptible
capacity reservations).
"""

from __future__ import annotations

from collections.abc import Sequence

from nodewright.model.nodepool import CAPACITY_TYPE_LABEL, NODEPOOL_LABEL
from nodewright.model.requirements import NORMALIZED_LABELS
from nodewright.model.schema import suggest

HOSTNAME_LABEL = "kubernetes.io/hostname"
TENANCY_LABEL = "karpenter.k8s.aws/instance-tenancy"

RESTRICTED_LABEL_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")

# Karpenter core's well-known labels outside the restricted domains (they are allowed anyway).
WELL_KNOWN_KUBERNETES_LABELS = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
        "topology.k8s.aws/zone-id",
    }
)
WELL_KNOWN_KARPENTER_LABELS = frozenset({CAPACITY_TYPE_LABEL})
WELL_KNOWN_AWS_LABELS = frozenset(
    "karpenter.k8s.aws/" + name
    for name in (
        "instance-category",
        "instance-family",
        "instance-generation",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-hypervisor",
        "instance-encryption-in-transit-supported",
        "instance-local-nvme",
        "instance-capability-flex",
        "instance-tenancy",
        "capacity-reservation-id",
        "capacity-reservation-type",
        "capacity-reservation-interruptible",
        "placement-group-id",
        "placement-group-partition",
    )
)
WELL_KNOWN_LABELS = WELL_KNOWN_KUBERNETES_LABELS | WELL_KNOWN_KARPENTER_LABELS | WELL_KNOWN_AWS_LABELS


# The well-known labels with a fixed set of values (Karpenter's WellKnownValuesForRequirements; its other entry,
# instance-tenancy, is among the labels nodewright refuses).
KNOWN_VALUES: dict[str, tuple[str, ...]] = {CAPACITY_TYPE_LABEL: ("on-demand", "spot", "reserved")}

# Well-known in Karpenter, but no node nodewright launches can carry them yet.
UNSUPPORTED_LABELS = {
    TENANCY_LABEL: "dedicated tenancy is not supported yet by nodewright, which launches default-tenancy "
    "instances only; remove it",
    "karpenter.k8s.aws/placement-group-id": "placement groups are not supported yet by nodewright; remove it",
    "karpenter.k8s.aws/placement-group-partition": "placement groups are not supported yet by nodewright; remove it",
    "karpenter.k8s.aws/capacity-reservation-interruptible": "interruptible capacity reservations are not "
    "supported yet by nodewright; select reservations with capacityReservationSelectorTerms instead",
}


def label_domain(key: str) -> str:
    """The prefix of `key` before "/" ("" for an unprefixed key)."""
    return key.split("/", 1)[0] if "/" in key else ""


def restricted_label_problem(key: str) -> str | None:
    """Why a NodePool may not use the label `key`, or None. The same rules hold for requirement keys and
    template labels."""
    key = NORMALIZED_LABELS.get(key, key)
    if key == NODEPOOL_LABEL:
        return f'the label "{NODEPOOL_LABEL}" is restricted: nodewright sets it to the NodePool\'s name'
    if key in UNSUPPORTED_LABELS:
        return UNSUPPORTED_LABELS[key]
    if key in WELL_KNOWN_LABELS:
        return None
    if key == HOSTNAME_LABEL:
        return f'the label "{HOSTNAME_LABEL}" is restricted: each node gets its own'
    domain = label_domain(key)
    for restricted in RESTRICTED_LABEL_DOMAINS:
        # Karpenter's CEL rule tests the suffix of the domain, so "notkarpenter.sh" is restricted as well.
        if not domain.endswith(restricted):
            continue
        allowed = sorted(label for label in WELL_KNOWN_LABELS if label_domain(label) == restricted)
        near = suggest(key, allowed)
        hint = f"did you mean {near}?" if near else f"use one of its well-known labels ({', '.join(allowed)})"
        return f'label domain "{restricted}" is restricted; "{key}" is not one of its well-known labels; {hint}'
    return None


def known_values_problem(key: str, values: Sequence[str], min_values: int | None) -> str | None:
    """Why an `In` requirement on a label with known values cannot match anything, or None.

    Karpenter fails only when no value is valid, or when fewer valid values remain than minValues asks for;
    invalid values next to valid ones are ignored (they match no offering).
    """
    known = KNOWN_VALUES.get(NORMALIZED_LABELS.get(key, key))
    if known is None:
        return None
    valid = [v for v in values if v in known]
    choices = ", ".join(known)
    if not valid:
        near = next((n for v in values if (n := suggest(v, known))), None)
        hint = f"; did you mean {near}?" if near else ""
        return f"no value of {key} is valid (got {', '.join(values)}); use one of {choices}{hint}"
    if min_values is not None and len(valid) < min_values:
        return f"minValues {min_values} needs that many valid values of {key} ({choices}); only {len(valid)} listed"
    return None
