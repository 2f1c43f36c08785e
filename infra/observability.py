"""Alarms and one CloudWatch dashboard for the whole system.

Alarms (the interruption construct owns the one on its dead-letter queue): failed disruption executions,
throttled invocations of any nodewright function, and a planner schedule that could not deliver its tick.
The dashboard puts each behaviour on one row: provisioning, interruptions, the disruption workflow, the
planner, and scale-down by method; the custom metrics are the ones the handlers emit with Powertools (EMF).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config import Settings

NAMESPACE = "nodewright"  # the handlers' Powertools Metrics namespace
PERIOD = Duration.minutes(1)


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
        steps: Sequence[lambda_.IFunction],
    ) -> None:
        super().__init__(scope, construct_id)
        cluster = settings.cluster_name
        functions = [provisioner, interruption, planner, *steps]
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
        }

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
                markdown=f"# nodewright: {cluster}\nProvisioning, interruptions, the disruption workflow and the "
                "planner. Alarms: failed executions, throttles, interruption dead letters, missed planner ticks.",
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
            graph("Workflow step errors", [f.metric_errors(period=PERIOD) for f in steps]),
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
