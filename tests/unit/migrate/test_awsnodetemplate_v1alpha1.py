"""v1alpha1 AWSNodeTemplate -> nodewright.io/v1 EC2NodeClass: one test per mapping and per refusal."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.migrate.common import MigrationError, Options

from .helpers import doc, migrate, valid

BASE: dict[str, Any] = {
    "amiFamily": "Bottlerocket",
    "subnetSelector": {"karpenter.sh/discovery": "demo"},
    "securityGroupSelector": {"karpenter.sh/discovery": "demo"},
}


def template(**spec: Any) -> str:
    return doc("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate", {**BASE, **spec})


def node_class(options: Options | None = None, **spec: Any) -> dict[str, Any]:
    (found,) = valid(migrate(template(**spec), options))
    assert found["apiVersion"] == "nodewright.io/v1" and found["kind"] == "EC2NodeClass"
    return dict(found["spec"])


def test_tag_selectors_become_tag_terms_with_comma_separated_values_expanded() -> None:
    spec = node_class(subnetSelector={"b": "1,2", "a": "x, y"})
    assert spec["subnetSelectorTerms"] == [
        {"tags": {"a": "x", "b": "1"}},
        {"tags": {"a": "y", "b": "1"}},
        {"tags": {"a": "x", "b": "2"}},
        {"tags": {"a": "y", "b": "2"}},
    ]


@pytest.mark.parametrize("key", ["aws-ids", "aws::ids"])
def test_ids_become_id_terms(key: str) -> None:
    spec = node_class(securityGroupSelector={key: "sg-1, sg-2"}, subnetSelector={key: "subnet-1"})
    assert spec["securityGroupSelectorTerms"] == [{"id": "sg-1"}, {"id": "sg-2"}]
    assert spec["subnetSelectorTerms"] == [{"id": "subnet-1"}]


def test_ami_name_times_owners_times_tags_become_terms_and_the_family_is_kept() -> None:
    spec = node_class(amiSelector={"aws::name": "my-ami-*", "aws::owners": "self,123456789012", "team": "a"})
    assert spec["amiFamily"] == "Bottlerocket"
    assert spec["amiSelectorTerms"] == [
        {"tags": {"team": "a"}, "name": "my-ami-*", "owner": "self"},
        {"tags": {"team": "a"}, "name": "my-ami-*", "owner": "123456789012"},
    ]


def test_ami_ids_become_id_terms() -> None:
    assert node_class(amiSelector={"aws::ids": "ami-1,ami-2"})["amiSelectorTerms"] == [{"id": "ami-1"}, {"id": "ami-2"}]


def test_a_family_without_an_ami_selector_becomes_an_alias() -> None:
    spec = node_class()
    assert spec["amiSelectorTerms"] == [{"alias": "bottlerocket@latest"}] and "amiFamily" not in spec


def test_an_unset_family_meant_al2() -> None:
    (found,) = migrate(
        doc("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate", {k: v for k, v in BASE.items() if k != "amiFamily"})
    )
    assert found["spec"]["amiSelectorTerms"] == [{"alias": "al2@latest"}]


def test_an_unset_family_meant_al2_and_validates() -> None:
    valid(
        migrate(
            doc("karpenter.k8s.aws/v1alpha1", "AWSNodeTemplate", {k: v for k, v in BASE.items() if k != "amiFamily"})
        )
    )


def test_instance_profile_is_kept_else_the_role_is_written() -> None:
    assert node_class(instanceProfile="Profile")["instanceProfile"] == "Profile"
    assert node_class()["role"] == "$KARPENTER_NODE_ROLE"
    assert node_class(Options(role="KarpenterNodeRole-demo"))["role"] == "KarpenterNodeRole-demo"


def test_user_data_block_devices_monitoring_tags_and_context_are_carried() -> None:
    devices = [{"deviceName": "/dev/xvdb", "ebs": {"volumeSize": "100Gi", "volumeType": "gp3"}}]
    spec = node_class(
        userData="[settings.kubernetes]\nkube-api-qps = 30\n",
        blockDeviceMappings=devices,
        detailedMonitoring=True,
        tags={"team": "a"},
        context="ctx-1",
    )
    assert spec["userData"] == "[settings.kubernetes]\nkube-api-qps = 30\n"
    assert spec["blockDeviceMappings"] == devices and spec["detailedMonitoring"] is True
    assert spec["tags"] == {"team": "a"} and spec["context"] == "ctx-1"


def test_metadata_options_keep_an_explicit_hop_limit_and_write_the_old_default_otherwise() -> None:
    assert node_class(metadataOptions={"httpPutResponseHopLimit": 3})["metadataOptions"]["httpPutResponseHopLimit"] == 3
    assert node_class()["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
    }


def test_ubuntu_with_an_ami_selector_becomes_al2_with_ubuntus_root_volume() -> None:
    (found,) = migrate(template(amiFamily="Ubuntu", amiSelector={"aws::ids": "ami-1"}))
    assert found["spec"]["amiFamily"] == "AL2" and found["spec"]["amiSelectorTerms"] == [{"id": "ami-1"}]
    assert found["spec"]["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/sda1",
            "rootVolume": True,
            "ebs": {"encrypted": True, "volumeType": "gp3", "volumeSize": "20Gi"},
        }
    ]


def test_custom_with_an_ami_selector_is_kept() -> None:
    spec = node_class(amiFamily="Custom", amiSelector={"aws::ids": "ami-1"}, userData="#!/bin/bash\n")
    assert spec["amiFamily"] == "Custom" and spec["amiSelectorTerms"] == [{"id": "ami-1"}]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"launchTemplate": "lt"}, r"spec\.launchTemplate: custom launch templates cannot be converted"),
        ({"amiSelector": {"aws::ids": "ami-1", "team": "a"}}, r"spec\.amiSelector\[aws::ids\]: cannot be combined"),
        ({"subnetSelector": {"aws-ids": "subnet-1", "a": "b"}}, r"spec\.subnetSelector\[aws-ids\]: cannot be combined"),
        ({"amiFamily": "Custom"}, r"spec\.amiSelector: amiFamily Custom needs AMI selector terms"),
        ({"subnetSelector": None}, r"spec\.subnetSelector: is missing"),
        ({"securityGroupSelector": {}}, r"spec\.securityGroupSelector: is missing"),
        (
            {"tags": {"kubernetes.io/cluster/demo": "owned"}},
            r"spec\.tags\[kubernetes\.io/cluster/demo\]: is a restricted",
        ),
        ({"tags": {"karpenter.sh/provisioner-name": "x"}}, r"spec\.tags\[karpenter\.sh/provisioner-name\]: is a restr"),
        ({"amiFamily": "Ubuntu"}, r"spec\.amiFamily: Ubuntu has no AMI alias"),
        ({"amiFamily": "Debian"}, r'spec\.amiFamily: "Debian" is not an AMI family'),
        ({"amiSelector": {"aws::owners": "self"}}, r"spec\.amiSelector\[aws::owners\]: needs aws::name or tags"),
    ],
)
def test_refusals_name_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(MigrationError, match=message):
        migrate(template(**spec))


def test_inline_provider_refusals_name_the_provider_field() -> None:
    provider = {**BASE, "launchTemplate": "lt"}
    text = doc("karpenter.sh/v1alpha5", "Provisioner", {"provider": provider})
    with pytest.raises(MigrationError, match=r"Provisioner/default: spec\.provider\.launchTemplate"):
        migrate(text)
