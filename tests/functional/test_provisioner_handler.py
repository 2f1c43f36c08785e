"""The provisioner handler against moto (EC2, SSM, EKS, IAM, DynamoDB) with an in-memory Cluster port.

The account is seeded as the local world seeds it (discovery-tagged VPC, subnets and security group, the
public AMI parameters with real moto AMIs behind them, an EKS cluster record), plus what the stack creates
(node role and instance profile, the DynamoDB table). The handler runs exactly as in Lambda, except that
its Cluster port is in memory: the end-to-end tests use the real API server.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from handlers import Context, load_handler
from moto import mock_aws

from nodewright.adapters.memory import InMemoryCluster
from nodewright.localworld.motoserver import seed
from nodewright.localworld.userdata import parse_user_data
from nodewright.service.batch import PayloadError
from nodewright.tags import KARPENTER_TAGS

REGION = "us-east-1"
CLUSTER = "func"
UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
K8S = "1.31"


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
        "NODEWRIGHT_CLUSTER": CLUSTER,
        "NODEWRIGHT_TABLE": "nodewright",
        "NODEWRIGHT_NODE_ROLE": f"{CLUSTER}-node",
        "NODEWRIGHT_INSTANCE_PROFILE": f"{CLUSTER}-node",
        "NODEWRIGHT_CATALOG": "snapshot",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "nodewright",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        ec2 = boto3.client("ec2", region_name=REGION)
        discovery = [{"Key": "karpenter.sh/discovery", "Value": CLUSTER}]
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnets = {}
        for i, zone in enumerate(("us-east-1a", "us-east-1b", "us-east-1c")):
            subnets[zone] = ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.0.{i * 32}.0/19",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": discovery}],
            )["Subnet"]["SubnetId"]
        # An untagged subnet in a fourth zone: selectors must not pick it.
        ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.96.0/19", AvailabilityZone="us-east-1d")
        sg = ec2.create_security_group(
            GroupName="nodes",
            Description="nodes",
            VpcId=vpc,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": discovery}],
        )["GroupId"]
        iam = boto3.client("iam", region_name=REGION)
        trust = {
            "Statement": [
                {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
            ]
        }
        role = iam.create_role(RoleName=f"{CLUSTER}-node", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
        iam.create_instance_profile(InstanceProfileName=f"{CLUSTER}-node")
        iam.add_role_to_instance_profile(InstanceProfileName=f"{CLUSTER}-node", RoleName=f"{CLUSTER}-node")
        boto3.client("eks", region_name=REGION).create_cluster(
            name=CLUSTER,
            version=K8S,
            roleArn=role,
            resourcesVpcConfig={"subnetIds": list(subnets.values())},
            kubernetesNetworkConfig={"serviceIpv4Cidr": "10.100.0.0/16"},
        )
        amis = seed(
            {
                "region": REGION,
                "k8s_versions": [K8S],
                "cluster": CLUSTER,
                "endpoint": "https://127.0.0.1:6443",
                "ca_data": base64.b64encode(b"-----BEGIN CERTIFICATE-----\n").decode(),
            }
        )["amis"]
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        dynamodb.create_table(
            TableName="nodewright",
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield {"ec2": ec2, "subnets": subnets, "sg": sg, "amis": amis, "dynamodb": dynamodb}


def manifests(
    *pods: dict[str, Any], role: str = f"{CLUSTER}-node", limits: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    pool: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "general"},
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "web"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["m5", "m6g", "c5", "c6g"],
                        },
                    ],
                    "taints": [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}],
                },
            }
        },
    }
    if limits:
        pool["spec"]["limits"] = limits
    node_class = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": role,
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "tags": {"cost-center": "42"},
        },
    }
    return [pool, node_class, *pods]


def pod(name: str, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "containers": [{"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
    }
    body.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "web", "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": body,
        "status": {"phase": "Pending", "conditions": [UNSCHEDULABLE]},
    }


def event(cluster: InMemoryCluster, batch_id: str = "batch-1", name: str = CLUSTER) -> dict[str, Any]:
    """The forwarder's payload for what is pending: hints, not pods."""
    return {
        "batch_id": batch_id,
        "cluster": name,
        "sent_at": "2026-12-02T11:00:00Z",
        "pods": [
            {k: d["metadata"][k] for k in ("namespace", "name", "uid", "resourceVersion")}
            for d in cluster.of_kind("Pod")
            if not d["spec"].get("nodeName")
        ],
    }


