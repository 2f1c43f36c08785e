"""An EC2NodeClass's status: Karpenter's conditions, what a class resolved to, and only a change is written."""

from __future__ import annotations

from nodewright.launch.template import ResolvedNodeClass, Subnet
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeclass_status import (
    AMIS_READY,
    INSTANCE_PROFILE_READY,
    READY,
    SECURITY_GROUPS_READY,
    SUBNETS_READY,
    failed_status,
    needs_write,
    resolved_status,
)


def _resolved() -> ResolvedNodeClass:
    return ResolvedNodeClass(
        node_class=EC2NodeClass(name="default"),
        subnets=(Subnet("subnet-a", "us-east-1a", 100, "use1-az1"), Subnet("subnet-b", "us-east-1b")),
        security_group_ids=("sg-1",),
        images={},
        instance_profile="nodewright_demo_123",
    )


def test_a_resolved_class_is_ready_with_its_subnets_groups_and_profile() -> None:
    conditions, fields = resolved_status(_resolved())
    assert {(c.type, c.status) for c in conditions} == {
        (SUBNETS_READY, "True"),
        (SECURITY_GROUPS_READY, "True"),
        (AMIS_READY, "True"),
        (INSTANCE_PROFILE_READY, "True"),
        (READY, "True"),
    }
    assert fields == {
        "subnets": [
            {"id": "subnet-a", "zone": "us-east-1a", "zoneID": "use1-az1"},
            {"id": "subnet-b", "zone": "us-east-1b"},
        ],
        "securityGroups": [{"id": "sg-1"}],
        "instanceProfile": "nodewright_demo_123",
    }


def test_a_failure_blames_its_step_passes_the_earlier_ones_and_leaves_the_later_unchecked() -> None:
    by_type = {c.type: c for c in failed_status(SECURITY_GROUPS_READY, "no security group matches")}
    assert by_type[SUBNETS_READY].status == "True"
    assert (by_type[SECURITY_GROUPS_READY].status, by_type[SECURITY_GROUPS_READY].reason) == (
        "False",
        "SecurityGroupsNotReady",
    )
    assert by_type[SECURITY_GROUPS_READY].message == "no security group matches"
    assert by_type[AMIS_READY].status == by_type[INSTANCE_PROFILE_READY].status == "Unknown"
    assert (by_type[READY].status, by_type[READY].reason) == ("False", "UnhealthyDependents")
    assert by_type[READY].message == "no security group matches"


def test_a_failure_no_step_is_blamed_for_sets_ready_only() -> None:
    [ready] = failed_status("", "no IAM client")
    assert (ready.type, ready.status, ready.reason, ready.message) == (
        READY,
        "False",
        "ResolutionFailed",
        "no IAM client",
    )


def test_only_a_changed_status_is_written() -> None:
    conditions, fields = resolved_status(_resolved())
    written = {
        "status": {
            **fields,
            "conditions": [
                {
                    "type": c.type,
                    "status": c.status,
                    "reason": c.reason,
                    "message": c.message,
                    "lastTransitionTime": "x",
                }
                for c in conditions
            ],
        }
    }
    assert needs_write({}, conditions, fields)
    assert not needs_write(written, conditions, fields)
    assert needs_write(written, conditions, {**fields, "instanceProfile": "other"})
    assert needs_write(written, failed_status(INSTANCE_PROFILE_READY, "role admin is not a node role"), {})
