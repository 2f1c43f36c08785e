"""Template tests: the synthesized stack has exactly the resources, settings and permissions intended.

The IAM tests read every statement of every policy attached to the provisioner's role and check the
conditions the design demands (cluster tag in the request or on the resource, ec2:CreateAction,
iam:PassedToService) and that no action outside the intended set is granted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template
from conftest import CLUSTER, Synth, synth

from nodewright import settings
from nodewright.adapters import aws_sdk

# nodewright's own tags (nodewright.tags): the cluster's and a NodePool's, in the request or on the resource.
REQUEST_TAGGED = {
    "StringEquals": {"aws:RequestTag/nodewright.io/cluster": CLUSTER},
    "StringLike": {"aws:RequestTag/nodewright.io/nodepool": "*"},
}
RESOURCE_TAGGED = {
    "StringEquals": {"aws:ResourceTag/nodewright.io/cluster": CLUSTER},
    "StringLike": {"aws:ResourceTag/nodewright.io/nodepool": "*"},
}
CREATED_BY_LAUNCH = {"instance", "volume", "fleet", "network-interface", "spot-instances-request"}
LAUNCH = {"ec2:RunInstances", "ec2:CreateFleet"}
EXPECTED_ACTIONS = {
    "ec2:RunInstances",
    "ec2:CreateFleet",
    "ec2:CreateLaunchTemplate",
    "ec2:CreateTags",
    "ec2:TerminateInstances",
    "ec2:DeleteLaunchTemplate",
    "ec2:Describe*",
    "iam:PassRole",
    "ssm:GetParameter",
    "ssm:GetParameters",
    "pricing:GetProducts",
    "eks:DescribeCluster",
    "iam:GetInstanceProfile",
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:Query",
    "dynamodb:Scan",
    "dynamodb:ConditionCheckItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:DescribeTable",
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
}
# Actions that AWS only authorizes on "*" (no resource-level permissions).
STAR_ONLY = {"ec2:Describe*", "pricing:GetProducts", "xray:PutTraceSegments", "xray:PutTelemetryRecords"}


def render(value: Any) -> str:
    """An intrinsic-function value as a readable string: Fn::Join concatenated, Ref/GetAtt as ${...}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(render(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + str(value["Ref"]) + "}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    raise AssertionError(f"unexpected intrinsic {value!r}")


def listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def logical_id(s: Synth, kind: str, path_part: str) -> str:
    """The one resource of `kind` whose construct path contains `path_part`."""
    matches = [
        k
        for k, v in s.resources(kind).items()
        if path_part in v.get("Metadata", {}).get("aws:cdk:path", "") or path_part in k
    ]
    assert len(matches) == 1, (kind, path_part, matches)
    return matches[0]


def role_statements(s: Synth, role_id: str) -> list[dict[str, Any]]:
    """Every statement of every AWS::IAM::Policy attached to `role_id`, plus the role's inline policies."""
    statements: list[dict[str, Any]] = []
    for policy in s.resources("AWS::IAM::Policy").values():
        roles = [r.get("Ref") for r in policy["Properties"].get("Roles", [])]
        if role_id in roles:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    for inline in s.template["Resources"][role_id]["Properties"].get("Policies", []):
        statements.extend(inline["PolicyDocument"]["Statement"])
    return statements


@pytest.fixture(scope="module")
def provisioner_statements(default_synth: Synth) -> list[dict[str, Any]]:
    role = logical_id(default_synth, "AWS::IAM::Role", "ProvisionerRole")
    statements = role_statements(default_synth, role)
    assert all(st["Effect"] == "Allow" for st in statements)
    return statements


def granting(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [st for st in statements if action in listed(st["Action"])]


def test_the_stack_holds_exactly_the_components(default_synth: Synth) -> None:
    template = Template.from_json(default_synth.template)
    # The provisioner, seven workflow steps, the planner and the interruption handler; a role each, plus the
    # node, forwarder, state machine and scheduler roles.
    template.resource_count_is("AWS::Lambda::Function", 10)
    template.resource_count_is("AWS::Lambda::LayerVersion", 2)
    template.resource_count_is("AWS::DynamoDB::Table", 1)
    template.resource_count_is("AWS::IAM::Role", 14)
    template.resource_count_is("AWS::IAM::InstanceProfile", 1)
    template.resource_count_is("AWS::EKS::AccessEntry", 11)
    template.resource_count_is("AWS::EKS::PodIdentityAssociation", 1)
    template.resource_count_is("AWS::Logs::LogGroup", 11)
    template.resource_count_is("AWS::StepFunctions::StateMachine", 1)
    template.resource_count_is("AWS::Scheduler::Schedule", 1)
    # The interruption queue and its DLQ, the planner's missed ticks; five EventBridge rules; eighteen alarms
    # (docs/architecture.md) notifying one encrypted topic.
    template.resource_count_is("AWS::SQS::Queue", 3)
    template.resource_count_is("AWS::Events::Rule", 5)
    template.resource_count_is("AWS::CloudWatch::Alarm", 18)
    template.resource_count_is("AWS::CloudWatch::Dashboard", 1)
    template.resource_count_is("AWS::SNS::Topic", 1)
    template.resource_count_is("AWS::KMS::Key", 1)
    # No custom resources: they would need Lambda functions of their own (the CDK's log-retention one,
    # for instance) that neither least privilege nor the local world's CloudFormation wants.
    kinds = {r["Type"] for r in default_synth.template["Resources"].values()}
    assert not [k for k in kinds if k.startswith("Custom::") or k == "AWS::CloudFormation::CustomResource"], kinds
    outputs = set(default_synth.template["Outputs"])
    assert {"ProvisionerFunctionArn", "ProvisionerFunctionName", "TableName", "NodeRoleName", "NodeRoleArn"} <= outputs
    assert {"InstanceProfileName", "ForwarderRoleArn", "AlarmTopicArn"} <= outputs


def test_the_function_runs_the_provisioner_handler_on_arm64_python311_with_both_layers(default_synth: Synth) -> None:
    template = Template.from_json(default_synth.template)
    table = logical_id(default_synth, "AWS::DynamoDB::Table", "State")
    node_role = logical_id(default_synth, "AWS::IAM::Role", "NodesRole")
    profile = logical_id(default_synth, "AWS::IAM::InstanceProfile", "Nodes")
    logs = logical_id(default_synth, "AWS::Logs::LogGroup", "Provisioner")
    core = logical_id(default_synth, "AWS::Lambda::LayerVersion", "LayersCore")
    dependencies = logical_id(default_synth, "AWS::Lambda::LayerVersion", "LayersDependencies")
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Runtime": "python3.11",
            "Architectures": ["arm64"],
            "Handler": "handler.handler",
            "MemorySize": 1769,
            "Timeout": 120,
            "ReservedConcurrentExecutions": 1,
            "TracingConfig": {"Mode": "Active"},
            "LoggingConfig": {"LogGroup": {"Ref": logs}},
            "Layers": [{"Ref": core}, {"Ref": dependencies}],
            "Environment": {
                "Variables": {
                    settings.CLUSTER: CLUSTER,
                    settings.TABLE: {"Ref": table},
                    settings.NODE_ROLE: {"Ref": node_role},
                    settings.INSTANCE_PROFILE: {"Ref": profile},
                    settings.SPOT_TO_SPOT: "false",
                    "POWERTOOLS_SERVICE_NAME": "nodewright-provisioner",
                    "POWERTOOLS_METRICS_NAMESPACE": settings.METRICS_NAMESPACE,
                    aws_sdk.MODELS_ENV: "/opt/python/nodewright-aws-models",
                }
            },
        },
    )
    function = default_synth.template["Resources"][
        logical_id(default_synth, "AWS::Lambda::Function", "ProvisionerFunction")
    ]
    assert "VpcConfig" not in function["Properties"]
    # Exactly the settings contract plus Powertools' names and the trimmed AWS models (in the dependencies
    # layer); the catalog mode only when asked for.
    assert set(function["Properties"]["Environment"]["Variables"]) == {
        settings.CLUSTER,
        settings.TABLE,
        settings.NODE_ROLE,
        settings.INSTANCE_PROFILE,
        settings.SPOT_TO_SPOT,
        settings.INCREMENTAL_READS,
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
        aws_sdk.MODELS_ENV,
    }
    template.has_resource_properties("AWS::Logs::LogGroup", {"RetentionInDays": 30})
    template.has_resource_properties(
        "AWS::Lambda::LayerVersion", {"CompatibleRuntimes": ["python3.11"], "CompatibleArchitectures": ["arm64"]}
    )


def test_the_table_matches_the_settings_contract(default_synth: Synth) -> None:
    (table,) = default_synth.resources("AWS::DynamoDB::Table").values()
    props = table["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": settings.TABLE_PARTITION_KEY, "KeyType": "HASH"},
        {"AttributeName": settings.TABLE_SORT_KEY, "KeyType": "RANGE"},
    ]
    assert props["TimeToLiveSpecification"] == {"AttributeName": settings.TABLE_TTL_ATTRIBUTE, "Enabled": True}
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    # Encrypted with the AWS managed KMS key (aws/dynamodb): SSE on and no customer key named.
    assert props["SSESpecification"] == {"SSEEnabled": True}
    # Kept when the stack is deleted unless retainTable=false (docs/uninstall.md).
    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"