def instances(ec2: Any) -> list[dict[str, Any]]:
    found = []
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[{"Name": "tag-key", "Values": [f"kubernetes.io/cluster/{CLUSTER}"]}]
    )
    for page in pages:
        for reservation in page["Reservations"]:
            found.extend(reservation["Instances"])
    return found


def test_the_handler_launches_tagged_instances_with_bootstrap_user_data_and_records_nodeclaims(
    account: dict[str, Any],
) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(
        manifests(*(pod(f"web-{i}") for i in range(3)), pod("arm-0", nodeSelector={"kubernetes.io/arch": "arm64"}))
    )
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())

    assert response["cluster"] == CLUSTER
    launched = response["nodeclaims"]
    assert launched and {p for c in launched for p in c["pods"]} == {"web/web-0", "web/web-1", "web/web-2", "web/arm-0"}
    ec2 = account["ec2"]
    running = {i["InstanceId"]: i for i in instances(ec2)}
    assert set(running) == {c["instance_id"] for c in launched}
    for claim in launched:
        instance = running[claim["instance_id"]]
        tags = {t["Key"]: t["Value"] for t in instance["Tags"]}
        assert tags["nodewright.io/nodeclaim"] == claim["name"]
        assert tags["nodewright.io/nodepool"] == "general"
        assert tags["nodewright.io/cluster"] == CLUSTER
        # None of Karpenter's ownership tags: its garbage collection must never take this instance for its own.
        assert not set(tags) & set(KARPENTER_TAGS)
        assert tags["cost-center"] == "42"
        assert instance["InstanceType"] == claim["instance_type"]
        assert instance["Placement"]["AvailabilityZone"] == claim["zone"]
        assert instance["SubnetId"] == account["subnets"][claim["zone"]]
        # The AMI matches the instance's architecture (from the public SSM parameter for it).
        arch = "arm64" if instance["Architecture"] == "arm64" else "x86_64"
        parameter = f"/aws/service/eks/optimized-ami/{K8S}/amazon-linux-2023/{arch}/standard/recommended/image_id"
        assert instance["ImageId"] == account["amis"][parameter]
        user_data = ec2.describe_instance_attribute(InstanceId=claim["instance_id"], Attribute="userData")
        boot = parse_user_data(user_data["UserData"]["Value"])
        assert boot.cluster_name == CLUSTER
        assert boot.labels["team"] == "web" and boot.labels["karpenter.sh/capacity-type"] == "on-demand"
        assert {(t.key, t.value, t.effect) for t in boot.taints} == {
            ("dedicated", "web", "NoSchedule"),
            ("karpenter.sh/unregistered", "", "NoExecute"),
        }
        record = cluster.nodeclaim(claim["name"])
        assert record is not None
        assert record["status"]["providerID"] == f"aws:///{claim['zone']}/{claim['instance_id']}"
    arm = next(c for c in launched if "web/arm-0" in c["pods"])
    assert running[arm["instance_id"]]["Architecture"] == "arm64"
    templates = ec2.describe_launch_templates()["LaunchTemplates"]
    assert templates and all(t["LaunchTemplateName"].startswith("nodewright-") for t in templates)
    assert {e.reason for e in cluster.events} == {"Nominated"}


def test_a_retried_delivery_that_launched_is_answered_from_its_record_and_launches_nothing_more(
    account: dict[str, Any],
) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(*(pod(f"web-{i}") for i in range(5))))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    first = handler.handler(event(cluster), Context())
    count = len(instances(account["ec2"]))
    second = handler.handler(event(cluster), Context())
    assert second["replayed"] is True
    assert second["nodeclaims"] == first["nodeclaims"] and second["summary"] == first["summary"]
    assert len(instances(account["ec2"])) == count == len(first["nodeclaims"])
    # The record is in the stack's table, for a short window only.
    [item] = [i for i in account["dynamodb"].scan(TableName="nodewright")["Items"] if i["pk"]["S"] == "delivery"]
    assert item["sk"]["S"] == "batch-1"
    assert 0 < int(item["expires_at"]["N"]) - time.time() <= 15 * 60
    # The next delivery of the same pods (a new id) is evaluated: they wait for the claims in flight.
    third = handler.handler(event(cluster, "batch-2"), Context())
    assert "replayed" not in third
    assert third["nodeclaims"] == [] and third["summary"]["waiting"] == 5
    assert len(instances(account["ec2"])) == count


