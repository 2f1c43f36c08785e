"""Fleet attempts, override order and cap, requests, ICE classification, template hashes, AMI paths."""

from __future__ import annotations

from nodewright.launch.amis import alias_parameter
from nodewright.launch.fleet import (
    MAX_OVERRIDES,
    FleetAttempt,
    Override,
    classify_response,
    client_token,
    fleet_request,
    plan_attempts,
)
from nodewright.launch.template import LaunchTemplateSpec, block_devices
from nodewright.model.nodeclass import EC2NodeClass, MetadataOptions
from nodewright.scheduling.results import LaunchOption

SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b"}
ZONE_OF = {v: k for k, v in SUBNETS.items()}


def arch(name: str) -> tuple[str, str]:
    return ("arm64", "standard") if "g." in name else ("amd64", "standard")


def plan(options: list[LaunchOption], unavailable: frozenset[tuple[str, str, str]] = frozenset()):  # type: ignore[no-untyped-def]
    return plan_attempts(options, SUBNETS.get, arch, unavailable)


def test_attempts_go_reserved_then_spot_then_on_demand_keeping_price_order() -> None:
    options = [
        LaunchOption("m5.large", "reserved", "us-east-1a", 0.00001, "cr-1"),
        LaunchOption("m6g.large", "spot", "us-east-1a", 0.03),
        LaunchOption("m5.large", "spot", "us-east-1b", 0.04),
        LaunchOption("m6g.large", "on-demand", "us-east-1a", 0.077),
        LaunchOption("m5.large", "on-demand", "us-east-1c", 0.096),  # no subnet there
    ]
    result = plan(options)
    assert [(a.capacity_type, a.reservation_id) for a in result.attempts] == [
        ("reserved", "cr-1"),
        ("spot", ""),
        ("on-demand", ""),
    ]
    spot = result.attempts[1]
    assert [(o.option.instance_type, o.subnet_id) for o in spot.overrides] == [
        ("m6g.large", "subnet-a"),
        ("m5.large", "subnet-b"),
    ]
    assert spot.variants == (("arm64", "standard"), ("amd64", "standard"))
    assert [(o.instance_type, why) for o, why in result.skipped] == [
        ("m5.large", "no subnet of the EC2NodeClass in us-east-1c")
    ]


def test_unavailable_offerings_are_skipped_and_overrides_capped_at_60() -> None:
    options = [LaunchOption(f"c5.{i}xlarge", "spot", "us-east-1a", 0.01 * i) for i in range(1, 80)]
    result = plan(options, frozenset({("c5.1xlarge", "us-east-1a", "spot")}))
    [attempt] = result.attempts
    assert len(attempt.overrides) == MAX_OVERRIDES
    assert attempt.overrides[0].option.instance_type == "c5.2xlarge"
    assert [o.option.price for o in attempt.overrides] == sorted(o.option.price for o in attempt.overrides)
    assert result.skipped[0][1] == "offering recently returned insufficient capacity"


def _attempt() -> FleetAttempt:
    return FleetAttempt(
        "spot",
        (
            Override(LaunchOption("m6g.large", "spot", "us-east-1a", 0.03), "subnet-a", ("arm64", "standard")),
            Override(LaunchOption("m5.large", "spot", "us-east-1b", 0.04), "subnet-b", ("amd64", "standard")),
        ),
    )


def test_fleet_request_is_instant_one_instance_with_a_template_per_variant_and_tags() -> None:
    attempt = _attempt()
    request = fleet_request(
        "general-abc",
        attempt,
        {("arm64", "standard"): "nodewright-arm", ("amd64", "standard"): "nodewright-x86"},
        {"kubernetes.io/cluster/demo": "owned", "nodewright.io/nodeclaim": "general-abc"},
    )
    assert request["Type"] == "instant"
    assert request["TargetCapacitySpecification"] == {"TotalTargetCapacity": 1, "DefaultTargetCapacityType": "spot"}
    assert request["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert [c["LaunchTemplateSpecification"]["LaunchTemplateName"] for c in request["LaunchTemplateConfigs"]] == [
        "nodewright-arm",
        "nodewright-x86",
    ]
    assert request["LaunchTemplateConfigs"][0]["Overrides"] == [
        {"InstanceType": "m6g.large", "SubnetId": "subnet-a", "AvailabilityZone": "us-east-1a"}
    ]
    assert {s["ResourceType"] for s in request["TagSpecifications"]} >= {"instance", "volume"}
    assert {"Key": "nodewright.io/nodeclaim", "Value": "general-abc"} in request["TagSpecifications"][0]["Tags"]
    assert len(request["ClientToken"]) <= 64
    assert client_token("general-abc", attempt) == request["ClientToken"]
    on_demand = fleet_request(
        "general-abc", FleetAttempt("on-demand", attempt.overrides), {k: "t" for k in attempt.variants}, {}
    )
    assert on_demand["OnDemandOptions"] == {"AllocationStrategy": "lowest-price"}
    assert on_demand["ClientToken"] != request["ClientToken"]


