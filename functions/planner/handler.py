"""The planner Lambda: on each schedule tick, finish registrations, find drift, and start the disruption workflow
for every node a method (expiration, emptiness, drift, multi-node and single-node consolidation) decides to take
away. Thin: `nodewright.service.plan.tick` decides and acts; this maps its result to logs, EMF metrics and the
response. Nothing reads settings at import time.
"""

import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.utilities.typing import LambdaContext

from nodewright import tracing
from nodewright.gcpause import paused_cycle_collector

SERVICE = "nodewright-planner"
logger = Logger(service=SERVICE)
metrics = Metrics(service="planner")  # namespace: POWERTOOLS_METRICS_NAMESPACE

_PORTS: Any = None
# EC2NodeClasses are resolved again on every tick (a tick is a minute apart), so a new AMI release, or a subnet or
# security group that no longer matches, is seen as drift within a tick or two.
RESOLVE_SECONDS = 50.0


class _SystemClock:
    def now(self) -> float:
        return time.time()


def build_ports(cluster: Any = None) -> Any:
    """The tick's ports, built once per container. `cluster` replaces the Kubernetes adapter."""

    from nodewright.adapters import aws_sdk
    from nodewright.adapters.dynamodb_state import DynamoDBState
    from nodewright.adapters.ec2_catalog import kept_catalog
    from nodewright.adapters.ec2_launcher import ec2_cloud
    from nodewright.adapters.eks_token import EksTokenSource
    from nodewright.adapters.kubernetes_cluster import KubernetesCluster
    from nodewright.adapters.stepfunctions_workflows import StepFunctionsWorkflows
    from nodewright.disruption.state import DisruptionSettings
    from nodewright.service.plan import PlannerPorts
    from nodewright.settings import PlannerSettings

    settings = PlannerSettings.from_env()
    session = aws_sdk.session(settings.region)
    # The planner launches nothing; it terminates instances of NodeClaims that never registered and resolves
    # EC2NodeClasses (subnets, security groups, images) to tell drift.
    cloud = ec2_cloud(
        settings.cluster,
        settings.node_role,
        settings.instance_profile,
        settings.region,
        session,
        resolve_ttl=RESOLVE_SECONDS,
        node_roles=settings.node_roles,
    )
    if cluster is None:
        tokens = EksTokenSource(settings.cluster, session.client("sts"), settings.region)
        # The planner keeps the cluster's lists in its warm container and reads what changed (adapters.informer).
        cluster = KubernetesCluster.from_eks(settings.cluster, cloud.eks, tokens, settings.incremental_reads)
    catalog = kept_catalog(settings.catalog, settings.region, cloud.ec2, session)
    return PlannerPorts(
        request_capacity=_provisioner_invoker(settings.provisioner, session) if settings.provisioner else None,
        cluster_name=settings.cluster,
        cluster=cluster,
        cloud=cloud,
        workflows=StepFunctionsWorkflows(settings.state_machine, session.client("stepfunctions")),
        clock=_SystemClock(),
        state=DynamoDBState(settings.table, session.client("dynamodb")),
        catalog=catalog,
        settings=DisruptionSettings(spot_to_spot=settings.spot_to_spot, node_repair=settings.node_repair),
    )


def _provisioner_invoker(function: str, session: Any) -> Any:
    """Ask the provisioner, without waiting for it, for a short CapacityBuffer's capacity (`service.buffers`): the
    provisioner plans and launches in its own time, and the next tick sees the NodeClaims it created."""
    import json

    client = session.client("lambda")

    def invoke(payload: dict[str, Any]) -> None:
        client.invoke(FunctionName=function, InvocationType="Event", Payload=json.dumps(payload).encode())

    return invoke


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One tick. The event (from EventBridge Scheduler) carries nothing the planner needs."""
    from nodewright.service.plan import tick

    global _PORTS
    if _PORTS is None:
        with paused_cycle_collector():  # set-up allocates what lives as long as the container
            _PORTS = build_ports()
    started = time.perf_counter()
    with tracing.subsegment(SERVICE, "## tick"):
        result = tick(_PORTS).to_json()
    metrics.add_metric("TickDuration", MetricUnit.Milliseconds, (time.perf_counter() - started) * 1000)
    metrics.add_metric("DisruptionsStarted", MetricUnit.Count, len(result["started"]))
    metrics.add_metric("CandidatesSkipped", MetricUnit.Count, len(result["skipped"]))
    metrics.add_metric("DisruptionsBlocked", MetricUnit.Count, result["blocked"])
    metrics.add_metric("Unconsolidatable", MetricUnit.Count, result["unconsolidatable"])
    metrics.add_metric("PlannerProblems", MetricUnit.Count, len(result["problems"]))
    metrics.add_metric("InstancesCollected", MetricUnit.Count, len(result["collected"]))
    # Reconciliation: nodes given back (their workflow ended without finishing) and NodeClaims of vanished instances.
    repaired = [r["kind"] for r in result["repaired"]]
    metrics.add_metric("NodesRestored", MetricUnit.Count, repaired.count("restore"))
    metrics.add_metric("NodeClaimsForgotten", MetricUnit.Count, repaired.count("forget"))
    decisions = result["decisions"]
    metrics.add_metric("CostPerHourBefore", MetricUnit.Count, decisions.get("cost_per_hour_before", 0.0))
    for figures in result["methods"]:
        _method_metrics(figures, [c for c in decisions.get("commands", []) if c["method"] == figures["method"]])
    for problem in result["problems"]:
        logger.warning("invalid object", extra={"problem": problem})
    for entry in decisions.get("commands", []):
        logger.info("disruption decided", extra=entry)
    for instance in result["collected"]:
        logger.warning("terminated an instance no NodeClaim accounts for", extra={"instance_id": instance})
    for repair in result["repaired"]:
        logger.warning("reconciled", extra=repair)
    logger.info("tick", extra={k: v for k, v in result.items() if k != "decisions"})
    return result


def _method_metrics(figures: dict[str, Any], commands: list[dict[str, Any]]) -> None:
    """Per method (Karpenter's disruption metrics): eligible nodes, evaluation time, nodes decided, savings."""
    dimensions = {"method": figures["method"], "reason": figures["reason"]}
    for name, unit, value in (
        ("EligibleNodes", MetricUnit.Count, figures["eligible"]),
        ("EvaluationDuration", MetricUnit.Milliseconds, figures["seconds"] * 1000),
        ("DisruptionDecisions", MetricUnit.Count, len(commands)),
        ("SavingsPerHour", MetricUnit.Count, sum(c["savings_per_hour"] for c in commands)),
    ):
        with single_metric(
            name=name, unit=unit, value=value, namespace=metrics.namespace, default_dimensions={"service": "planner"}
        ) as metric:
            for key, dimension in dimensions.items():
                metric.add_dimension(key, dimension)
