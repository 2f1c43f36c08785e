"""instanceStorePolicy RAID0 reaches the node: the user data sets up the instance store, read back as a node would.

Mirrors Karpenter v1.14.1 `pkg/providers/launchtemplate/suite_test.go` (the RAID0 cases of Describe
"LaunchTemplate Provider") and `pkg/providers/version/version_test.go` (Describe "SupportsDefaultBind").
"""

from __future__ import annotations

import email
import tomllib
from typing import Any

import pytest
import yaml
from service_fakes import FakeCloud, FixedClock, SmallCatalog, nodeclass, nodepool, pod

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.launch.instance_store import (
    bootstrap_sh_flag,
    bottlerocket_version,
    node_image_version,
    supports_default_bind,
)
from nodewright.launch.template import Image
from nodewright.launch.userdata import ClusterInfo, NodeBootstrap, al2023_user_data, bottlerocket_user_data
from nodewright.localworld.registrar import InstanceTypeInfo, node_manifest
from nodewright.localworld.userdata import parse_user_data
from nodewright.model.nodeclass import AMISelectorTerm, EC2NodeClass
from nodewright.service.batch import Batch, PodHint
from nodewright.service.provision import provision

CLUSTER = ClusterInfo("demo", "https://api.example:443", "Q0EK", "10.100.0.0/16", "1.31")
LABELS = {"karpenter.sh/nodepool": "general"}
# Karpenter's expected bootstrap command (suite_test.go, "should specify RAID0 bootstrap-command ... Bottlerocket").
MOUNT_DEFAULT = {
    "commands": [["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind"]],
    "mode": "always",
    "essential": True,
}
# ... and for images before 1.46.0 ("should use explicit directories for Bottlerocket v1.45.0").
MOUNT_LEGACY = {
    "commands": [
        ["apiclient", "ephemeral-storage", "init"],
        [
            "apiclient",
            "ephemeral-storage",
            "bind",
            "--dirs",
            "/var/lib/containerd",
            "/var/lib/kubelet",
            "/var/log/pods",
        ],
    ],
    "mode": "always",
    "essential": True,
}


def boot(**overrides: Any) -> NodeBootstrap:
    return NodeBootstrap(cluster=CLUSTER, labels=LABELS, **overrides)


def nodeconfigs(text: str) -> list[dict[str, Any]]:
    message = email.message_from_string(text)
    docs: list[dict[str, Any]] = []
    for part in message.walk():
        if part.get_content_type() == "application/node.eks.aws":
            docs.extend(d for d in yaml.safe_load_all(str(part.get_payload())) if d)
    return docs


# ------------------------------------------------------------------------------------------ AL2023


def test_al2023_nodeconfig_sets_local_storage_raid0_when_the_policy_is_set() -> None:
    """suite_test.go: It("should set LocalDiskStrategy to Raid0 when specified by the InstanceStorePolicy")."""
    [config] = nodeconfigs(al2023_user_data(boot(instance_store_policy="RAID0")))
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    assert parse_user_data(al2023_user_data(boot(instance_store_policy="RAID0"))).local_storage == "RAID0"


def test_al2023_nodeconfig_leaves_the_instance_store_alone_without_the_policy() -> None:
    [config] = nodeconfigs(al2023_user_data(boot()))
    assert "instance" not in config["spec"]
    assert parse_user_data(al2023_user_data(boot())).local_storage == ""


def test_al2023_raid0_goes_in_our_nodeconfig_after_the_users_own() -> None:
    theirs = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 9\n"
    first, ours = nodeconfigs(al2023_user_data(boot(instance_store_policy="RAID0", user_data=theirs)))
    assert "instance" not in first["spec"]
    assert ours["spec"]["instance"]["localStorage"]["strategy"] == "RAID0"


# ------------------------------------------------------------------------------------------ Bottlerocket


def bootstrap_commands(text: str) -> dict[str, Any]:
    commands: dict[str, Any] = tomllib.loads(text)["settings"].get("bootstrap-commands", {})
    return commands


