"""EC2NodeClass parsing: every Karpenter v1 field and rule, and nodewright's named limits."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.model.nodeclass import EC2NodeClass, MetadataOptions
from nodewright.model.parse_ec2nodeclass import parse_ec2nodeclass

from .helpers import NODECLASS, with_field, without_field


def ok(doc: dict[str, Any]) -> EC2NodeClass:
    node_class, errors = parse_ec2nodeclass(doc, "classes.yaml")
    assert errors == [], [str(e) for e in errors]
    assert node_class is not None
    return node_class


def errors_of(doc: dict[str, Any]) -> list[str]:
    node_class, errors = parse_ec2nodeclass(doc, "classes.yaml")
    assert node_class is None
    assert errors
    return [str(e) for e in errors]


def has_error(doc: dict[str, Any], fragment: str) -> None:
    messages = errors_of(doc)
    assert any(fragment in m for m in messages), messages


def test_minimal_class_and_defaults() -> None:
    node_class = ok(NODECLASS)
    assert node_class.role == "KarpenterNodeRole"
    assert node_class.ami_family == "al2023"
    assert node_class.metadata_options == MetadataOptions()
    assert node_class.metadata_options.http_put_response_hop_limit == 1
    assert node_class.metadata_options.http_tokens == "required"
    assert node_class.subnet_selector_terms[0].tags == {"karpenter.sh/discovery": "demo"}
    assert node_class.source == "classes.yaml"


def test_full_class() -> None:
    spec = {
        "instanceProfile": "KarpenterProfile",
        "amiSelectorTerms": [{"alias": "bottlerocket@v1.20.0"}],
        "subnetSelectorTerms": [{"id": "subnet-0abc"}, {"tags": {"tier": "private"}}],
        "securityGroupSelectorTerms": [{"id": "sg-0abc"}, {"name": "nodes"}, {"tags": {"a": "*"}}],
        "capacityReservationSelectorTerms": [{"id": "cr-0abc"}, {"tags": {"team": "a"}, "ownerID": "123456789012"}],
        "userData": "[settings]\n",
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvdb",
                "rootVolume": True,
                "ebs": {
                    "volumeSize": "100Gi",
                    "volumeType": "io2",
                    "iops": 5000,
                    "encrypted": False,
                    "kmsKeyID": "arn:aws:kms:us-east-1:1:key/x",
                    "deleteOnTermination": False,
                    "snapshotID": "snap-1",
                },
            }
        ],
        "metadataOptions": {"httpPutResponseHopLimit": 2, "httpTokens": "optional", "httpProtocolIPv6": "enabled"},
        "kubelet": {
            "maxPods": 58,
            "podsPerCore": 4,
            "systemReserved": {"cpu": "100m", "memory": "100Mi"},
            "kubeReserved": {"cpu": "200m", "ephemeral-storage": "1Gi", "pid": "100"},
            "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": "1m30s"},
            "evictionMaxPodGracePeriod": 60,
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80,
            "cpuCFSQuota": True,
            "clusterDNS": ["10.100.0.10", "fd00::a"],
        },
        "tags": {"team": "a"},
        "associatePublicIPAddress": False,
        "detailedMonitoring": True,
        "instanceStorePolicy": "RAID0",
        "context": "ctx-1",
    }
    node_class = ok(with_field(NODECLASS, "spec", spec))
    assert node_class.instance_profile == "KarpenterProfile" and node_class.role == ""
    assert node_class.ami_family == "bottlerocket"
    assert [t.id for t in node_class.subnet_selector_terms] == ["subnet-0abc", ""]
    assert node_class.security_group_selector_terms[1].name == "nodes"
    assert node_class.capacity_reservation_selector_terms[1].owner_id == "123456789012"
    mapping = node_class.block_device_mappings[0]
    assert mapping.root_volume and mapping.device_name == "/dev/xvdb"
    assert mapping.ebs.volume_size_bytes == 100 * 2**30
    assert (mapping.ebs.volume_type, mapping.ebs.iops, mapping.ebs.encrypted) == ("io2", 5000, False)
    assert mapping.ebs.delete_on_termination is False and mapping.ebs.snapshot_id == "snap-1"
    assert node_class.metadata_options == MetadataOptions("enabled", "enabled", 2, "optional")
    kubelet = node_class.kubelet
    assert kubelet.max_pods == 58 and kubelet.pods_per_core == 4
    assert kubelet.system_reserved == {"cpu": 100, "memory": 100 * 2**20}
    assert kubelet.kube_reserved == {"cpu": 200, "ephemeral-storage": 2**30, "pid": 100}
    assert kubelet.eviction_hard == {"memory.available": "5%", "nodefs.available": "10%"}
    assert kubelet.eviction_soft_grace_period == {"memory.available": "1m30s"}
    assert (kubelet.image_gc_high_threshold_percent, kubelet.image_gc_low_threshold_percent) == (85, 80)
    assert kubelet.cpu_cfs_quota is True and kubelet.eviction_max_pod_grace_period == 60
    assert kubelet.cluster_dns == ("10.100.0.10", "fd00::a")
    assert node_class.tags == {"team": "a"}
    assert node_class.associate_public_ip_address is False and node_class.detailed_monitoring is True
    assert node_class.instance_store_policy == "RAID0" and node_class.context == "ctx-1"


def test_ami_family_setting_used_without_alias() -> None:
    doc = with_field(NODECLASS, "spec.amiSelectorTerms", [{"tags": {"ami": "bottlerocket-custom"}}])
    assert ok(with_field(doc, "spec.amiFamily", "Bottlerocket")).ami_family == "bottlerocket"
    assert ok(with_field(doc, "spec.amiFamily", "AL2023")).ami_family == "al2023"
    has_error(doc, "spec.amiFamily: is required when amiSelectorTerms has no alias term")


@pytest.mark.parametrize(
    ("terms", "fragment"),
    [
        ([], "amiSelectorTerms: must have at least one term"),
        ([{"alias": "windows2025@v1.0.0"}], "windows families only take the version latest"),
        ([{"alias": "ubuntu@latest"}], 'family "ubuntu" is not an AMI alias family'),
        ([{"alias": "al2024@latest"}], "did you mean al2023@latest?"),
        ([{"alias": "al2023"}], "is not family@version"),
        ([{"alias": "@latest"}], "is not family@version"),
        ([{"alias": "al2023-latest"}], "is not family@version"),
        ([{"alias": "al2023@latest"}, {"id": "ami-123"}], "an alias term must be the only amiSelectorTerm"),
        ([{"alias": "al2023@latest", "owner": "amazon"}], "alias: cannot be combined with owner"),
        ([{"id": "ami-123", "name": "x"}], "id: cannot be combined with name"),
        ([{"id": "image-123"}], "is not an AMI id"),
        ([{"owner": "amazon"}], "needs one of alias, id, name, tags or ssmParameter"),
        ([{"tags": {"a": ""}}], "empty tag keys or values are not supported"),
        ([{"tags": {}}], "tags: must name at least one tag"),
        ([{"id": "ami-1", "ssmParameter": "/x"}], "id: cannot be combined with ssmParameter"),
        ([{"ssmParameter": "/x", "name": "y"}], "ssmParameter: cannot be combined with name"),
        ([{"aliass": "al2023@latest"}], "did you mean alias?"),
    ],
)
def test_ami_selector_rules(terms: list[dict[str, Any]], fragment: str) -> None:
    has_error(with_field(NODECLASS, "spec.amiSelectorTerms", terms), fragment)


@pytest.mark.parametrize(
    ("family", "fragment"),
    [
        ("AL2", "AL2 does not match the alias family al2023"),
        ("Windows2019", "Windows2019 does not match the alias family al2023"),
        ("Windows2025", "Windows2025 does not match the alias family al2023"),
        ("Ubuntu", "Ubuntu was removed in Karpenter v1; use Custom"),
        ("custom", "did you mean Custom?"),
        ("Bottlerocket", "does not match the alias family al2023"),
    ],
)
def test_ami_family_rules(family: str, fragment: str) -> None:
    has_error(with_field(NODECLASS, "spec.amiFamily", family), fragment)


@pytest.mark.parametrize(
    ("terms", "family"),
    [
        ([{"alias": "al2@latest"}], "al2"),
        ([{"alias": "al2@v20240807"}], "al2"),
        ([{"alias": "windows2019@latest"}], "windows2019"),
        ([{"alias": "windows2022@latest"}], "windows2022"),
        ([{"alias": "windows2025@latest"}], "windows2025"),
    ],
)
def test_al2_and_windows_aliases_set_their_family(terms: list[dict[str, Any]], family: str) -> None:
    assert ok(with_field(NODECLASS, "spec.amiSelectorTerms", terms)).ami_family == family


@pytest.mark.parametrize("setting", ["AL2", "Windows2019", "Windows2022", "Windows2025"])
def test_al2_and_windows_families_with_custom_amis(setting: str) -> None:
    doc = with_field(NODECLASS, "spec.amiSelectorTerms", [{"id": "ami-123"}, {"id": "ami-456"}])
    assert ok(with_field(doc, "spec.amiFamily", setting)).ami_family == setting.lower()


def test_ami_family_matching_alias_is_accepted() -> None:
    assert ok(with_field(NODECLASS, "spec.amiFamily", "AL2023")).ami_family == "al2023"


@pytest.mark.parametrize("alias", ["al2023@v20240807", "al2023@2024", "bottlerocket@1.10.0", "bottlerocket@v1.20.0"])
def test_alias_versions_are_resolved_rather_than_checked(alias: str) -> None:
    node_class = ok(with_field(NODECLASS, "spec.amiSelectorTerms", [{"alias": alias}]))
    assert node_class.ami_selector_terms[0].alias == alias


def test_custom_family_takes_selector_terms_or_an_alias() -> None:
    terms = [{"name": "my-ami-*", "owner": "123456789012"}, {"tags": {"team": "a"}}]
    custom = with_field(with_field(NODECLASS, "spec.amiFamily", "Custom"), "spec.amiSelectorTerms", terms)
    assert ok(custom).ami_family == "custom"
    # Custom with an alias: the alias's image, the user's user data only (Karpenter allows it too).
    assert ok(with_field(NODECLASS, "spec.amiFamily", "Custom")).ami_family == "custom"


def test_volume_sizes_follow_karpenter_limits_per_unit() -> None:
    def mapping(size: str) -> dict[str, Any]:
        return with_field(NODECLASS, "spec.blockDeviceMappings", [{"deviceName": "a", "ebs": {"volumeSize": size}}])

    for size in ("59000Gi", "64000G", "58Ti", "64T", "18Ti"):
        assert ok(mapping(size)).block_device_mappings[0].ebs.volume_size_bytes
    for size, fragment in (("59001Gi", "at most 59000Gi"), ("64001G", "at most 64000G"), ("59Ti", "at most 58Ti")):
        has_error(mapping(size), fragment)


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        ("spec.subnetSelectorTerms", [], "subnetSelectorTerms: must have at least one term"),
        ("spec.subnetSelectorTerms", [{"id": "subnet-1", "tags": {"a": "b"}}], "[0].id: cannot be combined with tags"),
        ("spec.subnetSelectorTerms", [{"id": "sn-1"}], "is not a subnet id"),
        ("spec.subnetSelectorTerms", [{"name": "x"}], 'unknown field "name"'),
        ("spec.subnetSelectorTerms", [{}], "needs one of tags, id"),
        ("spec.securityGroupSelectorTerms", [], "securityGroupSelectorTerms: must have at least one term"),
        ("spec.securityGroupSelectorTerms", [{"name": "x", "tags": {"a": "b"}}], "name: cannot be combined"),
        ("spec.securityGroupSelectorTerms", [{"id": "sg-1", "name": "x"}], "id: cannot be combined with name"),
        ("spec.securityGroupSelectorTerms", [{"tags": {f"k{i}": "v" for i in range(21)}}], "at most 20"),
        (
            "spec.capacityReservationSelectorTerms",
            [{"id": "cr-1", "ownerID": "012345678901"}],
            "id: cannot be combined with ownerID",
        ),
        ("spec.capacityReservationSelectorTerms", [{"ownerID": "012345678901"}], "needs one of tags, id"),
        ("spec.capacityReservationSelectorTerms", [{"ownerID": "1", "tags": {"a": "b"}}], "is not an AWS account id"),
        ("spec.capacityReservationSelectorTerms", [{"instanceMatchCriteria": "open"}], "is not supported yet"),
        ("spec.subnetSelectorTerms", [{"tags": {}}], "must name at least one tag"),
        ("spec.networkInterfaces", [], "networkInterfaces (EFA interfaces) is not supported yet"),
        ("spec.cpuOptions", {}, "cpuOptions is not supported yet"),
        ("spec.connectionTracking", {}, "connectionTracking is not supported yet"),
        ("spec.ipPrefixCount", 1, "ipPrefixCount (prefix delegation) is not supported yet"),
        ("spec.placementGroupSelector", {"name": "x"}, "placementGroupSelector is not supported yet"),
        ("spec.capacityReservationSelectorTerms", [{"id": "odcr-1"}], "is not a cr id"),
        ("spec.blockDeviceMappings", [{"deviceName": "/dev/xvda", "ebs": {}}], "set volumeSize or snapshotID"),
        ("spec.blockDeviceMappings", [{"ebs": {"volumeSize": "20Gi"}}], "deviceName: is required"),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": "a", "ebs": {"volumeSize": "20GB"}}],
            "whole size in Gi, G, Ti or T",
        ),
        ("spec.blockDeviceMappings", [{"deviceName": "a", "ebs": {"volumeSize": "65T"}}], "at most 64T"),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": "a", "ebs": {"volumeSize": "1Gi", "volumeType": "gp4"}}],
            "did you mean gp3?",
        ),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": "a", "ebs": {"volumeSize": "1Gi", "volumeType": "gp2", "iops": 3000}}],
            "iops applies to io1, io2 and gp3",
        ),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": "a", "ebs": {"volumeSize": "1Gi", "throughput": 2000}}],
            "from 125 to 1000",
        ),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": "a", "ebs": {"volumeSize": "1Gi", "volumeType": "io1", "throughput": 200}}],
            "gp3 volumes only",
        ),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": "a", "ebs": {"volumeSize": "1Gi", "volumeInitializationRate": 100}}],
            "volumeInitializationRate: applies to volumes created from a snapshot; set snapshotID",
        ),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": "a", "ebs": {"snapshotID": "snap-1", "volumeInitializationRate": 99}}],
            "from 100 to 300",
        ),
        (
            "spec.blockDeviceMappings",
            [{"deviceName": d, "rootVolume": True, "ebs": {"volumeSize": "1Gi"}} for d in "ab"],
            "only one mapping may set rootVolume",
        ),
        ("spec.metadataOptions", {"httpPutResponseHopLimit": 65}, "from 1 to 64"),
        ("spec.metadataOptions", {"httpTokens": "require"}, "did you mean required?"),
        ("spec.metadataOptions", {"httpEndpoint": "on"}, '"on" is not valid'),
        ("spec.kubelet", {"maxPods": -1}, "maxPods: -1 is too small"),
        ("spec.kubelet", {"podsPerCore": "2"}, "podsPerCore: must be an integer"),
        ("spec.kubelet", {"systemReserved": {"gpu": "1"}}, "is not reservable"),
        ("spec.kubelet", {"kubeReserved": {"cpu": "-1"}}, "is negative"),
        ("spec.kubelet", {"evictionHard": {"memory.free": "1Gi"}}, "is not an eviction signal"),
        ("spec.kubelet", {"evictionHard": {"memory.available": "lots"}}, "quantity such as 100Mi or a percentage"),
        ("spec.kubelet", {"evictionSoft": {"memory.available": "1Gi"}}, "needs a matching evictionSoftGracePeriod"),
        ("spec.kubelet", {"evictionSoftGracePeriod": {"memory.available": "1m"}}, "has no matching evictionSoft"),
        (
            "spec.kubelet",
            {"evictionSoft": {"memory.available": "1Gi"}, "evictionSoftGracePeriod": {"memory.available": "soon"}},
            "not a duration",
        ),
        ("spec.kubelet", {"imageGCHighThresholdPercent": 50, "imageGCLowThresholdPercent": 60}, "must be greater than"),
        ("spec.kubelet", {"imageGCHighThresholdPercent": 101}, "from 0 to 100"),
        ("spec.kubelet", {"clusterDNS": ["10.0.0.300"]}, "is not an IP address"),
        ("spec.kubelet", {"cpuCFSQuota": "yes"}, "must be true or false"),
        ("spec.kubelet", {"maxpods": 10}, "did you mean maxPods?"),
        ("spec.tags", {"kubernetes.io/cluster/demo": "owned"}, "restricted tag (kubernetes.io/cluster/*)"),
        ("spec.tags", {"karpenter.sh/nodepool": "x"}, "restricted tag"),
        ("spec.tags", {"karpenter.sh/nodeclaim": "x"}, "restricted tag"),
        ("spec.tags", {"karpenter.k8s.aws/ec2nodeclass": "x"}, "restricted tag"),
        ("spec.tags", {"eks:eks-cluster-name": "x"}, "restricted tag"),
        ("spec.tags", {"nodewright.io/cluster": "x"}, "restricted tag (nodewright.io/cluster); nodewright sets it"),
        ("spec.tags", {"nodewright.io/nodepool": "x"}, "restricted tag (nodewright.io/nodepool); nodewright sets it"),
        ("spec.instanceStorePolicy", "RAID1", '"RAID1" is not valid; use one of RAID0'),
        ("spec.detailedMonitoring", "true", "must be true or false"),
        ("spec.instanceProfile", "Profile", "set exactly one of role and instanceProfile, not both"),
        ("spec.role", "", "spec.role: must not be empty"),
        ("spec.amiSelector", {"a": "b"}, "was replaced by amiSelectorTerms"),
        ("spec.launchTemplate", "lt", "custom launch templates are not supported"),
        ("spec.subnetSelectorTerm", [], "did you mean subnetSelectorTerms?"),
        ("apiVersion", "karpenter.k8s.aws/v1beta1", "pre-v1 Karpenter API"),
    ],
)
def test_field_rules(path: str, value: Any, fragment: str) -> None:
    has_error(with_field(NODECLASS, path, value), fragment)


def test_role_or_instance_profile_required() -> None:
    has_error(without_field(NODECLASS, "spec.role"), "set exactly one of role")


@pytest.mark.parametrize("field", ["amiSelectorTerms", "subnetSelectorTerms", "securityGroupSelectorTerms"])
def test_selector_terms_required(field: str) -> None:
    messages = errors_of(without_field(NODECLASS, f"spec.{field}"))
    assert f"classes.yaml: EC2NodeClass/default: spec.{field}: is required" in messages


def test_nodewright_api_version() -> None:
    assert ok(with_field(NODECLASS, "apiVersion", "nodewright.io/v1")).api_version == "nodewright.io/v1"