def test_the_provisioner_is_granted_exactly_the_intended_actions(provisioner_statements: list[dict[str, Any]]) -> None:
    actions = {a for st in provisioner_statements for a in listed(st["Action"])}
    assert actions == EXPECTED_ACTIONS
    wildcard_actions = {a for a in actions if "*" in a}
    assert wildcard_actions == {"ec2:Describe*"}
    for st in provisioner_statements:
        if "*" in listed(st["Resource"]):
            assert set(listed(st["Action"])) <= STAR_ONLY, st


def test_launches_need_nodewright_tags_on_everything_they_create(
    provisioner_statements: list[dict[str, Any]],
) -> None:
    for action in sorted(LAUNCH):
        statements = granting(provisioner_statements, action)
        assert statements
        for st in statements:
            resources = [render(r) for r in listed(st["Resource"])]
            kinds = {r.rsplit(":", 1)[1].split("/")[0] for r in resources}
            assert "*" not in resources
            if kinds & CREATED_BY_LAUNCH:
                # Whatever a launch creates must be requested with nodewright's cluster and NodePool tags.
                assert st["Condition"] == REQUEST_TAGGED, st
                assert kinds == CREATED_BY_LAUNCH
            elif kinds == {"launch-template"}:
                assert st["Condition"] == RESOURCE_TAGGED, st
            elif kinds == {"subnet", "security-group"}:
                assert st["Condition"] == {"StringEquals": {"aws:ResourceTag/karpenter.sh/discovery": CLUSTER}}, st
            else:
                # Only read by a launch, never created by it.
                assert kinds == {"image", "snapshot", "capacity-reservation"}, st
                assert "Condition" not in st


