"""Parse and validate NodePool and NodeClaim documents exactly as Karpenter v1 users write them.

Accepted API versions: `karpenter.sh/v1` unchanged and `nodewright.io/v1`. Every rule of Karpenter v1.14's
NodePool CRD and its runtime validation is checked here (label rules in `label_rules`, requirements and
taints in `fields`); EC2NodeClasses are parsed in `parse_ec2nodeclass`. Fields Karpenter has but nodewright
does not support yet are refused by name; nothing is silently ignored. Parsers collect every error of a
document rather than stopping at the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nodewright.model.durations import DurationError, cron_problem, parse_duration
from nodewright.model.errors import Collector, ValidationError
from nodewright.model.fields import parse_labels, parse_requirements, parse_taints
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodepool import Budget, Disruption, NodeClassRef, NodePool
from nodewright.model.schema import (
    check_fields,
    dns_subdomain_problem,
    get_enum,
    get_int,
    get_list,
    get_map,
    get_resources,
    get_str,
    get_str_map,
    join,
    label_value_problem,
    map_key,
)

NODEPOOL_API_VERSIONS = ("karpenter.sh/v1", "nodewright.io/v1")
NODECLASS_GROUPS = ("karpenter.k8s.aws", "nodewright.io")
TOP_LEVEL_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
BUDGET_REASONS = ("Underutilized", "Empty", "Drifted")
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")


# --------------------------------------------------------------------------------------------- shared


def object_name(doc: Mapping[str, Any]) -> str:
    """metadata.name when it is a string, else "" (used to label errors before validation)."""
    metadata = doc.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("name"), str):
        return str(metadata["name"])
    return ""


def check_header(
    ctx: Collector, doc: Mapping[str, Any], api_versions: tuple[str, ...], extra: tuple[str, ...] = ()
) -> str:
    """Check apiVersion, metadata.name and the top-level fields; return the apiVersion ("" when wrong)."""
    check_fields(ctx, doc, "", TOP_LEVEL_FIELDS + extra)
    api_version = get_str(ctx, doc.get("apiVersion"), "apiVersion", required=True) or ""
    if api_version and api_version not in api_versions:
        if api_version.endswith(("v1beta1", "v1alpha5", "v1alpha1")):
            ctx.error(
                "apiVersion",
                f'"{api_version}" is a pre-v1 Karpenter API; nodewright reads {" or ".join(api_versions)} '
                "(migrate with Karpenter's v1 migration guide)",
            )
        else:
            ctx.error("apiVersion", f'"{api_version}" is not supported; use {" or ".join(api_versions)}')
        api_version = ""
    metadata = get_map(ctx, doc.get("metadata"), "metadata", required=True)
    if metadata is not None:
        name = get_str(ctx, metadata.get("name"), "metadata.name", required=True)
        if name and (problem := dns_subdomain_problem(name)):
            ctx.error("metadata.name", problem)
    return api_version


def _duration(
    ctx: Collector, value: Any, path: str, default: int | None, units: str = "hms", allow_never: bool = True
) -> int | None:
    text = get_str(ctx, value, path)
    if text is None:
        return default
    try:
        return parse_duration(text, units=units, allow_never=allow_never)
    except DurationError as exc:
        ctx.error(path, str(exc))
        return default


# ------------------------------------------------------------------------------------------ NodePool


def parse_nodepool(doc: Mapping[str, Any], source: str = "") -> tuple[NodePool | None, list[ValidationError]]:
    """Validate a NodePool document (already YAML-loaded) and build a `NodePool`.

    Returns the NodePool (None when any error was found) and every error found in the document.
    """
    ctx = Collector(source, "NodePool", object_name(doc))
    pool = nodepool_from(ctx, doc)
    return (pool if ctx.ok else None), ctx.errors


def nodepool_from(ctx: Collector, doc: Mapping[str, Any]) -> NodePool | None:
    """Like `parse_nodepool`, reporting into an existing collector."""
    api_version = check_header(ctx, doc, NODEPOOL_API_VERSIONS)
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    check_fields(
        ctx,
        spec,
        "spec",
        ("template", "disruption", "limits", "weight", "replicas"),
    )
    replicas = get_int(ctx, spec.get("replicas"), "spec.replicas", minimum=0)
    template = get_map(ctx, spec.get("template"), "spec.template", required=True) or {}
    check_fields(ctx, template, "spec.template", ("metadata", "spec"))
    metadata = get_map(ctx, template.get("metadata"), "spec.template.metadata") or {}
    check_fields(ctx, metadata, "spec.template.metadata", ("labels", "annotations"))
    labels = parse_labels(ctx, metadata.get("labels"), "spec.template.metadata.labels", nodepool=True)
    annotations = get_str_map(ctx, metadata.get("annotations"), "spec.template.metadata.annotations")

    path = "spec.template.spec"
    node_spec = get_map(ctx, template.get("spec"), path, required="template" in spec) or {}
    check_fields(
        ctx,
        node_spec,
        path,
        ("requirements", "nodeClassRef", "taints", "startupTaints", "expireAfter", "terminationGracePeriod"),
        unsupported={
            "kubelet": "kubelet settings moved to the EC2NodeClass in Karpenter v1; set spec.kubelet on the "
            "EC2NodeClass this pool references",
            "resources": "a NodePool template has no resources in Karpenter v1; remove it",
        },
    )
    if "requirements" not in node_spec and node_spec:
        ctx.error(join(path, "requirements"), "is required (write requirements: [] to allow every instance type)")
    requirements = parse_requirements(ctx, node_spec.get("requirements"), join(path, "requirements"), owner="NodePool")
    node_class_ref = _node_class_ref(ctx, node_spec.get("nodeClassRef"), join(path, "nodeClassRef"), bool(node_spec))
    taints = parse_taints(ctx, node_spec.get("taints"), join(path, "taints"))
    startup_taints = parse_taints(
        ctx, node_spec.get("startupTaints"), join(path, "startupTaints"), taints, join(path, "taints")
    )
    expire_after = _duration(ctx, node_spec.get("expireAfter"), join(path, "expireAfter"), 720 * 3600)
    termination_grace = _duration(
        ctx, node_spec.get("terminationGracePeriod"), join(path, "terminationGracePeriod"), None, allow_never=False
    )
    disruption = _disruption(ctx, spec.get("disruption"), "spec.disruption", static="replicas" in spec)
    limits = get_resources(ctx, spec.get("limits"), "spec.limits")
    weight = get_int(ctx, spec.get("weight"), "spec.weight", minimum=1, maximum=100)
    if "replicas" in spec:
        _static_rules(ctx, spec)
    name = object_name(doc)
    if name and (problem := label_value_problem(name)):
        # The name becomes the value of the karpenter.sh/nodepool label on every node.
        ctx.error("metadata.name", f"{problem}; a NodePool's name is used as the karpenter.sh/nodepool label value")
    if not ctx.ok or node_class_ref is None:
        return None
    return NodePool(
        name=name,
        node_class_ref=node_class_ref,
        requirements=requirements,
        labels=labels,
        annotations=annotations,
        taints=taints,
        startup_taints=startup_taints,
        expire_after_seconds=expire_after,
        termination_grace_period_seconds=termination_grace,
        disruption=disruption,
        limits=limits,
        weight=weight or 0,
        replicas=replicas,
        api_version=api_version,
        source=ctx.source,
        uid=str((doc.get("metadata") or {}).get("uid") or ""),
    )


def _static_rules(ctx: Collector, spec: Mapping[str, Any]) -> None:
    """Karpenter's rules for a static NodePool (`spec.replicas` set): `limits.nodes` is its only limit (other
    limits would decide the instance shape rather than bound the pool) and it has no weight (it takes no pods'
    provisioning to rank). Consolidation settings are accepted and ignored, as in Karpenter: a static pool is
    never consolidated."""
    limits = spec.get("limits")
    if isinstance(limits, dict):
        for name in sorted(str(k) for k in limits if k != "nodes"):
            ctx.error(
                map_key("spec.limits", name),
                "only limits.nodes is supported on static NodePools (spec.replicas set); remove this limit or "
                "bound the pool with limits.nodes",
            )
    if spec.get("weight") is not None:
        ctx.error(
            "spec.weight",
            "weight is not supported on static NodePools (spec.replicas set): pods never choose a static pool "
            "for new capacity; remove it",
        )


def nodepool_update_problems(old: NodePool, new: NodePool) -> list[ValidationError]:
    """The errors of updating NodePool `old` to `new` (same name), as Karpenter's CRD transition rule has them:
    a pool cannot turn static (`spec.replicas` added) or dynamic (removed); changing the count is allowed.
    Empty when the update is allowed."""
    if old.static == new.static:
        return []
    if new.static:
        message = (
            "cannot be added to an existing NodePool: it cannot move from dynamic to static provisioning; "
            "create a new NodePool with spec.replicas instead"
        )
    else:
        message = (
            "cannot be removed from a static NodePool: it cannot move from static to dynamic provisioning; "
            "keep spec.replicas (scale it with kubectl scale) or create a new NodePool without it"
        )
    return [ValidationError(new.source, "NodePool", new.name, "spec.replicas", message)]


def _node_class_ref(ctx: Collector, value: Any, path: str, required: bool) -> NodeClassRef | None:
    ref = get_map(ctx, value, path, required=required)
    if ref is None:
        return None
    check_fields(
        ctx,
        ref,
        path,
        ("group", "kind", "name"),
        unsupported={"apiVersion": "apiVersion is the v1beta1 form; in v1 write group: karpenter.k8s.aws"},
    )
    group = get_str(ctx, ref.get("group"), join(path, "group"), required=True)
    kind = get_str(ctx, ref.get("kind"), join(path, "kind"), required=True)
    name = get_str(ctx, ref.get("name"), join(path, "name"), required=True)
    if group is not None and group not in NODECLASS_GROUPS:
        ctx.error(join(path, "group"), f'"{group}" is not supported; use karpenter.k8s.aws (or nodewright.io)')
        return None
    if kind is not None and kind != "EC2NodeClass":
        ctx.error(join(path, "kind"), f'"{kind}" is not supported; nodewright only launches EC2NodeClass capacity')
        return None
    if group is None or kind is None or name is None:
        return None
    return NodeClassRef(group=group, kind=kind, name=name)


def _disruption(ctx: Collector, value: Any, path: str, static: bool = False) -> Disruption:
    raw = get_map(ctx, value, path)
    if raw is None:
        return Disruption()
    check_fields(
        ctx,
        raw,
        path,
        ("consolidationPolicy", "consolidateAfter", "budgets"),
        unsupported={"expireAfter": "moved to spec.template.spec.expireAfter in Karpenter v1"},
    )
    policy_path = join(path, "consolidationPolicy")
    policy = Disruption().consolidation_policy
    if raw.get("consolidationPolicy") == "WhenUnderutilized":
        ctx.error(policy_path, '"WhenUnderutilized" was renamed WhenEmptyOrUnderutilized in Karpenter v1')
    else:
        policy = get_enum(ctx, raw.get("consolidationPolicy"), policy_path, CONSOLIDATION_POLICIES) or policy
    if "consolidateAfter" not in raw and not static:  # a static pool ignores it (Karpenter defaults it)
        ctx.error(
            join(path, "consolidateAfter"),
            "is required in Karpenter v1 when disruption is set (e.g. consolidateAfter: 0s, 5m or Never)",
        )
    consolidate_after = _duration(ctx, raw.get("consolidateAfter"), join(path, "consolidateAfter"), 0)
    budgets = Disruption().budgets
    items = get_list(ctx, raw.get("budgets"), join(path, "budgets"))
    if items is not None:
        if len(items) > 50:
            ctx.error(join(path, "budgets"), f"has {len(items)} budgets; at most 50 are allowed")
        budgets = tuple(b for i, item in enumerate(items) if (b := _budget(ctx, item, join(join(path, "budgets"), i))))
    return Disruption(consolidation_policy=policy, consolidate_after_seconds=consolidate_after, budgets=budgets)


def _budget(ctx: Collector, value: Any, path: str) -> Budget | None:
    raw = get_map(ctx, value, path, required=True)
    if raw is None:
        return None
    errors_before = len(ctx.errors)
    check_fields(ctx, raw, path, ("nodes", "schedule", "duration", "reasons"))
    nodes = get_str(ctx, raw.get("nodes"), join(path, "nodes"), required=True)
    if nodes is not None and not BUDGET_NODES.match(nodes):
        ctx.error(join(path, "nodes"), f'"{nodes}" is not a node count or percentage; use e.g. "5" or "10%" (0-100%)')
    schedule = get_str(ctx, raw.get("schedule"), join(path, "schedule"))
    if schedule is not None and (problem := cron_problem(schedule)):
        ctx.error(join(path, "schedule"), problem)
    duration_text = get_str(ctx, raw.get("duration"), join(path, "duration"))
    duration = None
    if duration_text is not None:
        # Go's Duration.String() appends "0s" (e.g. 10m0s), so Karpenter's pattern accepts that suffix.
        text = duration_text[:-2] if duration_text.endswith(("h0s", "m0s")) else duration_text
        try:
            duration = parse_duration(text, units="hm")
        except DurationError as exc:
            ctx.error(join(path, "duration"), f"{exc} (budgets use hours and minutes only)")
    if (schedule is None) != (duration_text is None):
        missing = "duration" if schedule is not None else "schedule"
        ctx.error(join(path, missing), "schedule and duration must be set together (or both left out)")
    reasons: list[str] = []
    raw_reasons = get_list(ctx, raw.get("reasons"), join(path, "reasons")) or []
    if len(raw_reasons) > 50:
        ctx.error(join(path, "reasons"), f"has {len(raw_reasons)} reasons; at most 50 are allowed")
    for i, reason in enumerate(raw_reasons):
        checked = get_enum(ctx, reason, join(join(path, "reasons"), i), BUDGET_REASONS)
        if checked in reasons:
            ctx.error(join(join(path, "reasons"), i), f"duplicate reason {checked}; list each reason once")
        elif checked:
            reasons.append(checked)
    if len(ctx.errors) > errors_before or nodes is None:
        return None
    return Budget(nodes=nodes, schedule=schedule, duration_seconds=duration, reasons=tuple(reasons))


# ----------------------------------------------------------------------------------------- NodeClaim

NODECLAIM_API_VERSIONS = ("karpenter.sh/v1", "nodewright.io/v1")


def _timestamp(value: Any) -> float:
    """metadata.creationTimestamp as seconds since the epoch (YAML may already have made it a datetime)."""
    if isinstance(value, datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=UTC)
        return stamp.timestamp()
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0
    return 0.0


def parse_nodeclaim(doc: Mapping[str, Any], source: str = "") -> tuple[NodeClaim | None, list[ValidationError]]:
    """Validate a NodeClaim (capacity already asked for) and build a `NodeClaim`.

    The spec is checked strictly; status (providerID, nodeName, conditions) is read when present, since
    NodeClaims usually come from the API server rather than from a user's file.
    """
    ctx = Collector(source, "NodeClaim", object_name(doc))
    claim = nodeclaim_from(ctx, doc)
    return (claim if ctx.ok else None), ctx.errors


def nodeclaim_from(ctx: Collector, doc: Mapping[str, Any]) -> NodeClaim | None:
    """Like `parse_nodeclaim`, reporting into an existing collector."""
    check_header(ctx, doc, NODECLAIM_API_VERSIONS)
    metadata = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    metadata = metadata or {}
    labels = get_str_map(ctx, metadata.get("labels"), "metadata.labels")
    annotations = get_str_map(ctx, metadata.get("annotations"), "metadata.annotations")
    spec = get_map(ctx, doc.get("spec"), "spec", required=True) or {}
    check_fields(
        ctx,
        spec,
        "spec",
        (
            "requirements",
            "nodeClassRef",
            "taints",
            "startupTaints",
            "expireAfter",
            "terminationGracePeriod",
            "resources",
        ),
    )
    requirements = parse_requirements(ctx, spec.get("requirements"), "spec.requirements", owner="NodeClaim")
    ref = _node_class_ref(ctx, spec.get("nodeClassRef"), "spec.nodeClassRef", required=True)
    taints = parse_taints(ctx, spec.get("taints"), "spec.taints")
    startup_taints = parse_taints(ctx, spec.get("startupTaints"), "spec.startupTaints")
    _duration(ctx, spec.get("expireAfter"), "spec.expireAfter", None)
    _duration(ctx, spec.get("terminationGracePeriod"), "spec.terminationGracePeriod", None, allow_never=False)
    resources = get_map(ctx, spec.get("resources"), "spec.resources") or {}
    check_fields(ctx, resources, "spec.resources", ("requests",))
    requests = get_resources(ctx, resources.get("requests"), "spec.resources.requests")
    status = doc.get("status") if isinstance(doc.get("status"), dict) else {}
    status = status or {}
    conditions = {
        str(c.get("type")): (str(c.get("status") or ""), str(c.get("reason") or ""))
        for c in status.get("conditions") or []
        if isinstance(c, dict) and c.get("type")
    }
    registered_at = next(
        (
            _timestamp(c.get("lastTransitionTime"))
            for c in status.get("conditions") or []
            if isinstance(c, dict) and c.get("type") == "Registered" and c.get("status") == "True"
        ),
        0.0,
    )
    provider_id = str(status.get("providerID") or "")
    nodepool = labels.get("karpenter.sh/nodepool", "")
    if not nodepool:
        ctx.error('metadata.labels["karpenter.sh/nodepool"]', "is required: it names the NodePool the claim belongs to")
    if not ctx.ok or ref is None:
        return None
    return NodeClaim(
        name=object_name(doc),
        nodepool=nodepool,
        requirements=requirements,
        labels=labels,
        annotations=annotations,
        taints=taints,
        startup_taints=startup_taints,
        requests=requests,
        instance_type=labels.get("node.kubernetes.io/instance-type", ""),
        zone=labels.get("topology.kubernetes.io/zone", ""),
        capacity_type=labels.get("karpenter.sh/capacity-type", ""),
        # providerID is aws:///<zone>/<instance-id>; the instance id is its last segment.
        instance_id=provider_id.rsplit("/", 1)[-1] if provider_id else "",
        provider_id=provider_id,
        node_name=str(status.get("nodeName") or ""),
        created_at=_timestamp(metadata.get("creationTimestamp")),
        registered=conditions.get("Registered", ("", ""))[0] == "True",
        initialized=conditions.get("Initialized", ("", ""))[0] == "True",
        node_class=ref.name,
        conditions=conditions,
        registered_at=registered_at,
    )
