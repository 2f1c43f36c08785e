"""Context settings: what is required, what is checked, and errors that say which key and how to pass it."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ContextError, Settings, VpcAttachment


def read(**context: Any) -> Settings:
    return Settings.from_context(context.get)


def test_the_cluster_name_is_required_and_the_error_says_how_to_pass_it() -> None:
    with pytest.raises(ContextError) as caught:
        read()
    message = str(caught.value)
    assert "clusterName" in message
    assert "-c clusterName=" in message


def test_defaults_follow_the_cluster_name() -> None:
    settings = read(clusterName="prod-eu")
    assert settings.discovery_tag == "prod-eu"
    assert settings.kubernetes_version is None
    assert settings.vpc is None
    assert settings.stack_name == "Nodewright"
    assert settings.catalog is None


def test_explicit_values_are_kept() -> None:
    settings = read(
        clusterName="c1", discoveryTag="team-a", kubernetesVersion="1.33", stackName="NodewrightC1", catalog="snapshot"
    )
    assert (settings.discovery_tag, settings.kubernetes_version, settings.stack_name, settings.catalog) == (
        "team-a",
        "1.33",
        "NodewrightC1",
        "snapshot",
    )


@pytest.mark.parametrize(
    ("context", "named"),
    [
        ({"clusterName": "-leading-dash"}, "clusterName"),
        ({"clusterName": "c", "kubernetesVersion": "v1.33"}, "kubernetesVersion"),
        ({"clusterName": "c", "kubernetesVersion": "1.33.2"}, "kubernetesVersion"),
        ({"clusterName": "c", "catalog": "cheap"}, "catalog"),
        ({"clusterName": "c", "discoveryTag": "bad,value"}, "discoveryTag"),
    ],
)
def test_malformed_values_are_refused_by_name(context: dict[str, str], named: str) -> None:
    with pytest.raises(ContextError, match=named):
        read(**context)


def test_a_partial_vpc_attachment_names_every_missing_key() -> None:
    with pytest.raises(ContextError) as caught:
        read(clusterName="c", vpcId="vpc-0123456789abcdef0")
    message = str(caught.value)
    assert "privateSubnetIds" in message and "securityGroupId" in message
    assert "-c privateSubnetIds=" in message and "-c securityGroupId=" in message
    assert "missing vpcId" not in message


def test_a_full_vpc_attachment_is_parsed() -> None:
    settings = read(
        clusterName="c",
        vpcId="vpc-0123456789abcdef0",
        privateSubnetIds=" subnet-0123456789abcdef0, subnet-0fedcba9876543210 ",
        securityGroupId="sg-0123456789abcdef0",
    )
    assert settings.vpc == VpcAttachment(
        vpc_id="vpc-0123456789abcdef0",
        subnet_ids=("subnet-0123456789abcdef0", "subnet-0fedcba9876543210"),
        security_group_id="sg-0123456789abcdef0",
    )


def test_subnet_lists_must_hold_subnet_ids() -> None:
    with pytest.raises(ContextError, match="sg-0123456789abcdef0"):
        read(
            clusterName="c",
            vpcId="vpc-0123456789abcdef0",
            privateSubnetIds="subnet-0123456789abcdef0,sg-0123456789abcdef0",
            securityGroupId="sg-0123456789abcdef0",
        )
