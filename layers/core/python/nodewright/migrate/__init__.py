"""Karpenter's older APIs (v1alpha5 Provisioner, v1alpha1 AWSNodeTemplate, v1beta1 NodePool / EC2NodeClass) and
its v1 objects, converted to nodewright.io/v1.

One module per old API; `documents` reads YAML documents (single objects or `kubectl get -o yaml` Lists) and
dispatches them; `kubelet` places kubelet settings on the EC2NodeClasses once every object is converted.
The conversions follow Karpenter's own code: kubernetes-sigs/karpenter `pkg/utils/nodepool/nodepool.go` (v0.32.3)
and `pkg/apis/v1/nodepool_conversion.go` (v1.0.9), aws/karpenter-provider-aws `pkg/utils/nodeclass/nodeclass.go`
and `tools/karpenter-convert` (v0.32.10) and `pkg/apis/v1/ec2nodeclass_conversion.go` (v1.0.8).
"""
