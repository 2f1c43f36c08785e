"""Proof 4: faults injected at the wire look to clients exactly as AWS's do."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from worldkit import World


def _launch_template(world: World, name: str) -> str:
    ami = world.aws("ssm").get_parameter(
        Name="/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/standard/recommended/image_id"
    )["Parameter"]["Value"]
    template_id: str = world.aws("ec2").create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={"ImageId": ami}
    )["LaunchTemplate"]["LaunchTemplateId"]
    return template_id


def _fleet(world: World, template_id: str, overrides: list[dict[str, str]], capacity_type: str) -> dict[str, Any]:
    result: dict[str, Any] = world.aws("ec2").create_fleet(
        Type="instant",
        TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity_type},
        LaunchTemplateConfigs=[
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": template_id, "Version": "$Latest"},
                "Overrides": overrides,
            }
        ],
    )
    return result


def test_create_fleet_reports_insufficient_capacity_for_an_unavailable_offering(local_world: World) -> None:
    world = local_world
    subnets = world.state.subnet_ids
    template = _launch_template(world, "ice")
    world.set_faults({"unavailable": [{"instance_type": "m6g.large", "zone": "us-east-1a", "capacity_type": "spot"}]})

    in_a = [{"InstanceType": "m6g.large", "SubnetId": subnets["us-east-1a"]}]
    only_unavailable = _fleet(world, template, in_a, "spot")
    assert only_unavailable.get("Instances", []) == []
    [error] = only_unavailable["Errors"]
    assert error["ErrorCode"] == "InsufficientInstanceCapacity"
    assert error["Lifecycle"] == "spot"
    assert error["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"] == "m6g.large"
    assert error["LaunchTemplateAndOverrides"]["Overrides"]["AvailabilityZone"] == "us-east-1a"

    # The same type in another zone still launches, while the unavailable one is reported.
    mixed = _fleet(
        world,
        template,
        [
            {"InstanceType": "m6g.large", "SubnetId": subnets["us-east-1a"]},
            {"InstanceType": "m6g.large", "SubnetId": subnets["us-east-1b"]},
        ],
        "spot",
    )
    assert [e["ErrorCode"] for e in mixed["Errors"]] == ["InsufficientInstanceCapacity"]
    [launched] = mixed["Instances"]
    instance = world.aws("ec2").describe_instances(InstanceIds=launched["InstanceIds"])["Reservations"][0]["Instances"][
        0
    ]
    assert instance["Placement"]["AvailabilityZone"] == "us-east-1b"

    # The rule names the capacity type: on-demand capacity for the same offering is there.
    on_demand = _fleet(world, template, in_a, "on-demand")
    assert not on_demand.get("Errors")
    assert len(on_demand["Instances"]) == 1


def test_throttling_answers_request_limit_exceeded_then_recovers(local_world: World) -> None:
    world = local_world
    world.set_faults({"throttle": {"DescribeInstanceTypes": 2}})
    ec2 = world.aws("ec2", config=Config(retries={"mode": "standard", "total_max_attempts": 1}))
    with pytest.raises(ClientError) as caught:
        ec2.describe_instance_types(InstanceTypes=["m5.large"])
    assert caught.value.response["Error"]["Code"] == "RequestLimitExceeded"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    # botocore treats RequestLimitExceeded as throttling and retries it: the second throttled call
    # is absorbed by one retry and the client still gets its answer.
    retrying = world.aws("ec2", config=Config(retries={"mode": "standard", "total_max_attempts": 3}))
    answer = retrying.describe_instance_types(InstanceTypes=["m5.large"])
    assert answer["InstanceTypes"][0]["InstanceType"] == "m5.large"
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1
    assert retrying.describe_instance_types(InstanceTypes=["m5.large"])["InstanceTypes"]
