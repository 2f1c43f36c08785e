"""Proof 2: a moto instance with AL2023 NodeConfig user data joins as a real Node, runs a pod, and
goes NotReady when the instance terminates."""

from __future__ import annotations

from typing import Any

from worldkit import World, wait_for

USER_DATA = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: {cluster}
    apiServerEndpoint: {endpoint}
    cidr: 10.96.0.0/16
  kubelet:
    config:
      maxPods: 58
      registerWithTaints:
      - key: example.com/dedicated
        value: batch
        effect: NoSchedule
    flags:
    - --node-labels=karpenter.sh/nodepool=batch,example.com/team=data

--//--
"""


def _ready_status(world: World, name: str) -> str:
    node = world.core.read_node(name)
    return next((c.status for c in node.status.conditions or [] if c.type == "Ready"), "")


def _launch(world: World) -> dict[str, Any]:
    ec2 = world.aws("ec2")
    ami = world.aws("ssm").get_parameter(
        Name="/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id"
    )["Parameter"]["Value"]
    subnet = world.state.subnet_ids[f"{world.state.region}b"]
    cluster = world.state.cluster
    reservation = ec2.run_instances(
        ImageId=ami,
        MinCount=1,
        MaxCount=1,
        InstanceType="m5.xlarge",
        SubnetId=subnet,
        UserData=USER_DATA.format(cluster=cluster, endpoint=world.state.api_server),
        TagSpecifications=[
            {
                "ResourceType": "instance",
                "Tags": [
                    {"Key": f"kubernetes.io/cluster/{cluster}", "Value": "owned"},
                    {"Key": "eks:eks-cluster-name", "Value": cluster},
                ],
            }
        ],
    )
    instance: dict[str, Any] = reservation["Instances"][0]
    return instance


def test_instance_registers_runs_a_tolerating_pod_and_goes_not_ready_when_terminated(
    local_world: World, namespace: str
) -> None:
    world = local_world
    instance = _launch(world)
    instance_id, name = instance["InstanceId"], instance["PrivateDnsName"]
    zone = f"{world.state.region}b"

    wait_for(lambda: _ready_status(world, name) == "True", 60, f"node {name} to register and be Ready")
    node = world.core.read_node(name)
    assert node.spec.provider_id == f"aws:///{zone}/{instance_id}"
    labels = node.metadata.labels
    assert labels["karpenter.sh/nodepool"] == "batch"
    assert labels["example.com/team"] == "data"
    assert labels["node.kubernetes.io/instance-type"] == "m5.xlarge"
    assert labels["topology.kubernetes.io/zone"] == zone
    assert labels["kubernetes.io/arch"] == "amd64"
    assert labels["kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/hostname"] == name
    assert labels["karpenter.sh/capacity-type"] == "on-demand"
    taints = [(t.key, t.value, t.effect) for t in node.spec.taints or []]
    assert ("example.com/dedicated", "batch", "NoSchedule") in taints
    # m5.xlarge: 4 vCPU, 16 GiB; maxPods from the NodeConfig, not the ENI limit (58 happens to match).
    assert node.status.capacity["cpu"] == "4"
    assert node.status.capacity["pods"] == "58"
    assert node.status.allocatable["cpu"] == "3920m"

    world.core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "batch"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": name},
                "tolerations": [
                    {"key": "example.com/dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
                ],
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            },
        },
    )
    wait_for(
        lambda: world.core.read_namespaced_pod("batch", namespace).status.phase == "Running",
        60,
        "the tolerating pod to run on the node",
    )
    assert world.core.read_namespaced_pod("batch", namespace).spec.node_name == name

    # A pod without the toleration must not land there: the taint is enforced by the real scheduler.
    world.core.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "intolerant"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": name},
                "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
            },
        },
    )
    wait_for(
        lambda: any(
            c.type == "PodScheduled" and c.reason == "Unschedulable"
            for c in world.core.read_namespaced_pod("intolerant", namespace).status.conditions or []
        ),
        30,
        "the intolerant pod to be unschedulable",
    )

    world.aws("ec2").terminate_instances(InstanceIds=[instance_id])
    # The lease stops being renewed; the node lifecycle controller marks the node Unknown (NotReady).
    wait_for(lambda: _ready_status(world, name) in ("Unknown", "False"), 90, f"node {name} to go NotReady")