def test_capacity_errors_mark_their_offerings_and_the_launch_is_matched_to_its_option() -> None:
    attempt = _attempt()
    response = {
        "Errors": [
            {
                "ErrorCode": "InsufficientInstanceCapacity",
                "ErrorMessage": "no capacity",
                "Lifecycle": "spot",
                "LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": "m6g.large", "SubnetId": "subnet-a"}},
            }
        ],
        "Instances": [
            {
                "InstanceIds": ["i-123"],
                "InstanceType": "m5.large",
                "Lifecycle": "spot",
                "LaunchTemplateAndOverrides": {"Overrides": {"InstanceType": "m5.large", "SubnetId": "subnet-b"}},
            }
        ],
    }
    outcome = classify_response(attempt, response, ZONE_OF.get)
    assert outcome.unavailable == ((("m6g.large", "us-east-1a", "spot"), "InsufficientInstanceCapacity"),)
    assert outcome.launched is not None
    assert outcome.launched.instance_id == "i-123"
    assert outcome.launched.option == LaunchOption("m5.large", "spot", "us-east-1b", 0.04)


def test_every_capacity_error_code_is_classified_and_others_are_not() -> None:
    attempt = _attempt()
    for code in (
        "InsufficientInstanceCapacity",
        "InsufficientHostCapacity",
        "UnfulfillableCapacity",
        "MaxSpotInstanceCountExceeded",
        "VcpuLimitExceeded",
    ):
        outcome = classify_response(attempt, {"Errors": [{"ErrorCode": code}]}, ZONE_OF.get)
        # Without an override in the error, every override of the attempt is marked.
        assert {o for o, _ in outcome.unavailable} == {
            ("m6g.large", "us-east-1a", "spot"),
            ("m5.large", "us-east-1b", "spot"),
        }, code
        assert outcome.launched is None
    other = classify_response(attempt, {"Errors": [{"ErrorCode": "InvalidParameterValue"}]}, ZONE_OF.get)
    assert other.unavailable == () and other.other == ("InvalidParameterValue",)
    throttled = classify_response(attempt, {"Errors": [{"ErrorCode": "RequestLimitExceeded"}]}, ZONE_OF.get)
    assert throttled.throttled and throttled.unavailable == ()


def _spec(**overrides: object) -> LaunchTemplateSpec:
    node_class = EC2NodeClass(name="default")
    fields: dict[str, object] = {
        "node_class": "default",
        "image_id": "ami-1",
        "instance_profile": "nodes",
        "security_group_ids": ("sg-1",),
        "user_data": "MIME",
        "block_devices": block_devices(node_class),
        "metadata_options": MetadataOptions(),
        "tags": {"kubernetes.io/cluster/demo": "owned"},
    }
    fields.update(overrides)
    return LaunchTemplateSpec(**fields)  # type: ignore[arg-type]


def test_launch_template_name_is_a_stable_content_hash() -> None:
    assert _spec().name == _spec().name
    assert _spec().name.startswith("nodewright-")
    for change in (
        {"image_id": "ami-2"},
        {"user_data": "other"},
        {"metadata_options": MetadataOptions(http_put_response_hop_limit=2)},
        {"node_class": "gpu"},
        {"reservation_id": "cr-1"},
    ):
        assert _spec(**change).name != _spec().name, change
    data = _spec().data()
    assert data["BlockDeviceMappings"] == [
        {
            "DeviceName": "/dev/xvda",
            "Ebs": {"VolumeType": "gp3", "Encrypted": True, "DeleteOnTermination": True, "VolumeSize": 20},
        }
    ]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    public = _spec(associate_public_ip_address=False).data()
    assert "SecurityGroupIds" not in public and public["NetworkInterfaces"][0]["Groups"] == ["sg-1"]


def test_alias_parameters_follow_the_public_paths() -> None:
    assert (
        alias_parameter("al2023@latest", "1.31", "arm64", "standard")
        == "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/arm64/standard/recommended/image_id"
    )
    assert (
        alias_parameter("bottlerocket@latest", "1.31", "amd64", "nvidia")
        == "/aws/service/bottlerocket/aws-k8s-1.31-nvidia/x86_64/latest/image_id"
    )
    assert alias_parameter("bottlerocket@v1.20.0", "1.31", "amd64", "standard").endswith("/x86_64/1.20.0/image_id")


def test_errors_that_say_a_resolved_resource_is_gone_are_told_from_capacity_and_template_errors() -> None:
    from nodewright.launch.fleet import resolution_gone

    assert resolution_gone(["InvalidSubnetID.NotFound: The subnet ID 'subnet-1' does not exist"])
    assert resolution_gone(["An error occurred (InvalidGroup.NotFound) when calling the CreateFleet operation: x"])
    assert resolution_gone(["InvalidAMIID.Unavailable: the image is deregistered"])
    assert resolution_gone(["InvalidParameterValue: Value (p) for parameter iamInstanceProfile.name is invalid"])
    assert not resolution_gone(["InsufficientInstanceCapacity: none left", "InvalidParameterValue: bad template"])
    assert not resolution_gone([])
