"""Provisioner Lambda: a batch of pending pods in, every provisioning decision with its reason out.

Thin by design: validate the forwarder's payload at the edge (`service.batch.parse_batch`), check it is
for this cluster, answer a retried delivery that launched from its record (`service.provision.delivery`, in
the stack's DynamoDB table), otherwise run `nodewright.service.provision.provision`, and map the result to the
response, one structured log line per launch and per pod that could not be placed, and metrics. Then write the
pod events the payload reports as NodeClaims' `status.lastPodEventTime`, where the API server confirms them
(`service.provision.podevents`; the forwarder may not write NodeClaim status itself).

Nothing reads settings at import time: clients and adapters are built on the first invocation and kept in
this module for the container's life (warm invocations reuse the EKS token, the parts of EC2NodeClasses
resolved, launch template names, the instance catalog, and the pods, Nodes and NodeClaims parsed by
resourceVersion). With `NODEWRIGHT_INCREMENTAL_READS` (default true) it keeps the Nodes and NodeClaims it read
too, and a warm batch reads only what changed since (`adapters.informer`; NodeClaims proven current against a
consistent read, so a launch never misses a NodeClaim the last holder of the planner lock created).

The instance catalog: `NODEWRIGHT_CATALOG=live` (default) reads EC2 DescribeInstanceTypes /
DescribeInstanceTypeOfferings, the Pricing API and spot price history, falling back to the shipped snapshot
for whatever fails (`adapters.ec2_catalog.LiveSource`); a warm container reads types and offerings again every
5 minutes and prices every 12 hours, Karpenter's TTLs (`catalog.refreshing`).
`NODEWRIGHT_CATALOG=snapshot` pins the offline snapshot: for accounts that cannot reach the Pricing API, and
for the local world, where moto's placeholder spot prices (all 0.00001) would make every spot type look
free.
"""

import os
import time
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from nodewright import tracing
from nodewright.gcpause import paused_cycle_collector

# The payload is validated by a plain function of the core, not a pydantic model through Powertools' parser:
# importing pydantic (and its plugin discovery through importlib.metadata) cost this function 60-80 ms of
# its cold start, a fifth of the budget, to check five fields. The pods' contents are validated later, pod by
# pod, by the core's model either way.
from nodewright.service.batch import parse_batch

SERVICE = "nodewright-provisioner"
logger = Logger(service=SERVICE)
metrics = Metrics(service="provisioner")  # namespace: POWERTOOLS_METRICS_NAMESPACE


class WrongClusterError(ValueError):
    """The batch names another cluster than the one this provisioner serves."""


class _SystemClock:
    def now(self) -> float:
        return time.time()


class _Runtime:
    """What one container keeps between invocations. A plain class, not a dataclass: the Lambda runtime
    (and the local world's seam) may load this file without registering it in sys.modules, which
    dataclasses need."""

    def __init__(self, cluster_name: str, run: Any) -> None:
        self.cluster_name = cluster_name
        self.run = run  # batch payload -> response


_RUNTIME: "_Runtime | None" = None


def _runtime() -> _Runtime:
    """The container's runtime, built on first use."""
    global _RUNTIME
    if _RUNTIME is None:
        with paused_cycle_collector():  # set-up allocates what lives as long as the container
            _RUNTIME = build_runtime()
    return _RUNTIME


def build_runtime(cluster: Any = None) -> _Runtime:
    """Build settings, clients, adapters and the service call (once per container).

    `cluster` replaces the Kubernetes adapter (a dry run against an in-memory cluster, or a test's fake
    Cluster port); by default the cluster is reached through its EKS endpoint with an EKS token.
    """
    from concurrent.futures import ThreadPoolExecutor

    from nodewright.adapters import aws_sdk
    from nodewright.adapters.ec2_launcher import ec2_cloud
    from nodewright.adapters.eks_token import EksTokenSource
    from nodewright.adapters.kubernetes_cluster import KubernetesCluster
    from nodewright.settings import ProvisionerSettings, catalog_mode

    settings = ProvisionerSettings.from_env()
    session = aws_sdk.session(settings.region)
    cloud = ec2_cloud(
        settings.cluster,
        settings.node_role,
        settings.instance_profile,
        settings.region,
        session,
        node_roles=settings.node_roles,
    )
    # Every client is made here, on this thread (a boto3 session is not thread-safe); then eks:DescribeCluster
    # waits on the network in a thread while this one imports the planning code, instead of one after the other.
    dynamodb = session.client("dynamodb")
    reading = None
    if cluster is None:
        tokens = EksTokenSource(settings.cluster, session.client("sts"), settings.region)
        describing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="describe-cluster")
        reading = describing.submit(
            KubernetesCluster.from_eks, settings.cluster, cloud.eks, tokens, settings.incremental_reads
        )
        describing.shutdown(wait=False)

    from nodewright.adapters.dynamodb_state import DynamoDBState
    from nodewright.adapters.ec2_catalog import kept_catalog
    from nodewright.scheduling import TemplateCache
    from nodewright.service.provision import WarmBatch, delivery, provision

    state = DynamoDBState(settings.table, dynamodb)
    mode = catalog_mode(os.environ)
    catalog = kept_catalog(mode, settings.region, cloud.ec2, session)
    if reading is not None:
        cluster = reading.result()  # DescribeCluster's error, if any, raised here as before
    clock = _SystemClock()
    parsed_pods: dict[Any, Any] = {}  # pods, Nodes and NodeClaims parsed by earlier calls (see model.loader)
    nodepool_templates = TemplateCache()  # NodePools prepared against the catalog, kept batch after batch
    warm = WarmBatch()  # the unchanged nodes' copies and registration, kept batch after batch

    def run(batch: Any) -> dict[str, Any]:
        if batch.pods or batch.nodes or not batch.pod_events:
            answer = provide(batch)
        else:
            # Pod events only (the forwarder had nothing else to send): no lifecycle pass, no fleet read.
            answer = {"cluster": settings.cluster, "batch_id": batch.batch_id}
        if batch.pod_events:
            # After the decision, so recording pod events never delays a launch.
            answer["pod_events"] = _record_pod_events(batch.pod_events, cluster, clock.now())
        return answer

    def provide(batch: Any) -> dict[str, Any]:
        replayed = delivery.recall(state, batch.batch_id, clock.now())
        if replayed is not None:
            logger.info("delivery answered from its record", extra={"batch_id": batch.batch_id})
            return dict(replayed)
        result = provision(
            batch,
            cluster,
            cloud,
            state,
            clock,
            catalog,
            templates=cloud,
            parsed_pods=parsed_pods,
            nodepool_templates=nodepool_templates,
            warm=warm,
        )
        answer = {"cluster": settings.cluster, **result.to_json()}
        delivery.remember(state, result, answer, clock.now())
        _emit(answer)
        return answer

    logger.info("provisioner ready", extra={"cluster": settings.cluster, "catalog": mode})
    return _Runtime(settings.cluster, run)