def test_a_delivery_that_launched_nothing_is_evaluated_again_when_retried(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    pool, node_class, pending = manifests(pod("web-0"))
    cluster = InMemoryCluster([node_class, pending])
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    first = handler.handler(event(cluster), Context())
    [refused] = [d for d in first["decisions"] if d["action"] == "unschedulable"]
    assert "no NodePool" in refused["reason"]
    assert not [i for i in account["dynamodb"].scan(TableName="nodewright")["Items"] if i["pk"]["S"] == "delivery"]
    # The NodePool arrives; the same delivery, retried, launches.
    cluster.put(pool)
    again = handler.handler(event(cluster), Context())
    assert "replayed" not in again and [c["pods"] for c in again["nodeclaims"]] == [["web/web-0"]]


def test_a_forged_payload_launches_only_what_the_pods_in_the_api_server_need(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0", cpu="100m"), pod("gone", cpu="1")))
    cluster.objects.pop(("Pod", "web", "gone"))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    forged = {
        "batch_id": "forged",
        "cluster": CLUSTER,
        "pods": [
            # A pod object with a forged spec: only its name is read.
            {
                "metadata": {"name": "web-0", "namespace": "web"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "60", "memory": "200Gi"}}}]},
            },
            {"namespace": "web", "name": "gone"},
            {"namespace": "kube-system", "name": "made-up"},
        ],
    }
    response = handler.handler(forged, Context())
    [claim] = response["nodeclaims"]
    types = account["ec2"].describe_instance_types(InstanceTypes=[claim["instance_type"]])["InstanceTypes"]
    assert types[0]["VCpuInfo"]["DefaultVCpus"] <= 2
    skipped = {d["subject"] for d in response["decisions"] if d["action"] == "skipped"}
    assert {"pod/web/gone", "pod/kube-system/made-up"} <= skipped


def test_unavailable_offerings_from_the_table_are_not_launched(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0")))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    probe = handler.handler(event(cluster, "probe"), Context())
    [chosen] = probe["nodeclaims"]
    # Forget the probe's claim and instance; mark its offering unavailable as a capacity error would.
    cluster.delete_nodeclaim(chosen["name"])
    account["ec2"].terminate_instances(InstanceIds=[chosen["instance_id"]])
    from nodewright.adapters.dynamodb_state import DynamoDBState

    DynamoDBState("nodewright", account["dynamodb"]).mark_unavailable(
        {(chosen["instance_type"], chosen["zone"], "on-demand"): "InsufficientInstanceCapacity"}, 1e10, 180
    )
    again = handler.handler(event(cluster, "batch-2"), Context())
    [claim] = again["nodeclaims"]
    assert (claim["instance_type"], claim["zone"]) != (chosen["instance_type"], chosen["zone"])


def test_limits_cap_the_launch_and_refusals_carry_the_reason(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(*(pod(f"web-{i}", cpu="2") for i in range(12)), limits={"cpu": "8"}))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())
    vcpus = {
        t["InstanceType"]: t["VCpuInfo"]["DefaultVCpus"]
        for t in account["ec2"].describe_instance_types(
            InstanceTypes=sorted({c["instance_type"] for c in response["nodeclaims"]})
        )["InstanceTypes"]
    }
    assert 0 < sum(vcpus[c["instance_type"]] for c in response["nodeclaims"]) <= 8
    refused = [d for d in response["decisions"] if d["action"] == "unschedulable"]
    assert refused and all("limits" in d["reason"] or "limit" in d["reason"] for d in refused)


