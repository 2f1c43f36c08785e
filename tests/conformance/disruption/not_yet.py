"""Skip reasons for Karpenter v1.14 features nodewright does not have yet, worded once for every port."""

STATIC_NODEPOOLS = "static NodePools (spec.replicas): not supported yet (issue 24); nodewright refuses them"