def test_launch_templates_are_created_only_with_nodewright_tags(provisioner_statements: list[dict[str, Any]]) -> None:
    (st,) = granting(provisioner_statements, "ec2:CreateLaunchTemplate")
    assert st["Action"] == "ec2:CreateLaunchTemplate"
    assert st["Condition"] == REQUEST_TAGGED
    assert [render(r) for r in listed(st["Resource"])] == [
        "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:launch-template/*"
    ]


def test_tags_are_written_only_by_create_calls_and_only_nodewrights(
    provisioner_statements: list[dict[str, Any]],
) -> None:
    (st,) = granting(provisioner_statements, "ec2:CreateTags")
    assert st["Action"] == "ec2:CreateTags"
    assert st["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/nodewright.io/cluster": CLUSTER,
            "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
        },
        "StringLike": {"aws:RequestTag/nodewright.io/nodepool": "*"},
    }
    kinds = {render(r).rsplit(":", 1)[1].split("/")[0] for r in listed(st["Resource"])}
    assert kinds == CREATED_BY_LAUNCH | {"launch-template"}


@pytest.mark.parametrize(
    ("action", "kind"), [("ec2:TerminateInstances", "instance"), ("ec2:DeleteLaunchTemplate", "launch-template")]
)
def test_only_nodewrights_own_resources_are_terminated_or_deleted(
    provisioner_statements: list[dict[str, Any]], action: str, kind: str
) -> None:
    # Not kubernetes.io/cluster/<name>=owned alone: managed node groups and Karpenter carry it too.
    (st,) = granting(provisioner_statements, action)
    assert st["Action"] == action
    assert st["Condition"] == RESOURCE_TAGGED
    assert [render(r) for r in listed(st["Resource"])] == [
        f"arn:${{AWS::Partition}}:ec2:${{AWS::Region}}:${{AWS::AccountId}}:{kind}/*"
    ]


def test_every_function_that_terminates_needs_nodewrights_tags(default_synth: Synth) -> None:
    terminating = []
    for role in default_synth.resources("AWS::IAM::Role"):
        for st in granting(role_statements(default_synth, role), "ec2:TerminateInstances"):
            assert st["Condition"] == RESOURCE_TAGGED, (role, st)
            terminating.append(role)
    # The provisioner, LaunchReplacement, TerminateInstance, Rollback and the planner.
    assert len(terminating) == 5, terminating


