"""The disruption workflow's task Lambdas: one entry point per Step Functions state, all thin.

Each function of the state machine (infra/workflow.py) names one entry point here (`handler.identify`,
`handler.drain`, ...). The state machine passes `{"input": <execution state>, "execution": <name>}`; the entry
point calls the matching step of `nodewright.service.workflow` and returns its result, which the state
machine stores under the step's key. `DisruptionFailed` and `CommandError` are raised as they are (the
state machine catches them and rolls back, without retrying), `LeaseLost` too (the state machine ends Superseded),
`PlannerBusy` is retried for a few minutes; anything else is retried by the state machine.

Nothing reads settings at import time; ports are built on the first invocation and kept for the container's
life (the EKS token is cached about 14 minutes by its source).
"""

import os
import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from nodewright import tracing
from nodewright.gcpause import paused_cycle_collector

SERVICE = "nodewright-disruption"
logger = Logger(service=SERVICE)
metrics = Metrics(service="disruption")  # namespace: POWERTOOLS_METRICS_NAMESPACE

_PORTS: Any = None


class _SystemClock:
    def now(self) -> float:
        return time.time()


def build_ports(cluster: Any = None) -> Any:
    """Settings, clients and adapters (once per container). `cluster` replaces the Kubernetes adapter."""

    from nodewright.adapters import aws_sdk
    from nodewright.adapters.dynamodb_state import DynamoDBState
    from nodewright.adapters.ec2_catalog import kept_catalog
    from nodewright.adapters.ec2_launcher import ec2_cloud
    from nodewright.adapters.eks_token import EksTokenSource
    from nodewright.adapters.kubernetes_cluster import KubernetesCluster
    from nodewright.adapters.stepfunctions_workflows import StepFunctionsWorkflows
    from nodewright.disruption.state import DisruptionSettings
    from nodewright.service.workflow import Ports
    from nodewright.settings import ProvisionerSettings, catalog_mode, spot_to_spot, state_machine

    settings = ProvisionerSettings.from_env()
    session = aws_sdk.session(settings.region)
    # Resolved afresh for every step: LaunchReplacement must launch with what the planner judged drift against
    # (a new AMI release, a changed subnet), not with a resolution cached minutes earlier.
    cloud = ec2_cloud(
        settings.cluster,
        settings.node_role,
        settings.instance_profile,
        settings.region,
        session,
        resolve_ttl=0.0,
        node_roles=settings.node_roles,
    )
    if cluster is None:
        tokens = EksTokenSource(settings.cluster, session.client("sts"), settings.region)
        cluster = KubernetesCluster.from_eks(settings.cluster, cloud.eks, tokens)
    catalog = kept_catalog(catalog_mode(os.environ), settings.region, cloud.ec2, session)
    state = DynamoDBState(settings.table, session.client("dynamodb"))
    disruption = DisruptionSettings(spot_to_spot=spot_to_spot(os.environ))
    # Whether a lease's holder still runs is Step Functions' answer about its own executions.
    workflows = StepFunctionsWorkflows(state_machine(os.environ), session.client("stepfunctions"))
    return Ports(cluster, cloud, state, _SystemClock(), catalog, disruption, workflows)


def _ports() -> Any:
    global _PORTS
    if _PORTS is None:
        with paused_cycle_collector():  # set-up allocates what lives as long as the container
            _PORTS = build_ports()
    return _PORTS


def _run(step: str, event: dict[str, Any]) -> dict[str, Any]:
    from nodewright.service.workflow import STEPS

    state = event.get("input")
    execution = event.get("execution")
    if not isinstance(state, dict) or not isinstance(execution, str) or not execution:
        from nodewright.disruption.commands import CommandError

        raise CommandError(
            'task payload: expected {"input": <execution state>, "execution": <execution name>}; '
            "check the state machine's Parameters for this task"
        )
    logger.append_keys(execution=execution, nodeclaim=state.get("nodeclaim"), step=step)
    started = time.perf_counter()
    try:
        with tracing.subsegment(SERVICE, f"## {step}", step=step, nodeclaim=str(state.get("nodeclaim", ""))):
            result: dict[str, Any] = STEPS[step](state, execution, _ports())
    except Exception as error:
        logger.exception("step failed", extra={"error": type(error).__name__})
        raise
    finally:
        metrics.add_dimension("step", step)
        metrics.add_metric("StepDuration", MetricUnit.Milliseconds, (time.perf_counter() - started) * 1000)
    if step == "rollback":
        metrics.add_metric("Rollbacks", MetricUnit.Count, 1)
    if step == "drain":
        metrics.add_metric("PodsEvicted", MetricUnit.Count, len(result.get("evicted", [])))
        metrics.add_metric("EvictionsBlocked", MetricUnit.Count, len(result.get("blocked", [])))
        metrics.add_metric("PodsDeleted", MetricUnit.Count, len(result.get("deleted", [])))
    logger.info("step done", extra={"result": result})
    return result


def _entry(step: str, *others: str) -> Any:
    """The entry point of `step`; a payload's `step` may name one of `others` instead (a function serving more than
    one state: the Drain function also runs CheckVolumes)."""

    @logger.inject_lambda_context(log_event=False)
    @metrics.log_metrics
    def entry(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        asked = event.get("step") or step
        if asked != step and asked not in others:
            from nodewright.disruption.commands import CommandError

            raise CommandError(f"task payload: step {asked!r}: this function runs {', '.join((step, *others))}")
        return _run(str(asked), event)

    entry.__name__ = step
    entry.__doc__ = f"The `{step}` step of the disruption workflow."
    return entry


identify = _entry("identify")
launch_replacement = _entry("launch_replacement")
check_replacement = _entry("check_replacement")
drain = _entry("drain", "volumes")
terminate = _entry("terminate")
release = _entry("release")
rollback = _entry("rollback")
