"""Skip reasons for Karpenter v1.14 features nodewright does not have yet, worded once for every port."""

STATIC_NODEPOOLS = (
    "static NodePools (spec.replicas) are supported, but this case of another suite is not ported yet (issue 24)"
)