def test_only_the_node_role_is_passed_and_only_to_ec2(
    default_synth: Synth, provisioner_statements: list[dict[str, Any]]
) -> None:
    node_role = logical_id(default_synth, "AWS::IAM::Role", "NodesRole")
    (st,) = granting(provisioner_statements, "iam:PassRole")
    assert st["Resource"] == {"Fn::GetAtt": [node_role, "Arn"]}
    assert st["Condition"] == {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}}
    # Without nodeRoles nodewright creates no instance profile; it reads one an EC2NodeClass names.
    assert not granting(provisioner_statements, "iam:CreateInstanceProfile")
    (read,) = granting(provisioner_statements, "iam:GetInstanceProfile")
    assert render(read["Resource"]) == "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/*"


def test_node_roles_from_context_may_be_passed_and_get_tag_scoped_instance_profiles(synth_root: Path) -> None:
    roles = synth(
        synth_root,
        clusterName=CLUSTER,
        nodeRoles="KarpenterNodeRole-demo,arn:aws:iam::111122223333:role/teams/gpu-nodes",
    )
    node_role = logical_id(roles, "AWS::IAM::Role", "NodesRole")
    # The planner launches static NodePools' NodeClaims, so it passes the same node roles as the provisioner.
    for step in ("ProvisionerRole", "LaunchReplacement", "PlannerRole"):
        statements = role_statements(roles, logical_id(roles, "AWS::IAM::Role", step))
        (st,) = granting(statements, "iam:PassRole")
        assert [render(r) if not isinstance(r, dict) or "Fn::GetAtt" not in r else r for r in st["Resource"]] == [
            {"Fn::GetAtt": [node_role, "Arn"]},
            "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/KarpenterNodeRole-demo",
            "arn:aws:iam::111122223333:role/teams/gpu-nodes",
        ]
        ours = "arn:${AWS::Partition}:iam::${AWS::AccountId}:instance-profile/nodewright/*"
        (create,) = granting(statements, "iam:CreateInstanceProfile")
        assert render(create["Resource"]) == ours
        assert create["Condition"] == {"StringEquals": {"aws:RequestTag/nodewright.io/cluster": CLUSTER}}
        (tag,) = granting(statements, "iam:TagInstanceProfile")
        assert tag["Condition"] == {
            "StringEquals": {
                "aws:RequestTag/nodewright.io/cluster": CLUSTER,
                "aws:ResourceTag/nodewright.io/cluster": CLUSTER,
            }
        }
        (add,) = granting(statements, "iam:AddRoleToInstanceProfile")
        assert render(add["Resource"]) == ours
        assert add["Condition"] == {"StringEquals": {"aws:ResourceTag/nodewright.io/cluster": CLUSTER}}
    for function in ("Provisioner", "PlannerFunction"):
        logical = logical_id(roles, "AWS::Lambda::Function", function)
        env = roles.template["Resources"][logical]["Properties"]["Environment"]["Variables"]
        assert env["NODEWRIGHT_NODE_ROLES"] == "KarpenterNodeRole-demo,gpu-nodes", function
    (plugin,) = roles.report()["pluginReports"]
    assert plugin["violations"] == []


def test_parameters_are_read_only_under_the_public_ami_paths(provisioner_statements: list[dict[str, Any]]) -> None:
    (st,) = granting(provisioner_statements, "ssm:GetParameter")
    assert st["Action"] == ["ssm:GetParameter", "ssm:GetParameters"]
    assert granting(provisioner_statements, "ssm:GetParameters") == [st]
    assert sorted(render(r) for r in listed(st["Resource"])) == [
        "arn:${AWS::Partition}:ssm:${AWS::Region}::parameter/aws/service/bottlerocket/*",
        "arn:${AWS::Partition}:ssm:${AWS::Region}::parameter/aws/service/eks/optimized-ami/*",
    ]


def test_a_pinned_kubernetes_version_narrows_the_ami_parameters(synth_root: Path) -> None:
    pinned = synth(synth_root, clusterName=CLUSTER, kubernetesVersion="1.33")
    role = logical_id(pinned, "AWS::IAM::Role", "ProvisionerRole")
    (st,) = granting(role_statements(pinned, role), "ssm:GetParameter")
    assert sorted(render(r) for r in listed(st["Resource"])) == [
        "arn:${AWS::Partition}:ssm:${AWS::Region}::parameter/aws/service/bottlerocket/aws-k8s-1.33*",
        "arn:${AWS::Partition}:ssm:${AWS::Region}::parameter/aws/service/eks/optimized-ami/1.33/*",
    ]


