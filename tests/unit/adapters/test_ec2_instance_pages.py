"""How `Ec2Cloud` reads many instances: DescribeInstances in pages of 1,000 (EC2's most, and allowed with filters),
not the 100 moto and the SDK's callers otherwise get, so a 3,000-node planner tick lists its fleet in 3 calls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from nodewright import tags
from nodewright.adapters.ec2_launcher import LIST_PAGE, Ec2Cloud

REGION, CLUSTER = "us-east-1", "pages"


@pytest.fixture
def ec2(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for key, value in {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": REGION}.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield boto3.client("ec2", region_name=REGION)


def launch(ec2: Any, count: int) -> list[str]:
    """`count` instances of the cluster, one reservation each (as CreateFleet's launches are): moto pages by
    reservation."""
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ids = []
    for n in range(count):
        owned = tags.launch_tags(CLUSTER, "general", "default", f"general-{n:04x}")
        spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in owned.items()]}]
        [instance] = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=spec)["Instances"]
        ids.append(instance["InstanceId"])
    return ids


def test_the_clusters_instances_are_listed_and_described_in_pages_of_a_thousand(ec2: Any) -> None:
    ids = launch(ec2, 101)
    calls: list[dict[str, Any]] = []
    ec2.meta.events.register("provide-client-params.ec2.DescribeInstances", lambda params, **_: calls.append(params))
    cloud = Ec2Cloud(CLUSTER, "node", "node", ec2, None, None)

    assert sorted(i.id for i in cloud.capacity_instances()) == sorted(ids)
    assert [c.get("MaxResults") for c in calls] == [LIST_PAGE]  # one call: moto's own page is 100
    calls.clear()
    assert len(cloud.describe_instances(ids)) == 101 and len(calls) == 1
    calls.clear()
    assert len(cloud.instances_of_nodeclaims([f"general-{n:04x}" for n in range(101)])) == 101 and len(calls) == 1