def test_a_batch_for_another_cluster_is_rejected_before_anything_runs(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0")))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    with pytest.raises(handler.WrongClusterError, match="other"):
        handler.handler(event(cluster, name="other"), Context())
    assert instances(account["ec2"]) == []
    with pytest.raises(PayloadError, match="batch_id: missing or empty"):
        handler.handler({"cluster": CLUSTER, "pods": []}, Context())


def test_a_node_class_naming_another_role_gets_a_clear_decision(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0"), role="admin"))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())
    [invalid] = [d for d in response["decisions"] if d["action"] == "invalid"]
    assert f"role admin is not a node role nodewright may pass to EC2 ({CLUSTER}-node)" in invalid["reason"]
    assert "nodeRoles" in invalid["reason"]
    assert response["nodeclaims"] == [] and instances(account["ec2"]) == []


def _role(name: str) -> None:
    trust = {
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]
    }
    boto3.client("iam", region_name=REGION).create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(trust))


def test_a_node_role_from_the_stack_context_gets_a_tagged_instance_profile_of_its_own(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _role("KarpenterNodeRole-func")
    monkeypatch.setenv("NODEWRIGHT_NODE_ROLES", "KarpenterNodeRole-func")
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0"), role="KarpenterNodeRole-func"))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())
    assert len(response["nodeclaims"]) == 1

    iam = boto3.client("iam", region_name=REGION)

    def ours() -> list[dict[str, Any]]:
        return [p for p in iam.list_instance_profiles()["InstanceProfiles"] if p["Path"] == "/nodewright/"]

    [profile] = ours()
    assert [r["RoleName"] for r in profile["Roles"]] == ["KarpenterNodeRole-func"]
    described = iam.get_instance_profile(InstanceProfileName=profile["InstanceProfileName"])["InstanceProfile"]
    tags = {t["Key"]: t["Value"] for t in described["Tags"]}
    assert tags["nodewright.io/cluster"] == CLUSTER
    # The launch template the instance came from names that profile (moto does not copy it onto the instance).
    ec2 = account["ec2"]
    templates = ec2.describe_launch_templates()["LaunchTemplates"]
    assert templates
    for template in templates:
        versions = ec2.describe_launch_template_versions(LaunchTemplateId=template["LaunchTemplateId"])
        for version in versions["LaunchTemplateVersions"]:
            assert version["LaunchTemplateData"]["IamInstanceProfile"] == {"Name": profile["InstanceProfileName"]}

    # A second batch (a warm container, or a cold one) reuses the profile instead of making another.
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    cluster.put(pod("web-1"))
    handler.handler(event(cluster, batch_id="batch-2"), Context())
    assert len(ours()) == 1


def test_an_instance_profile_is_used_only_when_it_holds_a_node_role(account: dict[str, Any]) -> None:
    iam = boto3.client("iam", region_name=REGION)
    _role("admin")
    iam.create_instance_profile(InstanceProfileName="admin-profile")
    iam.add_role_to_instance_profile(InstanceProfileName="admin-profile", RoleName="admin")
    handler = load_handler("provisioner")
    node_classes = manifests(pod("web-0"))
    node_classes[1]["spec"].pop("role")
    node_classes[1]["spec"]["instanceProfile"] = "admin-profile"
    cluster = InMemoryCluster(node_classes)
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())
    [invalid] = [d for d in response["decisions"] if d["action"] == "invalid"]
    assert "instanceProfile admin-profile holds role admin" in invalid["reason"]
    assert instances(account["ec2"]) == []

    # The stack's own profile (what Karpenter users often name) is fine.
    node_classes[1]["spec"]["instanceProfile"] = f"{CLUSTER}-node"
    cluster = InMemoryCluster(node_classes)
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    assert len(handler.handler(event(cluster, batch_id="batch-2"), Context())["nodeclaims"]) == 1