def test_cluster_and_table_access_name_their_resources(
    default_synth: Synth, provisioner_statements: list[dict[str, Any]]
) -> None:
    (st,) = granting(provisioner_statements, "eks:DescribeCluster")
    assert (
        render(st["Resource"]) == f"arn:${{AWS::Partition}}:eks:${{AWS::Region}}:${{AWS::AccountId}}:cluster/{CLUSTER}"
    )
    table = logical_id(default_synth, "AWS::DynamoDB::Table", "State")
    for st in provisioner_statements:
        if any(a.startswith("dynamodb:") for a in listed(st["Action"])):
            assert listed(st["Resource"]) == [{"Fn::GetAtt": [table, "Arn"]}], st
    logs = logical_id(default_synth, "AWS::Logs::LogGroup", "Provisioner")
    for st in provisioner_statements:
        if any(a.startswith("logs:") for a in listed(st["Action"])):
            assert listed(st["Resource"]) == [{"Fn::GetAtt": [logs, "Arn"]}], st


def test_cluster_access_entries(default_synth: Synth) -> None:
    provisioner_role = logical_id(default_synth, "AWS::IAM::Role", "ProvisionerRole")
    node_role = logical_id(default_synth, "AWS::IAM::Role", "NodesRole")
    entries = {
        e["Properties"]["PrincipalArn"]["Fn::GetAtt"][0]: e["Properties"]
        for e in default_synth.resources("AWS::EKS::AccessEntry").values()
    }
    assert entries[provisioner_role] == {
        "ClusterName": CLUSTER,
        "PrincipalArn": {"Fn::GetAtt": [provisioner_role, "Arn"]},
        "Type": "STANDARD",
        "KubernetesGroups": ["nodewright:provisioner"],
        "Tags": [{"Key": "nodewright:cluster", "Value": CLUSTER}],
    }
    assert entries[node_role]["Type"] == "EC2_LINUX"
    assert "KubernetesGroups" not in entries[node_role]
    assert "AccessPolicies" not in entries[node_role] and "AccessPolicies" not in entries[provisioner_role]


def test_the_node_role_is_for_ec2_with_the_eks_worker_policies(default_synth: Synth) -> None:
    node_role = logical_id(default_synth, "AWS::IAM::Role", "NodesRole")
    props = default_synth.template["Resources"][node_role]["Properties"]
    (trust,) = props["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "ec2.amazonaws.com"} and trust["Action"] == "sts:AssumeRole"
    managed = sorted(render(p).rsplit("/", 1)[1] for p in props["ManagedPolicyArns"])
    assert managed == sorted(
        [
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonEC2ContainerRegistryPullOnly",
            "AmazonSSMManagedInstanceCore",
        ]
    )
    assert "Policies" not in props
    assert not [
        p
        for p in default_synth.resources("AWS::IAM::Policy").values()
        if {"Ref": node_role} in p["Properties"]["Roles"]
    ]
    (profile,) = default_synth.resources("AWS::IAM::InstanceProfile").values()
    assert profile["Properties"]["Roles"] == [{"Ref": node_role}]


def test_the_forwarder_may_only_invoke_the_provisioner_and_publish_its_metrics(default_synth: Synth) -> None:
    forwarder = logical_id(default_synth, "AWS::IAM::Role", "ForwarderRole")
    function = logical_id(default_synth, "AWS::Lambda::Function", "Provisioner")
    props = default_synth.template["Resources"][forwarder]["Properties"]
    (trust,) = props["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    # Only a Pod Identity association for this cluster's forwarder service account may use the role.
    assert trust["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-name": CLUSTER,
            "aws:RequestTag/kubernetes-namespace": "nodewright",
            "aws:RequestTag/kubernetes-service-account": "nodewright-forwarder",
        }
    }
    statements = role_statements(default_synth, forwarder)
    assert statements == [
        {
            "Action": "lambda:InvokeFunction",
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [function, "Arn"]},
            "Sid": "InvokeTheProvisioner",
        },
        {
            "Action": "cloudwatch:PutMetricData",
            "Condition": {"StringEquals": {"cloudwatch:namespace": "nodewright"}},
            "Effect": "Allow",
            "Resource": "*",
            "Sid": "PublishHeartbeatAndPendingAge",
        },
    ]
    Template.from_json(default_synth.template).has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {
            "ClusterName": CLUSTER,
            "Namespace": "nodewright",
            "ServiceAccount": "nodewright-forwarder",
            "RoleArn": {"Fn::GetAtt": [forwarder, "Arn"]},
        },
    )
    # The provisioner's own policy names the forwarder's role, and only it.
    permissions = [
        p["Properties"]
        for p in default_synth.resources("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [function, "Arn"]}
    ]
    assert permissions == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": {"Fn::GetAtt": [function, "Arn"]},
            "Principal": {"Fn::GetAtt": [forwarder, "Arn"]},
        }
    ]