@pytest.mark.parametrize(
    ("version", "expected"),
    [("latest", MOUNT_DEFAULT), ("v1.46.0", MOUNT_DEFAULT), ("v1.45.0", MOUNT_LEGACY), ("", MOUNT_LEGACY)],
)
def test_bottlerocket_mounts_the_instance_store_as_karpenter_does(version: str, expected: dict[str, Any]) -> None:
    """suite_test.go: It("should specify RAID0 bootstrap-command when instance-store policy is set on
    Bottlerocket"), It("should use explicit directories for Bottlerocket v1.45.0"), It("should use default bind
    for Bottlerocket v1.46.0"); an unknown version binds the directories by name, as Karpenter does."""
    text = bottlerocket_user_data(boot(instance_store_policy="RAID0", image_version=version))
    assert bootstrap_commands(text) == {"000-mount-instance-storage": expected}
    assert parse_user_data(text).local_storage == "RAID0"


def test_bottlerocket_writes_no_bootstrap_commands_without_the_policy() -> None:
    text = bottlerocket_user_data(boot(image_version="latest"))
    assert bootstrap_commands(text) == {}
    assert parse_user_data(text).local_storage == ""


def test_bottlerocket_merges_the_users_bootstrap_commands_with_ours() -> None:
    """suite_test.go: It("should merge bootstrap-commands when instance-store policy is set on Bottlerocket")."""
    theirs = """
[settings.bootstrap-commands.111-say-hello]
commands = [['echo', 'hello']]
mode = 'always'
essential = true
"""
    text = bottlerocket_user_data(boot(instance_store_policy="RAID0", image_version="latest", user_data=theirs))
    assert bootstrap_commands(text) == {
        "000-mount-instance-storage": MOUNT_DEFAULT,
        "111-say-hello": {"commands": [["echo", "hello"]], "mode": "always", "essential": True},
    }


def test_the_registrar_does_not_take_a_switched_off_or_bind_only_command_for_raid0() -> None:
    init_and_bind = '[["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind"]]'
    off = f'[settings.bootstrap-commands.x]\ncommands = {init_and_bind}\nmode = "off"\n'
    bind_only = '[settings.bootstrap-commands.x]\ncommands = [["apiclient", "ephemeral-storage", "bind"]]\n'
    assert parse_user_data(off.replace('"off"', '"always"')).local_storage == "RAID0"
    assert parse_user_data(off).local_storage == ""
    assert parse_user_data(bind_only).local_storage == ""


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.45.0", False),
        ("1.46.0", True),
        ("1.47.0", True),
        ("2.0.0", True),
        ("v1.45.0", False),
        ("v1.46.0", True),
        ("1.9.0", False),
        ("latest", True),
        ("invalid", False),
        ("1", False),
        ("", False),
        ("1.46", False),
        ("abc.def.ghi", False),
    ],
)
def test_supports_default_bind(version: str, expected: bool) -> None:
    """version_test.go: Describe("SupportsDefaultBind") / DescribeTable("should return correct result for version")."""
    assert supports_default_bind(version) is expected


def test_the_bottlerocket_version_comes_from_the_alias_then_an_image_name() -> None:
    image = Image("ami-1", "amd64", "standard", "bottlerocket-aws-k8s-1.33-x86_64-v1.45.2-431fe75a")
    alias = EC2NodeClass(name="a", ami_selector_terms=(AMISelectorTerm(alias="bottlerocket@v1.46.0"),))
    by_id = EC2NodeClass(name="b", ami_selector_terms=(AMISelectorTerm(id="ami-1"),), ami_family_setting="bottlerocket")
    al2023 = EC2NodeClass(name="c", ami_selector_terms=(AMISelectorTerm(alias="al2023@latest"),))
    assert node_image_version(alias, image) == "v1.46.0"
    assert node_image_version(by_id, image) == "v1.45.2"
    assert node_image_version(al2023, image) == ""
    assert bottlerocket_version([], ["al2023-ami-v1.50.0"]) == ""