def test_the_live_catalog_works_against_moto(account: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEWRIGHT_CATALOG", "live")
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0")))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    response = handler.handler(event(cluster), Context())
    [claim] = response["nodeclaims"]
    assert claim["instance_type"].split(".")[0] in ("m5", "m6g", "c5", "c6g")
    assert len(instances(account["ec2"])) == 1


def test_a_registration_payload_from_the_forwarder_takes_the_unregistered_taint_off(account: dict[str, Any]) -> None:
    from nodewright.forwarder.registration import Registrations, registration_payload

    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0")))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    [claim] = handler.handler(event(cluster), Context())["nodeclaims"]
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "ip-10-0-0-9.ec2.internal", "uid": "node-uid", "resourceVersion": "7"},
        "spec": {
            "providerID": f"aws:///{claim['zone']}/{claim['instance_id']}",
            "taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}],
        },
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"}},
    }
    cluster.put(node)
    # The payload the forwarder builds for this node, through the handler's parser and idempotency.
    registrations = Registrations()
    registrations.observe(node)
    payload = registration_payload(registrations.take(0.0), CLUSTER, "2026-12-02T11:00:05.000000Z")
    response = handler.handler(json.loads(payload.body), Context())
    assert response["batch_id"] == payload.batch_id
    assert response["summary"] == {"initialized": 1, "registered": 1} and response["nodeclaims"] == []
    # The unregistered taint is off; the NodePool's taint, which this node joined without, is on (Karpenter's
    # registration syncs the NodeClaim's taints onto the node).
    taints = cluster.objects[("Node", "", "ip-10-0-0-9.ec2.internal")]["spec"]["taints"]
    assert taints == [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
    record = cluster.nodeclaim(claim["name"])
    assert record is not None and record["status"]["nodeName"] == "ip-10-0-0-9.ec2.internal"
    # Nothing was launched for it.
    assert len(instances(account["ec2"])) == 1


def test_pod_events_in_a_payload_are_written_only_where_the_api_server_confirms_them(account: dict[str, Any]) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests(pod("web-0")))
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    [launched] = handler.handler(event(cluster), Context())["nodeclaims"]
    provider = f"aws:///{launched['zone']}/{launched['instance_id']}"
    labels = {"karpenter.sh/nodepool": "general"}
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1", "labels": labels},
            "spec": {"providerID": provider},
        }
    )
    # A managed node group's node: not labelled as nodewright's, whatever a report says about it.
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "mng", "labels": {}},
            "spec": {"providerID": provider},
        }
    )
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 30))
    ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 3600))
    reports = [
        {"nodeclaim": launched["name"], "node": "mng", "at": stamp},
        {"nodeclaim": launched["name"], "node": "n1", "at": ahead},
        {"nodeclaim": "nobody", "node": "n1", "at": stamp},
    ]
    payload = {"batch_id": "events-1", "cluster": CLUSTER, "pods": [], "pod_events": reports}
    response = handler.handler(payload, Context())
    # Pod events alone: no lifecycle pass, nothing planned; every report refused, nothing written.
    assert response == {"cluster": CLUSTER, "batch_id": "events-1", "pod_events": {"refused": 3}}
    assert "lastPodEventTime" not in cluster.nodeclaim(launched["name"])["status"]
    # Riding along with a retried pod batch (answered from its record): the confirmed report is written.
    retried = {**event(cluster), "pod_events": [{"nodeclaim": launched["name"], "node": "n1", "at": stamp}]}
    response = handler.handler(retried, Context())
    assert response["replayed"] is True and response["pod_events"] == {"recorded": 1}
    assert cluster.nodeclaim(launched["name"])["status"]["lastPodEventTime"] == stamp


class _Died(Exception):
    """The Lambda ended here (a time-out, an out-of-memory kill)."""


def test_a_provisioner_that_died_after_create_fleet_leaves_an_instance_its_nodeclaim_adopts(
    account: dict[str, Any],
) -> None:
    handler = load_handler("provisioner")
    # NodeClaims are stamped ten minutes ago: the claim is past the launch time-out when the pod comes again.
    cluster = InMemoryCluster(manifests(pod("web-0")), clock=lambda: time.time() - 600)
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    update = cluster.update_nodeclaim

    def dying(*args: Any, **kwargs: Any) -> None:
        cluster.update_nodeclaim = update  # type: ignore[method-assign]
        raise _Died

    cluster.update_nodeclaim = dying  # type: ignore[method-assign]
    with pytest.raises(_Died):
        handler.handler(event(cluster), Context())
    [launched] = instances(account["ec2"])
    [claim] = cluster.of_kind("NodeClaim")
    assert not (claim.get("status") or {}).get("providerID")

    again = handler.handler(event(cluster, batch_id="batch-2"), Context())
    name = claim["metadata"]["name"]
    assert [d["subject"] for d in again["decisions"] if d["action"] == "adopted"] == [f"nodeclaim/{name}"]
    assert not again["nodeclaims"]  # the pod waits on the adopted claim: nothing launched twice
    [still] = instances(account["ec2"])
    assert still["InstanceId"] == launched["InstanceId"] and still["State"]["Name"] == "running"
    recorded = cluster.nodeclaim(name)
    assert recorded is not None and recorded["status"]["providerID"].endswith(launched["InstanceId"])


