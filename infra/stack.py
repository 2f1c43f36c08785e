"""The one nodewright stack, composed from one construct per component."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Stack, Tags
from constructs import Construct

from infra.config import Settings
from infra.forwarder import ForwarderAccess
from infra.interruption import Interruption
from infra.layers import Layers
from infra.nodes import NodeIdentity
from infra.observability import Observability
from infra.planner import Planner
from infra.provisioner import SOURCE as PROVISIONER_SOURCE
from infra.provisioner import Provisioner
from infra.table import StateTable
from infra.workflow import DisruptionWorkflow


class NodewrightStack(Stack):
    """Layers, table, node identity, provisioner, forwarder access, disruption workflow, planner, interruption
    handling, alarms and a dashboard for one EKS cluster."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        provisioner_source: Path = PROVISIONER_SOURCE,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"nodewright: serverless node autoscaling for EKS cluster {settings.cluster_name}",
            **kwargs,
        )
        Tags.of(self).add("nodewright:cluster", settings.cluster_name)
        layers = Layers(self, "Layers")
        state = StateTable(self, "State", retain=settings.retain_table)
        nodes = NodeIdentity(self, "Nodes", cluster_name=settings.cluster_name)
        provisioner = Provisioner(
            self,
            "Provisioner",
            settings=settings,
            layers=layers,
            table=state.table,
            node_role=nodes.role,
            instance_profile=nodes.instance_profile,
            source=provisioner_source,
        )
        forwarder = ForwarderAccess(self, "Forwarder", settings=settings, provisioner=provisioner.function)
        workflow = DisruptionWorkflow(
            self,
            "Disruption",
            settings=settings,
            layers=layers,
            table=state.table,
            node_role=nodes.role,
            instance_profile=nodes.instance_profile,
        )
        planner = Planner(
            self,
            "Planner",
            settings=settings,
            layers=layers,
            state_machine=workflow.state_machine,
            executions_arn=workflow.executions_arn,
            table=state.table,
            node_role=nodes.role,
            instance_profile=nodes.instance_profile,
            provisioner=provisioner.function,
        )
        interruption = Interruption(
            self,
            "Interruption",
            settings=settings,
            layers=layers,
            table=state.table,
            state_machine=workflow.state_machine,
            rebalance=settings.rebalance,
        )
        observability = Observability(
            self,
            "Observability",
            settings=settings,
            provisioner=provisioner.function,
            interruption=interruption.function,
            interruption_queue=interruption.queue,
            dead_letter_queue=interruption.dead_letter_queue,
            planner=planner.function,
            missed_ticks=planner.queue,
            state_machine=workflow.state_machine,
            steps=workflow.functions,
            other_alarms=[interruption.dlq_alarm],
        )
        self.layers, self.state, self.nodes = layers, state, nodes
        self.provisioner, self.forwarder = provisioner, forwarder
        self.workflow, self.planner = workflow, planner
        self.interruption, self.observability = interruption, observability

        # What the forwarder's Deployment and the EC2NodeClass need (the local world exports these too).
        outputs = {
            "ProvisionerFunctionName": provisioner.function.function_name,
            "ProvisionerFunctionArn": provisioner.function.function_arn,
            "TableName": state.table.table_name,
            "NodeRoleName": nodes.role.role_name,
            "NodeRoleArn": nodes.role.role_arn,
            "InstanceProfileName": nodes.instance_profile.instance_profile_name,
            "ForwarderRoleArn": forwarder.role.role_arn,
            "StateMachineArn": workflow.state_machine.state_machine_arn,
            "PlannerFunctionName": planner.function.function_name,
            "InterruptionQueueUrl": interruption.queue.queue_url,
            "InterruptionDeadLetterQueueUrl": interruption.dead_letter_queue.queue_url,
            "DashboardName": observability.dashboard.dashboard_name,
            "AlarmTopicArn": observability.topic.topic_arn,
        }
        for name, value in outputs.items():
            CfnOutput(self, name, value=value)