def test_al2s_bootstrap_flag_is_karpenters() -> None:
    """suite_test.go: It("should specify --local-disks raid0 when instance-store policy is set on AL2")."""
    assert bootstrap_sh_flag("RAID0") == "--local-disks raid0"
    assert bootstrap_sh_flag("") == ""


# ------------------------------------------------------------------------------------------ the launch path


@pytest.mark.parametrize(
    ("alias", "expected"),
    [("al2023@latest", "al2023"), ("bottlerocket@v1.45.0", MOUNT_LEGACY), ("bottlerocket@latest", MOUNT_DEFAULT)],
)
def test_a_nodeclass_with_raid0_launches_templates_whose_user_data_sets_it_up(alias: str, expected: object) -> None:
    node_class = nodeclass()
    node_class["spec"]["amiSelectorTerms"] = [{"alias": alias}]
    node_class["spec"]["instanceStorePolicy"] = "RAID0"
    clock = FixedClock()
    cluster = InMemoryCluster([nodepool(), node_class, pod("web-0")], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    hints = [
        PodHint("web", "web-0", d["metadata"]["uid"], d["metadata"]["resourceVersion"]) for d in cluster.of_kind("Pod")
    ]
    assert provision(Batch("b1", "demo", hints), cluster, cloud, InMemoryState(), clock, SmallCatalog()).launched
    assert cloud.templates
    for template in cloud.templates.values():
        assert parse_user_data(template.user_data).local_storage == "RAID0"
        if expected == "al2023":
            assert [c["spec"]["instance"] for c in nodeconfigs(template.user_data)] == [
                {"localStorage": {"strategy": "RAID0"}}
            ]
        else:
            assert bootstrap_commands(template.user_data) == {"000-mount-instance-storage": expected}


# ------------------------------------------------------------------------------------------ the local world's node

M6ID_LARGE = InstanceTypeInfo("m6id.large", 2, 8192, "x86_64", 3, 10, instance_store_gb=118)
M5_LARGE = InstanceTypeInfo("m5.large", 2, 8192, "x86_64", 3, 10)
INSTANCE = {
    "InstanceId": "i-1",
    "PrivateDnsName": "ip-10-0-0-1.ec2.internal",
    "Placement": {"AvailabilityZone": "us-east-1a"},
}


def storage(info: InstanceTypeInfo, user_data: str) -> tuple[str, str]:
    status = node_manifest(INSTANCE, info, parse_user_data(user_data), "us-east-1")["status"]
    return status["capacity"]["ephemeral-storage"], status["allocatable"]["ephemeral-storage"]


def test_the_registrar_reports_the_instance_store_as_ephemeral_storage_only_under_raid0() -> None:
    raid0 = al2023_user_data(boot(instance_store_policy="RAID0"))
    assert storage(M6ID_LARGE, raid0) == ("118G", str(118 * 10**9 * 9 // 10))
    assert storage(M6ID_LARGE, bottlerocket_user_data(boot(instance_store_policy="RAID0"))) == (
        "118G",
        str(118 * 10**9 * 9 // 10),
    )
    # Without the policy, or on a type with no instance store, the root volume as before.
    assert storage(M6ID_LARGE, al2023_user_data(boot())) == ("20Gi", "18Gi")
    assert storage(M5_LARGE, raid0) == ("20Gi", "18Gi")


def test_the_registrar_reads_the_nvme_instance_store_size_from_describe_instance_types() -> None:
    doc = {
        "InstanceType": "m6id.large",
        "InstanceStorageInfo": {"TotalSizeInGB": 118, "NvmeSupport": "required", "Disks": [{"Count": 1}]},
    }
    assert InstanceTypeInfo.from_api(doc).instance_store_gb == 118
    doc["InstanceStorageInfo"]["NvmeSupport"] = "unsupported"  # type: ignore[index]
    assert InstanceTypeInfo.from_api(doc).instance_store_gb == 0
    assert InstanceTypeInfo.from_api({"InstanceType": "m5.large"}).instance_store_gb == 0