def test_forged_hints_in_many_namespaces_are_read_again_at_most_the_cap_and_counted(
    account: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    handler = load_handler("provisioner")
    cluster = InMemoryCluster(manifests())
    handler._RUNTIME = handler.build_runtime(cluster=cluster)
    forged = [{"namespace": f"ns-{i}", "name": "made-up", "uid": f"u-{i}", "resourceVersion": "9"} for i in range(30)]
    payload = {"batch_id": "forged", "cluster": CLUSTER, "sent_at": "2026-12-02T11:00:00Z", "pods": forged}
    response = handler.handler(payload, Context())
    reads = [r for r in cluster.reads if r.startswith("pending_pods")]
    assert len(reads) == 8 and not response["nodeclaims"]
    [summary] = [d for d in response["decisions"] if d["subject"] == "hints"]
    assert summary["details"] == {"namespaces": 22, "pods": 22}
    emitted = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"CloudWatchMetrics"' in line]
    assert [m["HintNamespacesNotReread"] for m in emitted if "HintNamespacesNotReread" in m] == [[22.0]]


@pytest.mark.parametrize("incremental", ["", "false"])
def test_without_a_cluster_port_the_eks_endpoint_comes_from_describe_cluster_read_in_the_background(
    account: dict[str, Any], monkeypatch: pytest.MonkeyPatch, incremental: str
) -> None:
    """build_runtime reads the cluster's endpoint (eks:DescribeCluster against the seeded record) on another thread
    while it imports the planning code, and hands the provisioner what that read built: with the process's
    informers (its Nodes and NodeClaims kept between batches) unless NODEWRIGHT_INCREMENTAL_READS is false."""
    import threading

    from nodewright.adapters.informer import informers_for, reset
    from nodewright.adapters.kubernetes_cluster import KubernetesCluster

    monkeypatch.setenv("NODEWRIGHT_INCREMENTAL_READS", incremental)
    reset()
    handler = load_handler("provisioner")
    built: list[tuple[str, Any]] = []
    original = KubernetesCluster.from_eks.__func__  # type: ignore[attr-defined]

    def recording(cls: Any, name: str, eks: Any, tokens: Any, incremental: bool = False) -> Any:
        made = original(cls, name, eks, tokens, incremental)
        built.append((threading.current_thread().name, made))
        return made

    monkeypatch.setattr(KubernetesCluster, "from_eks", classmethod(recording))
    runtime = handler.build_runtime()
    [(thread, made)] = built
    assert thread.startswith("describe-cluster") and thread != threading.main_thread().name
    assert made.api._base == "https://127.0.0.1:6443"  # the seeded cluster record's
    assert runtime.cluster_name == CLUSTER
    if incremental == "false":
        assert made._informers is None
    else:  # the process's, by endpoint: the next invocation of a warm container finds what this one followed
        assert made._informers is not None
        assert any(made._informers is informers_for(key) for key in _informer_keys())
    reset()


def _informer_keys() -> list[str]:
    from nodewright.adapters import informer

    return list(informer._BY_ENDPOINT)


def test_a_describe_cluster_that_fails_fails_the_set_up(account: dict[str, Any]) -> None:
    """The background read's error is build_runtime's, as when the read ran in line."""
    from botocore.exceptions import ClientError

    handler = load_handler("provisioner")
    boto3.client("eks", region_name=REGION).delete_cluster(name=CLUSTER)
    with pytest.raises(ClientError, match="ResourceNotFoundException"):
        handler.build_runtime()
