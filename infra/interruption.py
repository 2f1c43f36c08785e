"""Interruption handling: EventBridge rules -> SQS queue (with a dead-letter queue) -> the interruption Lambda.

The rules match the five event types nodewright acts on (patterns in `nodewright.interruption.rules`, shared
with the functional tests) on the account's default bus and send them to one queue; the function reads it in
batches and starts the disruption workflow per affected NodeClaim.

Choices, and why:
- A queue between EventBridge and the function, not a direct Lambda target: events survive a function
  outage or throttling for the queue's retention (4 days, a long weekend with margin), and a message the
  function cannot read is redriven to the dead-letter queue after 5 receives instead of being lost.
- The dead-letter queue keeps messages 14 days (the SQS maximum) so a person has time to read them; its
  depth has an alarm. It also receives what the rules themselves fail to deliver to the queue.
- SQS-managed encryption (SSE-SQS): EventBridge can send to it without a KMS key policy; TLS is required.
- Visibility timeout 6x the function timeout (the multiple AWS advises for SQS event sources), so a batch
  still being retried by the Lambda poller is not handed out a second time.
- Batch size 10 with ReportBatchItemFailures: a malformed message fails alone, the rest are deleted.
- 30 s timeout, 512 MB: a record is one fleet read from the API server, one EC2 lookup at most, a DynamoDB
  write and a StartExecution; a Spot warning leaves two minutes, so a slow call should fail fast and retry.
- No reserved concurrency: a wave of Spot warnings should be handled in parallel; duplicates are harmless
  because execution names derive from the event id and NodeClaim.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, Stack, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra import build, nag
from infra.config import Settings
from infra.function import describe_cluster_statement, nodewright_function
from infra.layers import Layers, code_from_bundle
from infra.provisioner import POWERTOOLS_METRICS_NAMESPACE
from nodewright import settings as env
from nodewright.interruption.rules import EVENT_PATTERNS

SOURCE = build.REPO_ROOT / "functions" / "interruption"
SOURCE_TAG = "nodewright:source"  # the local world runs the tagged folder's code (localworld/lambda_seam.py)
HANDLER = "handler.handler"
MEMORY_MB = 512
TIMEOUT = Duration.seconds(30)
VISIBILITY_TIMEOUT = Duration.seconds(6 * 30)
BATCH_SIZE = 10
MAX_RECEIVE_COUNT = 5
QUEUE_RETENTION = Duration.days(4)
DLQ_RETENTION = Duration.days(14)
KUBERNETES_GROUP = "nodewright:interruption"  # bound to a ClusterRole by the chart (rbac-functions.yaml)
POWERTOOLS_SERVICE_NAME = "nodewright-interruption"
# Only what DynamoDBState.mark_unavailable calls: the function writes offering marks and reads nothing.
TABLE_ACTIONS = ("dynamodb:BatchWriteItem", "dynamodb:PutItem")

_RULE_DESCRIPTIONS = {
    "SpotInterruption": "EC2 Spot interruption warnings (two minutes before the instance goes)",
    "RebalanceRecommendation": "EC2 instance rebalance recommendations (elevated Spot interruption risk)",
    "InstanceStateChange": "EC2 instances stopping, stopped, shutting down or terminated",
    "ScheduledChange": "AWS Health scheduled changes for EC2 (retirement, maintenance)",
    "CapacityReservationInterruption": "EC2 interruptible capacity reservation interruption warnings",
}


class Interruption(Construct):
    """`queue`, `dead_letter_queue`, `rules` (by name), `function`, its `role` and `policy`, `dlq_alarm`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        layers: Layers,
        table: dynamodb.ITable,
        state_machine: sfn.IStateMachine,
        rebalance: str = "replace",
        source: Path = SOURCE,
    ) -> None:
        super().__init__(scope, construct_id)
        if rebalance not in env.REBALANCE_MODES:
            raise ValueError(f"rebalance must be one of {', '.join(env.REBALANCE_MODES)}, got {rebalance!r}")
        stack = Stack.of(self)

        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=DLQ_RETENTION,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=QUEUE_RETENTION,
            visibility_timeout=VISIBILITY_TIMEOUT,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=MAX_RECEIVE_COUNT),
        )
        self.rules: dict[str, events.Rule] = {}
        for name, pattern in EVENT_PATTERNS.items():
            self.rules[name] = events.Rule(
                self,
                name,
                description=f"nodewright ({settings.cluster_name}): {_RULE_DESCRIPTIONS[name]}",
                event_pattern=events.EventPattern(
                    source=pattern["source"], detail_type=pattern["detail-type"], detail=pattern.get("detail")
                ),
                # What EventBridge cannot deliver to the queue after its retries is kept, not dropped.
                targets=[targets.SqsQueue(self.queue, dead_letter_queue=self.dead_letter_queue)],
            )

        parts = nodewright_function(
            self,
            settings=settings,
            layers=layers,
            code=code_from_bundle(build.function_bundle(source, "interruption")),
            handler=HANDLER,
            description="nodewright interruption handler: EC2 and Health events to disruptions",
            memory_mb=MEMORY_MB,
            timeout=TIMEOUT,
            environment={
                env.CLUSTER: settings.cluster_name,
                env.TABLE: table.table_name,
                env.STATE_MACHINE: state_machine.state_machine_arn,
                env.REBALANCE: rebalance,
                env.ACCOUNT: stack.account,
                "POWERTOOLS_SERVICE_NAME": POWERTOOLS_SERVICE_NAME,
                "POWERTOOLS_METRICS_NAMESPACE": POWERTOOLS_METRICS_NAMESPACE,
            },
            statements=interruption_statements(stack, settings, state_machine.state_machine_arn),
            kubernetes_group=KUBERNETES_GROUP,
        )
        self.role, self.log_group, self.policy = parts.role, parts.log_group, parts.policy
        self.function, self.access_entry = parts.function, parts.access_entry
        table.grant(self.role, *TABLE_ACTIONS)
        Tags.of(self.function).add(SOURCE_TAG, source.relative_to(build.REPO_ROOT).as_posix())
        self.function.add_event_source(
            sources.SqsEventSource(self.queue, batch_size=BATCH_SIZE, report_batch_item_failures=True)
        )

        self.dlq_alarm = cloudwatch.Alarm(
            self,
            "DeadLettersAlarm",
            alarm_description=f"nodewright ({settings.cluster_name}): interruption messages in the dead-letter "
            "queue; read them, their errors name the field that is wrong",
            metric=self.dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=Duration.minutes(1), statistic="Maximum"
            ),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self._acknowledge()

    def _acknowledge(self) -> None:
        nag.acknowledge(
            self.policy,
            "AwsSolutions-IAM5",
            "ec2:DescribeInstances supports no resource-level permissions; it is the only action on '*'.",
            findings=["Resource::*"],
        )


def interruption_statements(stack: Stack, settings: Settings, state_machine_arn: str) -> list[iam.PolicyStatement]:
    """What the interruption function may do besides its queue, table and logs (granted by the CDK)."""
    return [
        iam.PolicyStatement(
            sid="StartTheDisruptionWorkflow",
            actions=["states:StartExecution"],
            resources=[state_machine_arn],
        ),
        describe_cluster_statement(stack, settings),
        # Instances whose NodeClaim has no providerID yet are recognised by their tags.
        iam.PolicyStatement(sid="DescribeInstances", actions=["ec2:DescribeInstances"], resources=["*"]),
    ]
