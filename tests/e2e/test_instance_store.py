"""instanceStorePolicy RAID0 on the local world: a pod asking for more ephemeral storage than any root volume gives
lands on an instance whose user data sets up the instance store as RAID0, and the node reports the instance store
as its ephemeral storage (the registrar reads the user data as a booting node would)."""

from __future__ import annotations

import base64
import binascii
import email
from typing import Any

import yaml
from kubernetes import client
from test_provisioning import (  # noqa: F401 (make_pool and provisioner are pytest fixtures)
    Provisioner,
    all_pending,
    converge,
    deployment,
    make_pool,
    provisioner,
    running,
)
from worldkit import World, wait_for

from nodewright.model.quantity import parse_quantity

GiB = 1024**3


def nodeconfig_instance_sections(user_data: str) -> list[Any]:
    """`spec.instance` of every NodeConfig in a MIME user data document (None where a NodeConfig has none)."""
    message = email.message_from_string(user_data)
    sections = []
    for part in message.walk():
        if part.get_content_type() == "application/node.eks.aws":
            for doc in yaml.safe_load_all(str(part.get_payload())):
                if doc:
                    sections.append(doc["spec"].get("instance"))
    return sections


def decoded(value: str) -> str:
    """User data as EC2 returns it: base64 (real EC2), or the text itself if moto kept it as sent."""
    try:
        return base64.b64decode(value, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return value


def test_a_pod_asking_for_200gi_of_ephemeral_storage_runs_on_an_instance_store_set_up_as_raid0(
    local_world: World,
    namespace: str,
    provisioner: Provisioner,  # noqa: F811 (a fixture)
    make_pool: Any,  # noqa: F811 (a fixture)
) -> None:
    world = local_world
    pool = make_pool([{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}], nodepool=False)
    custom = client.CustomObjectsApi(world.api_client)
    patch = {"spec": {"instanceStorePolicy": "RAID0"}}
    custom.patch_cluster_custom_object("nodewright.io", "v1", "ec2nodeclasses", pool.name, patch)
    pool.create_nodepool()
    deployment(
        world,
        namespace,
        pool,
        "scratch",
        1,
        "500m",
        "512Mi",
        containers=[
            {
                "name": "app",
                "image": "app",
                "resources": {"requests": {"cpu": "500m", "memory": "512Mi", "ephemeral-storage": "200Gi"}},
            }
        ],
    )
    wait_for(lambda: all_pending(world, namespace, 1), 30, "the pod marked Unschedulable")

    converge(provisioner, namespace, 1, timeout=45)
    [placed] = running(world, namespace)
    node = world.core.read_node(placed.spec.node_name)
    instance_id = node.spec.provider_id.rsplit("/", 1)[-1]
    assert instance_id in {i["InstanceId"] for i in pool.instances()}

    # The instance's user data (as EC2 hands it to the node) sets up the instance store as RAID0 ...
    ec2 = world.aws("ec2")
    attribute = ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
    user_data = decoded(attribute["UserData"]["Value"])
    assert nodeconfig_instance_sections(user_data) == [{"localStorage": {"strategy": "RAID0"}}]

    # ... on a type with an NVMe instance store, which is the node's ephemeral storage (no root volume holds 200Gi).
    [instance] = [i for i in pool.instances() if i["InstanceId"] == instance_id]
    [info] = ec2.describe_instance_types(InstanceTypes=[instance["InstanceType"]])["InstanceTypes"]
    store_gb = info["InstanceStorageInfo"]["TotalSizeInGB"]
    assert info["InstanceStorageInfo"]["NvmeSupport"] != "unsupported"
    assert parse_quantity(node.status.capacity["ephemeral-storage"]) == store_gb * 10**9
    assert parse_quantity(node.status.allocatable["ephemeral-storage"]) >= 200 * GiB
