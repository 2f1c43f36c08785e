"""Alarms that reach someone, and one CloudWatch dashboard for the whole system.

Every alarm notifies one SNS topic (the stack's own, or the one `alarmTopicArn` names) when it fires and when
it recovers, so a pager can open and close the incident:
- failed disruption executions, throttled invocations of any nodewright function, a planner schedule that could
  not deliver its tick, interruption messages in the dead-letter queue (that alarm is the interruption
  construct's);
- errors of each function, one alarm per function so its name says where to look;
- the oldest pending pod: the forwarder reports, every minute, how long the longest-waiting unschedulable pod
  has been waiting (`OldestPendingPodSeconds`); above `PENDING_ALARM_SECONDS` for three of five minutes, pods
  are not getting capacity;
- a silent forwarder: the forwarder holding the Lease sends `ForwarderHeartbeat` every minute; no heartbeat for
  `HEARTBEAT_ALARM_MINUTES` minutes (missing data counts as breaching) means nothing watches pending pods.

The topic is encrypted with a customer managed key whose policy lets CloudWatch use it: CloudWatch cannot
publish to a topic encrypted with the AWS managed key for SNS.

The dashboard puts each behaviour on one row: provisioning, interruptions, the disruption workflow, the
planner, scale-down by method, and the forwarder; the custom metrics are the ones the handlers emit with
Powertools (EMF) in the namespace POWERTOOLS_METRICS_NAMESPACE names, and the forwarder's two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import Settings
from nodewright.settings import FORWARDER_HEARTBEAT_METRIC, METRICS_NAMESPACE, OLDEST_PENDING_POD_METRIC

NAMESPACE = METRICS_NAMESPACE  # the handlers' Powertools Metrics namespace (POWERTOOLS_METRICS_NAMESPACE)
PERIOD = Duration.minutes(1)
ERROR_PERIOD = Duration.minutes(5)
PENDING_ALARM_SECONDS = 600  # a node boots and joins in 1-3 minutes; ten minutes pending is no longer normal
HEARTBEAT_ALARM_MINUTES = 5


# The planner's methods, as its per-method metrics name them (method, reason dimensions).
METHODS = (
    ("expiration", "Expired"),
    ("emptiness", "Empty"),
    ("drift", "Drifted"),
    ("multi-node", "Underutilized"),
    ("single-node", "Underutilized"),
)


def _custom(
    name: str, service: str, statistic: str = "Sum", step: str = "", method: tuple[str, str] | None = None
) -> cloudwatch.Metric:
    """A metric a handler emits; the workflow's steps add a `step` dimension, the planner's per-method metrics a
    `method` and a `reason`."""
    dimensions = {"service": service, **({"step": step} if step else {})}
    if method is not None:
        dimensions.update({"method": method[0], "reason": method[1]})
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map=dimensions,
        statistic=statistic,
        period=PERIOD,
        label=f"{name} {method[0]}" if method is not None else None,
    )


def _forwarder(name: str, cluster: str, statistic: str) -> cloudwatch.Metric:
    """A metric the forwarder publishes (PutMetricData), per cluster so two clusters never mask each other."""
    return cloudwatch.Metric(
        namespace=NAMESPACE,
        metric_name=name,
        dimensions_map={"service": "forwarder", "cluster": cluster},
        statistic=statistic,
        period=PERIOD,
    )


def _function_metric(name: str, service: str) -> cloudwatch.Metric:
    """A metric a function publishes in EMF (Powertools' `service` dimension is the function's)."""
    return cloudwatch.Metric(
        namespace=NAMESPACE, metric_name=name, dimensions_map={"service": service}, statistic="Sum", period=PERIOD
    )


class Observability(Construct):
    """`alarms` (by name) and the `dashboard`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        provisioner: lambda_.IFunction,
        interruption: lambda_.IFunction,
        interruption_queue: sqs.IQueue,
        dead_letter_queue: sqs.IQueue,
        planner: lambda_.IFunction,
        missed_ticks: sqs.IQueue,
        state_machine: sfn.IStateMachine,
        steps: Mapping[str, lambda_.IFunction],
        other_alarms: Sequence[cloudwatch.Alarm] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        cluster = settings.cluster_name
        named = {"Provisioner": provisioner, "Interruption": interruption, "Planner": planner, **steps}
        functions = list(named.values())
        self.topic = self._topic(settings)
        throttles = cloudwatch.MathExpression(
            expression=" + ".join(f"FILL(t{i}, 0)" for i in range(len(functions))),
            using_metrics={
                f"t{i}": f.metric_throttles(period=PERIOD, statistic="Sum") for i, f in enumerate(functions)
            },
            label="Throttles (all nodewright functions)",
            period=PERIOD,
        )
        self.alarms = {
            "FailedExecutions": cloudwatch.Alarm(
                self,
                "FailedExecutions",
                alarm_description=f"nodewright ({cluster}): a disruption workflow failed and rolled back; open "
                "the execution in the Step Functions console, its Rollback step names the cause",
                metric=state_machine.metric_failed(period=PERIOD, statistic="Sum"),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            "Throttles": cloudwatch.Alarm(
                self,
                "Throttles",
                alarm_description=f"nodewright ({cluster}): Lambda throttled a nodewright function (account "
                "concurrency, or the provisioner's reserved concurrency of 1 under a burst of batches)",
                metric=throttles,
                threshold=1,
                evaluation_periods=3,
                datapoints_to_alarm=2,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            "MissedTicks": cloudwatch.Alarm(
                self,
                "MissedTicks",
                alarm_description=f"nodewright ({cluster}): EventBridge Scheduler could not invoke the planner",
                metric=missed_ticks.metric_approximate_number_of_messages_visible(period=PERIOD, statistic="Maximum"),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            "OldestPendingPod": cloudwatch.Alarm(
                self,
                "OldestPendingPod",
                alarm_description=f"nodewright ({cluster}): a pod has been pending for more than "
                f"{PENDING_ALARM_SECONDS // 60} minutes; `kubectl get events -A --field-selector "
                "reason=FailedScheduling` and the provisioner's log say why nothing launched for it",
                metric=_forwarder(OLDEST_PENDING_POD_METRIC, cluster, "Maximum"),
                threshold=PENDING_ALARM_SECONDS,
                evaluation_periods=5,
                datapoints_to_alarm=3,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            "EventsRefused": cloudwatch.Alarm(
                self,
                "EventsRefused",
                alarm_description=f"nodewright ({cluster}): an interruption event was refused and deleted nothing "
                "(another account or region, a warning received past its two-minute notice, or one EC2 "
                "contradicts); the interruption function's log line 'event refused' names the reason: a late "
                "warning means the queue or the function lagged, a forged one that something else can send to "
                "the queue",
                metric=_function_metric("EventsRefused", "interruption"),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            "NodesRestored": cloudwatch.Alarm(
                self,
                "NodesRestored",
                alarm_description=f"nodewright ({cluster}): the planner gave back a node whose disruption workflow "
                "ended without finishing or rolling back (aborted, timed out, killed outside its Catch); the "
                "node's DisruptionRestored event names the execution and how it ended",
                metric=_function_metric("NodesRestored", "planner"),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            ),
            "ForwarderSilent": cloudwatch.Alarm(
                self,
                "ForwarderSilent",
                alarm_description=f"nodewright ({cluster}): no forwarder heartbeat for {HEARTBEAT_ALARM_MINUTES} "
                "minutes, so nothing sends pending pods; `kubectl -n nodewright get pods,lease` and the "
                "forwarder's logs",
                metric=_forwarder(FORWARDER_HEARTBEAT_METRIC, cluster, "Sum"),
                threshold=1,
                evaluation_periods=HEARTBEAT_ALARM_MINUTES,
                comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
            ),
        }
        for name, function in named.items():
            self.alarms[f"{name}Errors"] = cloudwatch.Alarm(
                self,
                f"{name}Errors",
                alarm_description=f"nodewright ({cluster}): the {name} function failed; its log group has the "
                "error (CloudWatch Logs Insights: filter level = 'ERROR')",
                metric=function.metric_errors(period=ERROR_PERIOD, statistic="Sum"),
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        action = actions.SnsAction(self.topic)
        for alarm in [*self.alarms.values(), *other_alarms]:
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)

        def graph(title: str, metrics: Sequence[cloudwatch.IMetric], width: int = 8) -> cloudwatch.GraphWidget:
            return cloudwatch.GraphWidget(title=title, left=list(metrics), width=width, height=6)

        self.dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"nodewright-{cluster}",
            default_interval=Duration.hours(3),
        )
        self.dashboard.add_widgets(
            cloudwatch.TextWidget(
                markdown=f"# nodewright: {cluster}\nProvisioning, interruptions, the disruption workflow, the "
                "planner and the forwarder. Alarms (topic in the stack outputs): failed executions, throttles, "
                "function errors, interruption dead letters, missed planner ticks, pods pending too long, a "
                "silent forwarder.",
                width=24,
                height=2,
            )
        )
        self.dashboard.add_widgets(
            graph(
                "Provisioning: NodeClaims and pods",
                [
                    _custom("NodeClaimsLaunched", "provisioner"),
                    _custom("PodsNominated", "provisioner"),
                    _custom("PodsUnschedulable", "provisioner"),
                    _custom("OfferingsUnavailable", "provisioner"),
                ],
            ),
            graph("Provisioning: decision latency (ms)", [_custom("DecisionLatency", "provisioner", "p90")]),
            graph(
                "Provisioner invocations",
                [provisioner.metric_invocations(period=PERIOD), provisioner.metric_errors(period=PERIOD)],
            ),
        )
        self.dashboard.add_widgets(
            graph(
                "Interruption queue",
                [
                    interruption_queue.metric_number_of_messages_received(period=PERIOD),
                    interruption_queue.metric_approximate_age_of_oldest_message(period=PERIOD),
                    dead_letter_queue.metric_approximate_number_of_messages_visible(period=PERIOD),
                ],
            ),
            graph(
                "Interruption function",
                [interruption.metric_invocations(period=PERIOD), interruption.metric_errors(period=PERIOD)],
            ),
            # Errors of every step function (an alarm-status widget would reference the alarms' ARNs, which the
            # local world's CloudFormation cannot resolve; the alarms have their own console page).
            graph("Workflow step errors", [f.metric_errors(period=PERIOD) for f in steps.values()]),
        )
        self.dashboard.add_widgets(
            graph(
                "Disruption executions",
                [
                    state_machine.metric_started(period=PERIOD),
                    state_machine.metric_succeeded(period=PERIOD),
                    state_machine.metric_failed(period=PERIOD),
                ],
            ),
            graph(
                "Drain: pods evicted, evictions blocked by PDBs (429), pods deleted",
                [
                    _custom("PodsEvicted", "disruption", step="drain"),
                    _custom("EvictionsBlocked", "disruption", step="drain"),
                    _custom("PodsDeleted", "disruption", step="drain"),
                    _custom("Rollbacks", "disruption", step="rollback"),
                ],
            ),
            graph(
                "Planner",
                [
                    _custom("DisruptionsStarted", "planner"),
                    _custom("DisruptionsBlocked", "planner"),
                    _custom("Unconsolidatable", "planner"),
                    _custom("PlannerProblems", "planner"),
                    throttles,
                ],
            ),
        )
        # Scale-down, as Karpenter's disruption metrics show it: per method, the nodes it considered, the nodes it
        # decided to take away, what that saves, and how long it took to decide.
        self.dashboard.add_widgets(
            graph(
                "Disruption decisions (nodes) by method",
                [_custom("DisruptionDecisions", "planner", method=m) for m in METHODS],
                6,
            ),
            graph(
                "Eligible nodes by method",
                [_custom("EligibleNodes", "planner", "Maximum", method=m) for m in METHODS],
                6,
            ),
            graph(
                "Savings decided ($/hour) and cost of nodewright's nodes",
                [
                    *(_custom("SavingsPerHour", "planner", method=m) for m in METHODS[1:]),
                    _custom("CostPerHourBefore", "planner", "Maximum"),
                ],
                6,
            ),
            graph(
                "Evaluation time by method (ms, p90) and tick time",
                [
                    *(_custom("EvaluationDuration", "planner", "p90", method=m) for m in METHODS),
                    _custom("TickDuration", "planner", "p90"),
                ],
                6,
            ),
        )
        self.dashboard.add_widgets(
            graph(
                "Forwarder: oldest pending pod (s), heartbeats",
                [
                    _forwarder(OLDEST_PENDING_POD_METRIC, cluster, "Maximum"),
                    _forwarder(FORWARDER_HEARTBEAT_METRIC, cluster, "Sum"),
                ],
                width=24,
            ),
        )

    def _topic(self, settings: Settings) -> sns.ITopic:
        if settings.alarm_topic_arn is not None:
            return sns.Topic.from_topic_arn(self, "AlarmTopic", settings.alarm_topic_arn)
        key = kms.Key(
            self,
            "AlarmKey",
            description=f"nodewright ({settings.cluster_name}): encrypts the alarm topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # CloudWatch encrypts what it publishes to the topic with this key.
        key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        return sns.Topic(
            self,
            "AlarmTopic",
            display_name=f"nodewright alarms ({settings.cluster_name})",
            master_key=key,
            enforce_ssl=True,
        )