VPC_CONTEXT = {
    "vpcId": "vpc-0123456789abcdef0",
    "privateSubnetIds": "subnet-0123456789abcdef0,subnet-0fedcba9876543210",
    "securityGroupId": "sg-0123456789abcdef0",
}


def test_vpc_attachment_gives_every_function_what_lambda_needs_for_its_interfaces(synth_root: Path) -> None:
    attached = synth(synth_root, clusterName=CLUSTER, **VPC_CONTEXT)
    functions = attached.resources("AWS::Lambda::Function")
    assert len(functions) == 10
    for logical, function in functions.items():
        # Every function reaches a private API endpoint the same way.
        assert function["Properties"]["VpcConfig"] == {
            "SubnetIds": VPC_CONTEXT["privateSubnetIds"].split(","),
            "SecurityGroupIds": ["sg-0123456789abcdef0"],
        }
        # ... and its own role may create, describe and delete the interfaces Lambda makes for it
        # (AWSLambdaVPCAccessExecutionRole's actions, narrowed where EC2 allows).
        statements = role_statements(attached, function["Properties"]["Role"]["Fn::GetAtt"][0])
        (create,) = granting(statements, "ec2:CreateNetworkInterface")
        assert sorted(render(r) for r in listed(create["Resource"])) == sorted(
            [
                "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:network-interface/*",
                "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:security-group/sg-0123456789abcdef0",
                "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:subnet/subnet-0123456789abcdef0",
                "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:subnet/subnet-0fedcba9876543210",
            ]
        ), logical
        for action in ("ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"):
            (st,) = granting(statements, action)
            assert [render(r) for r in listed(st["Resource"])] == [
                "arn:${AWS::Partition}:ec2:${AWS::Region}:${AWS::AccountId}:network-interface/*"
            ], logical
        for action in ("ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"):
            assert any(listed(st["Resource"]) == ["*"] for st in granting(statements, action)), (logical, action)


def test_the_vpc_variant_passes_cdk_nag(synth_root: Path) -> None:
    (plugin,) = synth(synth_root, clusterName=CLUSTER, **VPC_CONTEXT).report()["pluginReports"]
    assert plugin["conclusion"] == "success" and plugin["violations"] == []


def test_every_function_on_our_layers_reads_the_trimmed_aws_models(default_synth: Synth) -> None:
    core = logical_id(default_synth, "AWS::Lambda::LayerVersion", "LayersCore")
    ours = [
        resource["Properties"]
        for resource in default_synth.template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function" and {"Ref": core} in resource["Properties"].get("Layers", [])
    ]
    assert len(ours) >= 9  # provisioner, planner, interruption and the workflow's steps
    for function in ours:
        assert function["Environment"]["Variables"][aws_sdk.MODELS_ENV] == "/opt/python/nodewright-aws-models"


def test_the_planner_may_invoke_the_provisioner_for_capacity_buffers_and_names_it(default_synth: Synth) -> None:
    """A short CapacityBuffer: the tick asks the provisioner (service.buffers), by its unqualified ARN only."""
    planner_role = logical_id(default_synth, "AWS::IAM::Role", "PlannerRole")
    provisioner = logical_id(default_synth, "AWS::Lambda::Function", "Provisioner")
    invokes = granting(role_statements(default_synth, planner_role), "lambda:InvokeFunction")
    assert invokes == [
        {
            "Action": "lambda:InvokeFunction",
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [provisioner, "Arn"]},
            "Sid": "AskTheProvisionerForBufferCapacity",
        }
    ]
    planner = logical_id(default_synth, "AWS::Lambda::Function", "Planner")
    variables = default_synth.template["Resources"][planner]["Properties"]["Environment"]["Variables"]
    assert variables["NODEWRIGHT_PROVISIONER_FUNCTION"] == {"Ref": provisioner}
