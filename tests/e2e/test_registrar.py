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


def _public_image(world: World) -> str:
    parameter = "/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id"
    return str(world.aws("ssm").get_parameter(Name=parameter)["Parameter"]["Value"])


def _launch(world: World, user_data: str, image: str, instance_type: str = "m5.xlarge") -> dict[str, Any]:
    cluster = world.state.cluster
    reservation = world.aws("ec2").run_instances(
        ImageId=image,
        MinCount=1,
        MaxCount=1,
        InstanceType=instance_type,
        SubnetId=world.state.subnet_ids[f"{world.state.region}b"],
        UserData=user_data,
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
    user_data = USER_DATA.format(cluster=world.state.cluster, endpoint=world.state.api_server)
    instance = _launch(world, user_data, _public_image(world))
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


CUSTOM_SCRIPT = (
    "#!/bin/bash\nset -euo pipefail\n/etc/eks/bootstrap.sh {cluster} --kubelet-extra-args \\\n"
    "  '--node-labels=karpenter.sh/nodepool=golden,example.com/image=golden'"
    "' --register-with-taints=example.com/golden=yes:NoSchedule'\n"
)


def _launch_custom(world: World, user_data: str) -> tuple[str, str]:
    """An instance of the account's own image (a copy of the public one, as a golden image is) with `user_data`."""
    golden = world.aws("ec2").copy_image(
        SourceImageId=_public_image(world), SourceRegion=world.state.region, Name="golden"
    )
    instance = _launch(world, user_data.format(cluster=world.state.cluster), str(golden["ImageId"]), "m5.large")
    return str(instance["InstanceId"]), str(instance["PrivateDnsName"])


def _taints(world: World, name: str) -> list[tuple[str, str | None, str]]:
    return [(t.key, t.value, t.effect) for t in world.core.read_node(name).spec.taints or []]


def test_a_custom_images_script_and_unreadable_user_data_still_join(local_world: World) -> None:
    """amiFamily: Custom launches the user's own user data: the registrar reads the kubelet flags of a bootstrap
    script, and joins an instance whose user data it cannot read with the cloud's labels only."""
    world = local_world
    scripted_id, scripted = _launch_custom(world, CUSTOM_SCRIPT)
    opaque_id, opaque = _launch_custom(world, "#cloud-config\nruncmd: [/opt/acme/join]\n")
    wait_for(lambda: _ready_status(world, scripted) == "True", 60, f"node {scripted} to register")
    wait_for(lambda: _ready_status(world, opaque) == "True", 60, f"node {opaque} to register")

    node = world.core.read_node(scripted)
    assert node.metadata.labels["karpenter.sh/nodepool"] == "golden"
    assert node.metadata.labels["example.com/image"] == "golden"
    # The node lifecycle controller lifts node.kubernetes.io/not-ready a moment after the node turns Ready: the
    # taints left are then those the script's kubelet flags registered with.
    golden = [("example.com/golden", "yes", "NoSchedule")]
    wait_for(lambda: _taints(world, scripted) == golden, 30, f"node {scripted} to keep only its own taint")

    bare = world.core.read_node(opaque)
    assert "karpenter.sh/nodepool" not in bare.metadata.labels
    assert bare.metadata.labels["node.kubernetes.io/instance-type"] == "m5.large"
    wait_for(lambda: _taints(world, opaque) == [], 30, f"node {opaque} to have no taint")
    world.aws("ec2").terminate_instances(InstanceIds=[scripted_id, opaque_id])
