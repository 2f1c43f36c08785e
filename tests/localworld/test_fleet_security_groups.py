"""The local world's fix to moto: fleet instances carry their launch template's security groups, as in EC2."""

from __future__ import annotations

import boto3
from moto import mock_aws

from nodewright.localworld.motoserver import install_launch_template_security_groups


@mock_aws
def test_instances_of_an_instant_fleet_carry_the_templates_security_groups() -> None:
    install_launch_template_security_groups()
    ec2 = boto3.client("ec2", region_name="us-east-1")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-east-1a")["Subnet"]
    group = ec2.create_security_group(GroupName="nodes", Description="nodes", VpcId=vpc)["GroupId"]
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ec2.create_launch_template(
        LaunchTemplateName="nodes", LaunchTemplateData={"ImageId": image, "SecurityGroupIds": [group]}
    )
    for capacity in ("spot", "on-demand"):
        fleet = ec2.create_fleet(
            Type="instant",
            LaunchTemplateConfigs=[
                {
                    "LaunchTemplateSpecification": {"LaunchTemplateName": "nodes", "Version": "$Latest"},
                    "Overrides": [{"InstanceType": "m5.large", "SubnetId": subnet["SubnetId"]}],
                }
            ],
            TargetCapacitySpecification={"TotalTargetCapacity": 1, "DefaultTargetCapacityType": capacity},
        )
        [instance_id] = fleet["Instances"][0]["InstanceIds"]
        [reservation] = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        assert [g["GroupId"] for g in reservation["Instances"][0]["SecurityGroups"]] == [group], capacity
