"""Interruption Lambda: SQS records carrying EventBridge events in, disruption workflows started out.

Thin by design: Powertools' BatchProcessor walks the SQS records and reports partial batch failures; each
record's body goes to `nodewright.service.interrupt.handle_message` once, and the result becomes log lines
and EMF metrics.

Failures, and what SQS then does:
- A malformed message (not JSON, an unknown event type, a missing or bad field) fails only its own record.
  SQS makes it visible again after the visibility timeout and, after 5 receives, moves it to the
  dead-letter queue, where the error logged here names the field. The rest of the batch is processed.
  (When every record of a batch fails, Powertools fails the invocation instead; SQS then retries them all,
  which is the same outcome.)
- An event for an instance this cluster does not own succeeds (acknowledged, with a log line): retrying
  would never make the instance ours.
- A port error (EC2, the API server, Step Functions) fails the record, and the retry is safe: the execution name
  derives from the event id and NodeClaim, so a workflow that did start is not started again. DynamoDB is written
  only after the workflow started, and its failure is reported (UnavailableMarksFailed), not raised.
- An event this stack does not trust (another account or region, a warning past its notice, one EC2 contradicts)
  succeeds as refused: logged as a warning, counted as EventsRefused, and nothing is started or deleted.
- Missing settings fail the whole invocation before any record is touched, so the batch comes back intact.

Event parsing lives in the pure core (`nodewright.interruption.messages`, one parser per event type), not in
Powertools parser models here: `nodewright explain-event` reads events with the very same code, and its
errors name the field path (`detail.instance-id: missing`) in the handler's logs and the CLI alike.

Nothing reads settings at import time: clients and adapters are built on the first invocation and kept for
the container's life (warm invocations reuse the EKS token and the API client).
"""

# No `from __future__ import annotations`: as in the provisioner's handler, the runtime (and the local
# world's seam) may load this file without registering it in sys.modules.
import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from nodewright import tracing
from nodewright.gcpause import paused_cycle_collector

SERVICE = "nodewright-interruption"
logger = Logger(service=SERVICE)
metrics = Metrics(service="interruption")  # namespace: POWERTOOLS_METRICS_NAMESPACE
# Reports failed records as batchItemFailures (the event source mapping needs ReportBatchItemFailures).
processor = BatchProcessor(event_type=EventType.SQS)

ACTION_METRICS = {
    "interrupt": "InstancesInterrupted",
    "rebalance": "InstancesRebalanced",
    "refuse": "EventsRefused",
    "ignore": "InstancesIgnored",
}


class _SystemClock:
    def now(self) -> float:
        return time.time()


class _Runtime:
    """What one container keeps between invocations (a plain class: see the note on imports above)."""

    def __init__(self, cluster_name: str, handle: Any) -> None:
        self.cluster_name = cluster_name
        self.handle = handle  # body -> InterruptResult


_RUNTIME: "_Runtime | None" = None


def _runtime() -> _Runtime:
    global _RUNTIME
    if _RUNTIME is None:
        with paused_cycle_collector():  # set-up allocates what lives as long as the container
            _RUNTIME = build_runtime()
    return _RUNTIME


