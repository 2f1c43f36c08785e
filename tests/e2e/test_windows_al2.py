"""Windows and AL2 nodes end to end on the local world: a Windows Deployment runs on a Windows node nodewright
launched from `windows2022@latest`, and an AL2 node joins from `amiFamily: AL2` with a custom AMI (the local world's
Kubernetes is past 1.32, for which AWS no longer publishes EKS AL2 AMIs, so `al2@latest` has no image there).

The images come from the public SSM parameters Karpenter reads (seeded by the local world's moto), the user data is
the PowerShell / bootstrap.sh nodewright writes, and the registrar (the local kubelet) joins a node only when the
user data is what the image's family needs, with the labels, taints and capacity the kubelet would report.
"""

from __future__ import annotations

import base64
from typing import Any

from kubernetes import client
from test_provisioning import (  # noqa: F401 (make_pool and provisioner are pytest fixtures)
    Pool,
    Provisioner,
    all_pending,
    converge,
    deployment,
    make_pool,
    node_of,
    provisioner,
    running,
)
from worldkit import World, wait_for

from nodewright.localworld.world import K8S_MINOR


def _with_alias(pool: Pool, alias: str) -> None:
    """Point the pool's EC2NodeClass at an alias, then create its NodePool."""
    body = {"spec": {"amiSelectorTerms": [{"alias": alias}]}}
    client.CustomObjectsApi(pool.world.api_client).patch_cluster_custom_object(
        "nodewright.io", "v1", "ec2nodeclasses", pool.name, body
    )
    pool.create_nodepool()


def _user_data(world: World, instance_id: str) -> str:
    attribute = world.aws("ec2").describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    return base64.b64decode(attribute["UserData"]["Value"]).decode()


def test_a_windows_deployment_runs_on_a_windows_node_nodewright_launched(
    local_world: World,
    namespace: str,
    provisioner: Provisioner,  # noqa: F811
    make_pool: Any,  # noqa: F811
) -> None:
    world = local_world
    windows = [{"key": "kubernetes.io/os", "operator": "In", "values": ["windows"]}]
    pool = make_pool(windows, nodepool=False)
    _with_alias(pool, "windows2022@latest")
    deployment(world, namespace, pool, "iis", 2, "500m", "512Mi", nodeSelector={"kubernetes.io/os": "windows"})
    wait_for(lambda: all_pending(world, namespace, 2), 30, "2 Windows pods marked Unschedulable")

    converge(provisioner, namespace, 2, timeout=50)

    for pod in running(world, namespace):
        node = node_of(world, pod)
        assert node.metadata.labels["kubernetes.io/os"] == "windows"
        assert node.metadata.labels["node.kubernetes.io/windows-build"] == "10.0.20348"
        assert node.metadata.labels["karpenter.sh/nodepool"] == pool.name
        assert node.status.node_info.operating_system == "windows"
        assert node.status.capacity["pods"] == "110"
        assert "vpc.amazonaws.com/PrivateIPv4Address" in node.status.capacity
    for instance in pool.instances():
        # Launched from the Windows Server 2022 image of the SSM parameter, with PowerShell user data.
        name = world.aws("ssm").get_parameter(
            Name=f"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-{K8S_MINOR}/image_id"
        )["Parameter"]["Value"]
        assert instance["ImageId"] == name
        text = _user_data(world, instance["InstanceId"])
        assert text.startswith("<powershell>") and "Start-EKSBootstrap.ps1" in text


def test_an_al2_node_joins_from_bootstrap_sh_user_data(
    local_world: World,
    namespace: str,
    provisioner: Provisioner,  # noqa: F811
    make_pool: Any,  # noqa: F811
) -> None:
    world = local_world
    ec2 = world.aws("ec2")
    # A custom AL2 image: a copy of any AMI, named as the EKS AL2 AMIs are (amazon-eks-node-<k8s>-v<date>).
    source = ec2.describe_images(Owners=["602401143452"])["Images"][0]["ImageId"]
    region = ec2.meta.region_name
    ami = ec2.copy_image(SourceImageId=source, SourceRegion=region, Name="amazon-eks-node-1.32-v20250101")["ImageId"]
    amd64 = [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]
    pool = make_pool(amd64, nodepool=False)
    body = {"spec": {"amiFamily": "AL2", "amiSelectorTerms": [{"id": ami}]}}
    client.CustomObjectsApi(world.api_client).patch_cluster_custom_object(
        "nodewright.io", "v1", "ec2nodeclasses", pool.name, body
    )
    pool.create_nodepool()
    deployment(world, namespace, pool, "app", 1, "500m", "512Mi")
    wait_for(lambda: all_pending(world, namespace, 1), 30, "1 pod marked Unschedulable")

    converge(provisioner, namespace, 1, timeout=50)

    [pod] = running(world, namespace)
    node = node_of(world, pod)
    assert node.metadata.labels["kubernetes.io/os"] == "linux"
    assert "node.kubernetes.io/windows-build" not in node.metadata.labels
    [instance] = pool.instances()
    assert instance["ImageId"] == ami
    text = _user_data(world, instance["InstanceId"])
    assert text.startswith("MIME-Version: 1.0") and "/etc/eks/bootstrap.sh" in text
