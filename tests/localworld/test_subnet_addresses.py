"""The local world's fix to moto: a subnet hands out each private address once, however many launches run at once."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Iterator

import boto3
from moto import mock_aws
from moto.backends import get_backend

from nodewright.localworld.motoserver import serialize_subnet_addresses


def slow_hosts(cidr: ipaddress.IPv4Network) -> Iterator[ipaddress.IPv4Address]:
    """The subnet's hosts, each a moment late, as under a loaded machine: unserialized callers meet inside it."""
    for host in cidr.hosts():
        time.sleep(0.001)
        yield host


@mock_aws
def test_parallel_launches_get_distinct_addresses() -> None:
    serialize_subnet_addresses()
    ec2 = boto3.client("ec2", region_name="us-east-1")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnet_id = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24")["Subnet"]["SubnetId"]
    subnet = get_backend("ec2")["123456789012"]["us-east-1"].get_subnet(subnet_id)
    hosts = slow_hosts(subnet.cidr)
    subnet._base_avail_ip_iterator = lambda: hosts
    addresses: list[str] = []
    failures: list[Exception] = []

    def launch() -> None:
        try:
            for _ in range(5):
                addresses.append(subnet.get_available_subnet_ip(object()))
        except Exception as error:  # the failure moto gives unserialized
            failures.append(error)

    threads = [threading.Thread(target=launch) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(set(addresses)) == len(addresses) == 40
