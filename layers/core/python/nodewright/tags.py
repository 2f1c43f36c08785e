"""What marks a resource as nodewright's own: its tag keys on AWS resources and its finalizer on Kubernetes objects.

Karpenter decides what is its own by its tags: its instance garbage collection lists the instances carrying the
tag keys `karpenter.sh/nodepool` and `karpenter.k8s.aws/ec2nodeclass` with `eks:eks-cluster-name=<cluster>` and
terminates those no Karpenter NodeClaim records; its launch-template cache adopts (and later deletes) every
template tagged `eks:eks-cluster-name=<cluster>`; its reference IAM policy lets it terminate what carries
`kubernetes.io/cluster/<cluster>=owned` and `karpenter.sh/nodepool`. So nodewright puts none of Karpenter's tag
keys on what it creates, and recognises its own by keys of its own: `nodewright.io/cluster=<cluster>` and
`nodewright.io/nodepool`. Neither side can then list, adopt or terminate the other's instances, volumes,
network interfaces, fleets or launch templates, and neither can a managed node group's instances be taken for
nodewright's (they carry `kubernetes.io/cluster/<cluster>=owned` too, which nodewright still sets because the
AWS cloud provider finds a cluster's instances by it, but never reads as ownership).

Nodes keep Karpenter's well-known *labels* (`karpenter.sh/nodepool`, `karpenter.sh/capacity-type`, ...), so
workloads schedule unchanged; the labels are not what either side's garbage collection goes by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX = "nodewright.io/"
CLUSTER = PREFIX + "cluster"  # value: the EKS cluster name
NODEPOOL = PREFIX + "nodepool"  # value: the NodePool that asked for the resource
NODECLASS = PREFIX + "ec2nodeclass"  # value: the EC2NodeClass it was launched from
NODECLAIM = PREFIX + "nodeclaim"  # value: the NodeClaim an instance belongs to (instances, volumes, interfaces)
TEMPLATE_HASH = PREFIX + "hash"  # value: a launch template's content hash
NAME = "Name"
OWNED = "owned"
# The IAM path of the instance profiles nodewright creates for node roles (Karpenter's live under /karpenter/,
# and its instance-profile garbage collection deletes what it finds there).
INSTANCE_PROFILE_PATH = "/nodewright/"

# The termination finalizer on nodewright's NodeClaims and Nodes; Karpenter's is karpenter.sh/termination, and
# its node termination controller acts only on nodes carrying that one.
FINALIZER = PREFIX + "termination"
# On a node nodewright cordoned (it was schedulable before): only such a cordon is nodewright's to lift again, so a
# node an operator cordoned stays cordoned through a disruption that is rolled back.
CORDONED = PREFIX + "cordoned"

# Karpenter's ownership tags: never put on what nodewright creates, and refused in an EC2NodeClass's
# spec.tags, so no user tag can hand a resource to Karpenter. They are the keys of Karpenter v1.14.1's
# RestrictedTagPatterns (pkg/apis/v1/labels.go) besides kubernetes.io/cluster/*, which the parser refuses by
# prefix; karpenter.sh/managed-by is not among them (Karpenter dropped that tag in v1).
KARPENTER_TAGS = (
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
    "eks:eks-cluster-name",
)
# Tags nodewright sets itself; an EC2NodeClass may not set them either.
RESTRICTED = (CLUSTER, NODEPOOL, NODECLASS, NODECLAIM, TEMPLATE_HASH, *KARPENTER_TAGS)


def kubernetes_cluster(cluster: str) -> str:
    """`kubernetes.io/cluster/<cluster>`: the AWS cloud provider's cluster tag (value `owned`)."""
    return f"kubernetes.io/cluster/{cluster}"


def launch_tags(
    cluster: str, nodepool: str, nodeclass: str, nodeclaim: str = "", extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The tags of everything a launch creates: the EC2NodeClass's own `extra` tags, then nodewright's, which
    win over them. With `nodeclaim` ("" for a launch template) the NodeClaim's name is tagged and is the Name."""
    tags = {
        **(extra or {}),
        kubernetes_cluster(cluster): OWNED,
        CLUSTER: cluster,
        NODEPOOL: nodepool,
        NODECLASS: nodeclass,
    }
    if nodeclaim:
        tags[NODECLAIM] = nodeclaim
        tags[NAME] = nodeclaim
    return tags


def is_owned(tags: Mapping[str, str], cluster: str) -> bool:
    """True when `tags` mark a resource nodewright launched for `cluster`: its cluster tag and a NodePool tag."""
    return tags.get(CLUSTER) == cluster and bool(tags.get(NODEPOOL))


def owned_filters(cluster: str) -> list[dict[str, Any]]:
    """EC2 Describe* filters selecting what `is_owned` accepts."""
    return [{"Name": f"tag:{CLUSTER}", "Values": [cluster]}, {"Name": "tag-key", "Values": [NODEPOOL]}]