def _record_pod_events(events: Any, cluster: Any, now: float) -> dict[str, int]:
    """Write the forwarder's pod events as `status.lastPodEventTime` where the API server confirms them
    (`service.provision.podevents`); one log line per refusal or failure, counts for the answer and metrics."""
    from nodewright.service.provision.podevents import FAILED, REFUSED, record_pod_events

    counts: dict[str, int] = {}
    for outcome in record_pod_events(events, cluster, now):
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        if outcome.outcome == REFUSED:
            logger.warning("pod event refused", extra=outcome.to_json())
        elif outcome.outcome == FAILED:
            logger.error("pod event not recorded", extra=outcome.to_json())
    metrics.add_metric("PodEventsRecorded", MetricUnit.Count, counts.get("recorded", 0))
    metrics.add_metric("PodEventsRefused", MetricUnit.Count, counts.get(REFUSED, 0))
    return dict(sorted(counts.items()))


def _emit(result: dict[str, Any]) -> None:
    """Metrics, one log line per launch and per pod that could not be placed, and the batch's summary."""
    from nodewright.service.provision.explain import log_lines

    summary = result.get("summary", {})
    metrics.add_metric(
        "NodeClaimsLaunched", MetricUnit.Count, len([c for c in result["nodeclaims"] if not c["reused"]])
    )
    metrics.add_metric("PodsNominated", MetricUnit.Count, summary.get("nominated", 0))
    metrics.add_metric("PodsUnschedulable", MetricUnit.Count, summary.get("unschedulable", 0))
    metrics.add_metric("OfferingsUnavailable", MetricUnit.Count, summary.get("unavailable", 0))
    metrics.add_metric("FleetRequests", MetricUnit.Count, result.get("fleet_requests", 0))
    # Namespaces of unconfirmed hints not read again (the per-batch cap): a steady count means forged hints.
    unread = sum(
        int((d.get("details") or {}).get("namespaces", 0)) for d in result["decisions"] if d["subject"] == "hints"
    )
    metrics.add_metric("HintNamespacesNotReread", MetricUnit.Count, unread)
    timings = result.get("timings", {})
    if "first_create_fleet" in timings:
        metrics.add_metric("DecisionLatency", MetricUnit.Milliseconds, timings["first_create_fleet"] * 1000)
    for level, message, fields in log_lines(result):
        getattr(logger, level)(message, extra=fields)
    logger.info(
        "batch provisioned",
        extra={"batch_id": result["batch_id"], "summary": summary, "timings": timings},
    )


@logger.inject_lambda_context(log_event=False)
@metrics.log_metrics(capture_cold_start_metric=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """Provision one batch. Raises PayloadError on a malformed payload, WrongClusterError on a batch for
    another cluster."""
    batch = parse_batch(event)
    runtime = _runtime()
    if batch.cluster != runtime.cluster_name:
        raise WrongClusterError(
            f"batch {batch.batch_id} is for cluster {batch.cluster!r}, but this provisioner serves "
            f"{runtime.cluster_name!r}; check the forwarder's NODEWRIGHT_CLUSTER"
        )
    logger.append_keys(batch_id=batch.batch_id)
    # The Tracer is built on the first traced call (nodewright.tracing): its import is a quarter of a second.
    with tracing.subsegment(
        SERVICE, "## provision", batch_id=batch.batch_id, pods=len(batch.pods), nodes=len(batch.nodes)
    ):
        result: dict[str, Any] = runtime.run(batch)
    return result