def build_runtime(cluster: Any = None, workflows: Any = None) -> _Runtime:
    """Build settings, clients and adapters (once per container).

    `cluster` replaces the Kubernetes adapter (a test's in-memory Cluster); by default the cluster is reached
    through its EKS endpoint with an EKS token. `workflows` replaces the Step Functions adapter.
    """
    from botocore.config import Config

    from nodewright.adapters import aws_sdk
    from nodewright.adapters.dynamodb_state import DynamoDBState
    from nodewright.adapters.ec2_launcher import Ec2Cloud
    from nodewright.adapters.eks_token import EksTokenSource
    from nodewright.adapters.kubernetes_cluster import KubernetesCluster
    from nodewright.adapters.stepfunctions_workflows import StepFunctionsWorkflows
    from nodewright.service.interrupt import handle_message
    from nodewright.settings import InterruptionSettings

    settings = InterruptionSettings.from_env()
    session = aws_sdk.session(settings.region)
    config = Config(retries={"mode": "standard", "max_attempts": 5}, connect_timeout=5, read_timeout=20)
    eks = session.client("eks", config=config)
    if cluster is None:
        cluster = KubernetesCluster.from_eks(
            settings.cluster, eks, EksTokenSource(settings.cluster, session.client("sts"), settings.region)
        )
    if workflows is None:
        workflows = StepFunctionsWorkflows(settings.state_machine, session.client("stepfunctions", config=config))
    state = DynamoDBState(settings.table, session.client("dynamodb", config=config))
    # Only describe_instances is used (instances whose NodeClaim status is not written yet are found by their
    # tags), so no node role or instance profile, and no SSM client, is needed.
    cloud = Ec2Cloud(settings.cluster, "", "", ec2=session.client("ec2", config=config), ssm=None, eks=eks)
    clock = _SystemClock()

    trusted = (settings.account, settings.region)

    def handle(body: str) -> Any:
        return handle_message(
            body, cluster, state, workflows, clock, settings.rebalance, cloud, settings.cluster, trusted
        )

    logger.info("interruption handler ready", extra={"cluster": settings.cluster, "rebalance": settings.rebalance})
    return _Runtime(settings.cluster, handle)


def record_handler(record: SQSRecord) -> dict[str, Any]:
    """Handle one SQS record; raising marks only this record failed."""
    from nodewright.interruption.messages import EventError

    runtime = _runtime()
    try:
        with tracing.subsegment(SERVICE, "## interruption", message_id=record.message_id):
            result = runtime.handle(record.body)
    except EventError as error:
        metrics.add_metric("MalformedMessages", MetricUnit.Count, 1)
        logger.error(
            "malformed message; it goes to the dead-letter queue after its retries",
            extra={"message_id": record.message_id, "field": error.path, "error": str(error)},
        )
        raise
    summary: dict[str, Any] = result.to_json()
    for decision in summary["decisions"]:
        metrics.add_metric(ACTION_METRICS[decision["action"]], MetricUnit.Count, 1)
        if decision["action"] == "refuse":
            logger.warning(
                "event refused: it deletes nothing",
                extra={"event_id": summary["event_id"], "instance": decision["instance"], "reason": decision["reason"]},
            )
        elif decision["action"] == "ignore" and "nodeclaim" not in decision:
            logger.info(
                "instance not owned by this cluster (or event not acted on); acknowledged",
                extra={"event_id": summary["event_id"], "instance": decision["instance"], "reason": decision["reason"]},
            )
    metrics.add_metric("WorkflowsStarted", MetricUnit.Count, summary["started"])
    metrics.add_metric("WorkflowsAlreadyStarted", MetricUnit.Count, summary["already_started"])
    metrics.add_metric("OfferingsMarkedUnavailable", MetricUnit.Count, len(summary["unavailable"]))
    if summary["started"]:
        # From the event (e.g. the Spot warning) to its workflow started: the part of the two minutes spent here.
        latency = max(0.0, time.time() - result.message.time)
        metrics.add_metric("EventToWorkflowLatency", MetricUnit.Milliseconds, latency * 1000)
    if "unavailable_error" in summary:
        metrics.add_metric("UnavailableMarksFailed", MetricUnit.Count, 1)
        logger.warning("offering not marked unavailable", extra={"error": summary["unavailable_error"]})
    if "events_error" in summary:
        logger.warning("node events not recorded", extra={"error": summary["events_error"]})
    logger.info("event handled", extra={"message_id": record.message_id, "result": summary})
    return summary


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Process an SQS batch; returns `batchItemFailures` naming the records to retry."""
    _runtime()  # settings and clients first: a misconfiguration fails the invocation, not each record
    response: dict[str, Any] = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    return response
