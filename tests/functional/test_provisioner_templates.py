"""Launch template garbage collection against moto: the templates nodewright created for this cluster that
no NodeClaim names and nobody needed for an hour are deleted; the others stay."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright.adapters.ec2_launcher import ec2_cloud
from nodewright.launch.template import LaunchTemplateSpec, MetadataOptions, block_devices
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.service.provision import (
    TEMPLATE_ANNOTATION,
    TEMPLATE_MIN_AGE_SECONDS,
    ProvisionResult,
    collect_launch_templates,
)
from nodewright.tags import launch_tags

REGION = "us-east-1"
CLUSTER = "gc"


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def spec(image: str, node_class: str = "default") -> LaunchTemplateSpec:
    return LaunchTemplateSpec(
        node_class=node_class,
        image_id=image,
        instance_profile="nodes",
        security_group_ids=("sg-1",),
        user_data="MIME",
        block_devices=block_devices(EC2NodeClass(name=node_class)),
        metadata_options=MetadataOptions(),
        tags={},
    )


def tags(node_class: str = "default", cluster: str = CLUSTER) -> dict[str, str]:
    # What the provisioner tags its templates with (service.provision._Launcher.tags).
    return launch_tags(cluster, "general", node_class)


def claim(name: str, template: str) -> dict[str, Any]:
    return {"kind": "NodeClaim", "metadata": {"name": name, "annotations": {TEMPLATE_ANNOTATION: template}}}


def node_class(name: str) -> dict[str, Any]:
    return {"kind": "EC2NodeClass", "metadata": {"name": name}}


def names(ec2: Any) -> set[str]:
    return {t["LaunchTemplateName"] for t in ec2.describe_launch_templates()["LaunchTemplates"]}


def test_only_old_templates_no_nodeclaim_names_are_deleted(ec2: Any) -> None:
    cloud = ec2_cloud(CLUSTER, "nodes", "nodes", REGION)
    in_use = cloud.ensure_launch_template(spec("ami-1"), tags())
    outdated = cloud.ensure_launch_template(spec("ami-0"), tags())  # an older AMI no claim runs on any more
    orphaned = cloud.ensure_launch_template(spec("ami-1", node_class="gone"), tags("gone"))
    other_cluster = cloud.ensure_launch_template(spec("ami-9", node_class="x"), tags("x", cluster="other"))
    ec2.create_launch_template(LaunchTemplateName="someone-elses", LaunchTemplateData={"ImageId": "ami-1"})
    listed = {t.name: t for t in cloud.launch_templates()}
    # Only this cluster's templates are candidates at all.
    assert set(listed) == {in_use, outdated, orphaned}
    assert listed[orphaned].node_class == "gone" and abs(listed[in_use].created_at - time.time()) < 600
    documents = [claim("general-1", in_use), node_class("default")]

    # While they are young, nothing is deleted (a launch may be using one right now).
    young = ProvisionResult("gc")
    collect_launch_templates(documents, cloud, time.time(), young)
    assert young.decisions == [] and names(ec2) >= {in_use, outdated, orphaned}

    later = time.time() + TEMPLATE_MIN_AGE_SECONDS + 60
    result = ProvisionResult("gc")
    collect_launch_templates(documents, cloud, later, result)
    deleted = {d.subject: d.reason for d in result.decisions if d.action == "deleted"}
    assert set(deleted) == {f"launchtemplate/{outdated}", f"launchtemplate/{orphaned}"}
    assert "EC2NodeClass gone no longer exists" in deleted[f"launchtemplate/{orphaned}"]
    assert names(ec2) == {in_use, other_cluster, "someone-elses"}

    # A deleted template that is needed again is simply created again under the same name.
    assert cloud.ensure_launch_template(spec("ami-0"), tags()) == outdated
    assert outdated in names(ec2)
