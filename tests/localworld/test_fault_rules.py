"""Fault rules and the CreateFleet rewrite the moto server applies at the wire."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from nodewright.localworld.faults import (
    Faults,
    Rejected,
    add_errors_to_response,
    all_rejected_response,
    rewrite_create_fleet,
)

ZONES = {"subnet-a": "us-east-1a", "subnet-b": "us-east-1b"}


def _params(capacity_type: str = "spot") -> dict[str, str]:
    return {
        "Action": "CreateFleet",
        "Type": "instant",
        "TargetCapacitySpecification.DefaultTargetCapacityType": capacity_type,
        "LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId": "lt-1",
        "LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version": "$Latest",
        "LaunchTemplateConfigs.1.Overrides.1.InstanceType": "m5.large",
        "LaunchTemplateConfigs.1.Overrides.1.SubnetId": "subnet-a",
        "LaunchTemplateConfigs.1.Overrides.2.InstanceType": "m5.large",
        "LaunchTemplateConfigs.1.Overrides.2.SubnetId": "subnet-b",
        "LaunchTemplateConfigs.1.Overrides.3.InstanceType": "c5.large",
        "LaunchTemplateConfigs.1.Overrides.3.SubnetId": "subnet-a",
    }


def _rewrite(faults: Faults, params: dict[str, str]) -> tuple[dict[str, str], list[Rejected]]:
    return rewrite_create_fleet(params, faults, ZONES.__getitem__, lambda spec: "t3.micro")


def test_unavailable_override_is_removed_and_survivors_renumbered() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "m5.large", "zone": "us-east-1a", "capacity_type": "spot"}]})
    out, rejected = _rewrite(faults, _params())
    assert [(r.instance_type, r.zone, r.capacity_type) for r in rejected] == [("m5.large", "us-east-1a", "spot")]
    assert out["LaunchTemplateConfigs.1.Overrides.1.SubnetId"] == "subnet-b"
    assert out["LaunchTemplateConfigs.1.Overrides.2.InstanceType"] == "c5.large"
    assert "LaunchTemplateConfigs.1.Overrides.3.InstanceType" not in out
    assert out["LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId"] == "lt-1"


def test_rules_match_capacity_type_and_wildcards() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "m5.large", "zone": "us-east-1a", "capacity_type": "spot"}]})
    _, rejected = _rewrite(faults, _params("on-demand"))
    assert rejected == []
    faults.replace({"unavailable": [{"instance_type": "*", "zone": "us-east-1a"}]})
    out, rejected = _rewrite(faults, _params("on-demand"))
    assert len(rejected) == 2
    assert not any(k.endswith("Overrides.2.InstanceType") for k in out)


def test_everything_unavailable_leaves_no_config() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "*"}]})
    out, rejected = _rewrite(faults, _params())
    assert len(rejected) == 3
    assert not any(k.startswith("LaunchTemplateConfigs.") for k in out)
    doc = ET.fromstring(all_rejected_response(rejected))
    codes = [e.text for e in doc.iter() if e.tag.endswith("errorCode")]
    assert codes == ["InsufficientInstanceCapacity"] * 3


def test_errors_are_inserted_into_a_moto_response() -> None:
    faults = Faults()
    faults.replace({"unavailable": [{"instance_type": "c5.large"}]})
    _, rejected = _rewrite(faults, _params())
    body = '<CreateFleetResponse xmlns="x"><fleetId>fleet-1</fleetId><errorSet/></CreateFleetResponse>'
    merged = add_errors_to_response(body, rejected)
    assert merged.count("<errorSet>") == 1 and "<errorSet/>" not in merged
    assert "<instanceType>c5.large</instanceType>" in merged
    assert "<availabilityZone>us-east-1a</availabilityZone>" in merged


def test_throttle_counts_down_per_action_then_wildcard() -> None:
    faults = Faults()
    faults.replace({"throttle": {"CreateFleet": 1, "*": 1}})
    assert faults.take_throttle("CreateFleet")
    assert faults.take_throttle("DescribeSubnets")  # the wildcard's one call
    assert not faults.take_throttle("CreateFleet")
    assert faults.to_json()["throttle"] == {"CreateFleet": 0, "*": 0}
