"""The planner Lambda: on each schedule tick, finish registrations and start the disruption workflow for every
node a method (expiration today) names. Thin: `nodewright.service.plan.tick` decides and acts; this maps its
result to logs, EMF metrics and the response. Nothing reads settings at import time.
"""

import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from nodewright.gcpause import paused_cycle_collector

logger = Logger(service="nodewright-planner")
metrics = Metrics(namespace="nodewright", service="planner")

_RUNTIME: Any = None


class _SystemClock:
    def now(self) -> float:
        return time.time()


def build_runtime(cluster: Any = None) -> Any:
    """(cluster, cloud, workflows, clock), built once per container. `cluster` replaces the Kubernetes adapter."""

    from nodewright.adapters import aws_sdk
    from nodewright.adapters.ec2_launcher import ec2_cloud
    from nodewright.adapters.eks_token import EksTokenSource
    from nodewright.adapters.kubernetes_cluster import KubernetesCluster
    from nodewright.adapters.stepfunctions_workflows import StepFunctionsWorkflows
    from nodewright.settings import PlannerSettings

    settings = PlannerSettings.from_env()
    session = aws_sdk.session(settings.region)
    # The planner only terminates instances of NodeClaims that never registered; it launches nothing, so it
    # has no node role or instance profile to pass.
    cloud = ec2_cloud(settings.cluster, "", "", settings.region, session)
    if cluster is None:
        tokens = EksTokenSource(settings.cluster, session.client("sts"), settings.region)
        cluster = KubernetesCluster.from_eks(settings.cluster, cloud.eks, tokens)
    workflows = StepFunctionsWorkflows(settings.state_machine, session.client("stepfunctions"))
    return cluster, cloud, workflows, _SystemClock()


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """One tick. The event (from EventBridge Scheduler) carries nothing the planner needs."""
    from nodewright.service.plan import tick

    global _RUNTIME
    if _RUNTIME is None:
        with paused_cycle_collector():  # set-up allocates what lives as long as the container
            _RUNTIME = build_runtime()
    result = tick(*_RUNTIME).to_json()
    metrics.add_metric("DisruptionsStarted", MetricUnit.Count, len(result["started"]))
    metrics.add_metric("CandidatesSkipped", MetricUnit.Count, len(result["skipped"]))
    metrics.add_metric("PlannerProblems", MetricUnit.Count, len(result["problems"]))
    for problem in result["problems"]:
        logger.warning("invalid object", extra={"problem": problem})
    logger.info("tick", extra=result)
    return result
