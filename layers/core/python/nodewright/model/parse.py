"""Parse and validate NodePool and EC2NodeClass documents exactly as Karpenter v1 users write them.

Accepted API versions: `karpenter.sh/v1` (NodePool) and `karpenter.k8s.aws/v1` (EC2NodeClass) unchanged,
and `nodewright.io/v1` for both. Every rule of Karpenter v1's CRDs that a user can trip over is checked
here, plus a few that catch typos Karpenter would only reveal at launch time (unknown capacity types or
architectures). Fields Karpenter has but nodewright does not support yet are refused by name; nothing is
silently ignored. Parsers collect every error of a document rather than stopping at the first.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from nodewright.model.durations import DurationError, cron_problem, parse_duration
from nodewright.model.errors import Collector, ValidationError
from nodewright.model.fields import parse_labels, parse_requirements, parse_string_list, parse_taints
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import (
    AMISelectorTerm,
    BlockDevice,
    BlockDeviceMapping,
    EC2NodeClass,
    KubeletConfiguration,
    MetadataOptions,
    SelectorTerm,
)
from nodewright.model.nodepool import Budget, Disruption, NodeClassRef, NodePool
from nodewright.model.quantity import QuantityError, parse_quantity
from nodewright.model.schema import (
    check_fields,
    dns_subdomain_problem,
    get_bool,
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
NODECLASS_API_VERSIONS = ("karpenter.k8s.aws/v1", "nodewright.io/v1")
NODECLASS_GROUPS = ("karpenter.k8s.aws", "nodewright.io")
TOP_LEVEL_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")

# AMI families Karpenter knows; nodewright generates bootstrap user data for the first two only.
SUPPORTED_AMI_FAMILIES = ("al2023", "bottlerocket")
KARPENTER_AMI_FAMILIES = ("al2023", "bottlerocket", "al2", "windows2019", "windows2022")
AMI_FAMILY_SETTINGS = {"AL2023": "al2023", "Bottlerocket": "bottlerocket"}
KARPENTER_AMI_FAMILY_SETTINGS = ("AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022")

BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
BUDGET_REASONS = ("Underutilized", "Empty", "Drifted")
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")
VOLUME_TYPES = ("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
VOLUME_SIZE = re.compile(r"^[1-9][0-9]*(Gi|G|Ti|T)$")
EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
PERCENT = re.compile(r"^(\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%$")
RESTRICTED_TAGS = (
    "karpenter.sh/nodepool",
    "karpenter.sh/managed-by",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
    "eks:eks-cluster-name",
)
_ID_PATTERNS = {
    "ami": re.compile(r"^ami-[0-9a-z]+$"),
    "subnet": re.compile(r"^subnet-[0-9a-z]+$"),
    "sg": re.compile(r"^sg-[0-9a-z]+$"),
    "cr": re.compile(r"^cr-[0-9a-z]+$"),
}
_AMI_VERSIONS = {
    "al2023": (re.compile(r"^v\d{8}$"), "v20240807"),
    "bottlerocket": (re.compile(r"^v\d+\.\d+\.\d+$"), "v1.20.0"),
}


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
        ("template", "disruption", "limits", "weight"),
        unsupported={
            "replicas": "static NodePools (spec.replicas) are not supported yet by nodewright; remove it and "
            "nodewright sizes the pool from pending pods",
        },
    )
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
    raw_requirements = get_list(ctx, node_spec.get("requirements"), join(path, "requirements")) or []
    if len(raw_requirements) > 100:
        ctx.error(join(path, "requirements"), f"has {len(raw_requirements)} entries; at most 100 are allowed")
    requirements = parse_requirements(ctx, node_spec.get("requirements"), join(path, "requirements"), nodepool=True)
    node_class_ref = _node_class_ref(ctx, node_spec.get("nodeClassRef"), join(path, "nodeClassRef"), bool(node_spec))
    taints = parse_taints(ctx, node_spec.get("taints"), join(path, "taints"))
    startup_taints = parse_taints(ctx, node_spec.get("startupTaints"), join(path, "startupTaints"))
    expire_after = _duration(ctx, node_spec.get("expireAfter"), join(path, "expireAfter"), 720 * 3600)
    termination_grace = _duration(
        ctx, node_spec.get("terminationGracePeriod"), join(path, "terminationGracePeriod"), None, allow_never=False
    )
    disruption = _disruption(ctx, spec.get("disruption"), "spec.disruption")
    limits = get_resources(ctx, spec.get("limits"), "spec.limits")
    weight = get_int(ctx, spec.get("weight"), "spec.weight", minimum=1, maximum=100)
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
        api_version=api_version,
        source=ctx.source,
    )


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


def _disruption(ctx: Collector, value: Any, path: str) -> Disruption:
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
    if "consolidateAfter" not in raw:
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
    reasons = []
    for i, reason in enumerate(get_list(ctx, raw.get("reasons"), join(path, "reasons")) or []):
        checked = get_enum(ctx, reason, join(join(path, "reasons"), i), BUDGET_REASONS)
        if checked:
            reasons.append(checked)
    if len(ctx.errors) > errors_before or nodes is None:
        return None
    return Budget(nodes=nodes, schedule=schedule, duration_seconds=duration, reasons=tuple(reasons))


# -------------------------------------------------------------------------------------- EC2NodeClass

EC2NODECLASS_FIELDS = (
    "amiFamily",
    "amiSelectorTerms",
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "role",
    "instanceProfile",
    "userData",
    "blockDeviceMappings",
    "metadataOptions",
    "kubelet",
    "tags",
    "associatePublicIPAddress",
    "detailedMonitoring",
    "instanceStorePolicy",
    "context",
)
EC2NODECLASS_OLD_FIELDS = {
    "amiSelector": "was replaced by amiSelectorTerms (a list of terms such as - alias: al2023@latest)",
    "subnetSelector": "was replaced by subnetSelectorTerms (a list of terms such as - tags: {...})",
    "securityGroupSelector": "was replaced by securityGroupSelectorTerms (a list of terms such as - tags: {...})",
    "launchTemplate": "custom launch templates are not supported (Karpenter removed them too); use the "
    "EC2NodeClass fields instead",
}


def parse_ec2nodeclass(doc: Mapping[str, Any], source: str = "") -> tuple[EC2NodeClass | None, list[ValidationError]]:
    """Validate an EC2NodeClass document (already YAML-loaded) and build an `EC2NodeClass`.

    Returns the EC2NodeClass (None when any error was found) and every error found in the document.
    """
    ctx = Collector(source, "EC2NodeClass", object_name(doc))
    node_class = ec2nodeclass_from(ctx, doc)
    return (node_class if ctx.ok else None), ctx.errors


def ec2nodeclass_from(ctx: Collector, doc: Mapping[str, Any]) -> EC2NodeClass | None:
    """Like `parse_ec2nodeclass`, reporting into an existing collector."""
    api_version = check_header(ctx, doc, NODECLASS_API_VERSIONS)
    spec = get_map(ctx, doc.get("spec"), "spec", required=True)
    if spec is None:
        return None
    check_fields(ctx, spec, "spec", EC2NODECLASS_FIELDS, unsupported=EC2NODECLASS_OLD_FIELDS)

    ami_terms = _ami_terms(ctx, spec.get("amiSelectorTerms"), "spec.amiSelectorTerms")
    family_setting = _ami_family(ctx, spec.get("amiFamily"), ami_terms)
    subnets = _selector_terms(
        ctx, spec.get("subnetSelectorTerms"), "spec.subnetSelectorTerms", ("tags", "id"), "subnet", required=True
    )
    groups = _selector_terms(
        ctx,
        spec.get("securityGroupSelectorTerms"),
        "spec.securityGroupSelectorTerms",
        ("tags", "id", "name"),
        "sg",
        required=True,
    )
    reservations = _selector_terms(
        ctx,
        spec.get("capacityReservationSelectorTerms"),
        "spec.capacityReservationSelectorTerms",
        ("tags", "id", "ownerID"),
        "cr",
        required=False,
    )
    role = get_str(ctx, spec.get("role"), "spec.role")
    profile = get_str(ctx, spec.get("instanceProfile"), "spec.instanceProfile")
    if role is not None and profile is not None:
        ctx.error("spec.instanceProfile", "set exactly one of role and instanceProfile, not both")
    elif role is None and profile is None and "role" not in spec and "instanceProfile" not in spec:
        ctx.error("spec.role", "set exactly one of role (nodewright manages the instance profile) or instanceProfile")
    for field_name, text in (("role", role), ("instanceProfile", profile)):
        if text == "":
            ctx.error(join("spec", field_name), "must not be empty")
    user_data = get_str(ctx, spec.get("userData"), "spec.userData") or ""
    mappings = _block_device_mappings(ctx, spec.get("blockDeviceMappings"), "spec.blockDeviceMappings")
    metadata_options = _metadata_options(ctx, spec.get("metadataOptions"), "spec.metadataOptions")
    kubelet = _kubelet(ctx, spec.get("kubelet"), "spec.kubelet")
    tags = _tags(ctx, spec.get("tags"), "spec.tags")
    public_ip = get_bool(ctx, spec.get("associatePublicIPAddress"), "spec.associatePublicIPAddress")
    monitoring = get_bool(ctx, spec.get("detailedMonitoring"), "spec.detailedMonitoring")
    store_policy = get_enum(ctx, spec.get("instanceStorePolicy"), "spec.instanceStorePolicy", ("RAID0",)) or ""
    context = get_str(ctx, spec.get("context"), "spec.context") or ""
    if not ctx.ok:
        return None
    return EC2NodeClass(
        name=object_name(doc),
        ami_selector_terms=ami_terms,
        subnet_selector_terms=subnets,
        security_group_selector_terms=groups,
        capacity_reservation_selector_terms=reservations,
        role=role or "",
        instance_profile=profile or "",
        user_data=user_data,
        block_device_mappings=mappings,
        metadata_options=metadata_options,
        kubelet=kubelet,
        tags=tags,
        associate_public_ip_address=public_ip,
        detailed_monitoring=bool(monitoring),
        instance_store_policy=store_policy,
        api_version=api_version,
        source=ctx.source,
        context=context,
        ami_family_setting=family_setting,
    )


def _tag_map(ctx: Collector, value: Any, path: str, limit: int | None = 20) -> dict[str, str]:
    tags = get_str_map(ctx, value, path)
    if limit is not None and len(tags) > limit:
        ctx.error(path, f"has {len(tags)} tags; at most {limit} are allowed in one term")
    for key, item in tags.items():
        if not key or not item:
            ctx.error(map_key(path, key), "empty tag keys or values are not supported (use '*' to match any value)")
    return tags


def _ami_terms(ctx: Collector, value: Any, path: str) -> tuple[AMISelectorTerm, ...]:
    items = get_list(ctx, value, path, required=True)
    if items is None:
        return ()
    if not items:
        ctx.error(path, "must have at least one term, e.g. - alias: al2023@latest")
        return ()
    if len(items) > 30:
        ctx.error(path, f"has {len(items)} terms; at most 30 are allowed")
    fields = ("alias", "id", "name", "owner", "tags", "ssmParameter")
    terms = []
    for i, raw in enumerate(items):
        where = join(path, i)
        term = get_map(ctx, raw, where, required=True)
        if term is None:
            continue
        check_fields(ctx, term, where, fields)
        present = [f for f in fields if f in term]
        if not any(f in term for f in ("alias", "id", "name", "tags", "ssmParameter")):
            ctx.error(where, "needs one of alias, id, name, tags or ssmParameter")
            continue
        for exclusive in ("alias", "id", "ssmParameter"):
            others = [f for f in present if f != exclusive]
            if exclusive in term and others:
                ctx.error(join(where, exclusive), f"cannot be combined with {', '.join(others)} in the same term")
        alias = get_str(ctx, term.get("alias"), join(where, "alias")) or ""
        if alias:
            _check_alias(ctx, alias, join(where, "alias"))
            if len(items) != 1:
                ctx.error(join(where, "alias"), "an alias term must be the only amiSelectorTerm")
        ami_id = get_str(ctx, term.get("id"), join(where, "id")) or ""
        if ami_id and not _ID_PATTERNS["ami"].match(ami_id):
            ctx.error(join(where, "id"), f'"{ami_id}" is not an AMI id (ami-0123456789abcdef0)')
        terms.append(
            AMISelectorTerm(
                alias=alias,
                id=ami_id,
                name=get_str(ctx, term.get("name"), join(where, "name")) or "",
                owner=get_str(ctx, term.get("owner"), join(where, "owner")) or "",
                tags=_tag_map(ctx, term.get("tags"), join(where, "tags")),
                ssm_parameter=get_str(ctx, term.get("ssmParameter"), join(where, "ssmParameter")) or "",
            )
        )
    return tuple(terms)


def _check_alias(ctx: Collector, alias: str, path: str) -> None:
    if len(alias) > 30 or not re.match(r"^[a-zA-Z0-9]*@.+$", alias):
        ctx.error(path, f'"{alias}" is not family@version, e.g. al2023@latest or bottlerocket@v1.20.0')
        return
    family, _, version = alias.partition("@")
    if family not in KARPENTER_AMI_FAMILIES:
        ctx.error(path, f'family "{family}" is not an AMI family; use al2023 or bottlerocket (e.g. al2023@latest)')
        return
    if family not in SUPPORTED_AMI_FAMILIES:
        ctx.error(
            path,
            f"the {family} family is not supported yet by nodewright, which bootstraps al2023 (nodeadm) and "
            "bottlerocket nodes; use al2023@latest or bottlerocket@latest",
        )
        return
    pattern, example = _AMI_VERSIONS[family]
    if version != "latest" and not pattern.match(version):
        ctx.error(
            path, f'version "{version}" is not a valid {family} version; use latest or a version such as {example}'
        )


def _ami_family(ctx: Collector, value: Any, terms: tuple[AMISelectorTerm, ...]) -> str:
    path = "spec.amiFamily"
    alias_family = next((t.alias.split("@", 1)[0] for t in terms if t.alias), "")
    text = get_str(ctx, value, path)
    if text is None:
        if terms and not alias_family:
            ctx.error(path, "is required when amiSelectorTerms has no alias term; set AL2023 or Bottlerocket")
        return ""
    if text not in KARPENTER_AMI_FAMILY_SETTINGS:
        ctx.error(path, f'"{text}" is not an AMI family; use AL2023 or Bottlerocket')
        return ""
    if text not in AMI_FAMILY_SETTINGS:
        ctx.error(
            path,
            f"{text} is not supported yet by nodewright, which generates user data for AL2023 and Bottlerocket only",
        )
        return ""
    family = AMI_FAMILY_SETTINGS[text]
    if alias_family and alias_family != family:
        ctx.error(path, f"{text} does not match the alias family {alias_family}; remove amiFamily (the alias sets it)")
    return family


def _selector_terms(
    ctx: Collector, value: Any, path: str, fields: tuple[str, ...], id_kind: str, required: bool
) -> tuple[SelectorTerm, ...]:
    items = get_list(ctx, value, path, required=required)
    if items is None:
        return ()
    if required and not items:
        ctx.error(path, "must have at least one term, e.g. - tags: {karpenter.sh/discovery: my-cluster}")
        return ()
    if len(items) > 30:
        ctx.error(path, f"has {len(items)} terms; at most 30 are allowed")
    terms = []
    for i, raw in enumerate(items):
        where = join(path, i)
        term = get_map(ctx, raw, where, required=True)
        if term is None:
            continue
        check_fields(ctx, term, where, fields)
        selecting = [f for f in fields if f in term and f != "ownerID"]
        if not selecting:
            ctx.error(where, f"needs one of {', '.join(f for f in fields if f != 'ownerID')}")
            continue
        for exclusive in ("id", "name"):
            others = [f for f in fields if f in term and f != exclusive]
            if exclusive in term and others:
                ctx.error(join(where, exclusive), f"cannot be combined with {', '.join(others)} in the same term")
        term_id = get_str(ctx, term.get("id"), join(where, "id")) or ""
        if term_id and not _ID_PATTERNS[id_kind].match(term_id):
            ctx.error(join(where, "id"), f'"{term_id}" is not a {id_kind} id ({id_kind}-0123456789abcdef0)')
        terms.append(
            SelectorTerm(
                tags=_tag_map(ctx, term.get("tags"), join(where, "tags")),
                id=term_id,
                name=get_str(ctx, term.get("name"), join(where, "name")) or "",
                owner_id=get_str(ctx, term.get("ownerID"), join(where, "ownerID")) or "",
            )
        )
    return tuple(terms)


def _block_device_mappings(ctx: Collector, value: Any, path: str) -> tuple[BlockDeviceMapping, ...]:
    items = get_list(ctx, value, path)
    if items is None:
        return ()
    if len(items) > 50:
        ctx.error(path, f"has {len(items)} mappings; at most 50 are allowed")
    out = []
    for i, raw in enumerate(items):
        where = join(path, i)
        mapping = get_map(ctx, raw, where, required=True)
        if mapping is None:
            continue
        check_fields(ctx, mapping, where, ("deviceName", "rootVolume", "ebs"))
        device = get_str(ctx, mapping.get("deviceName"), join(where, "deviceName"), required=True)
        root = get_bool(ctx, mapping.get("rootVolume"), join(where, "rootVolume")) or False
        ebs = _ebs(ctx, mapping.get("ebs"), join(where, "ebs"))
        if device and ebs:
            out.append(BlockDeviceMapping(device_name=device, ebs=ebs, root_volume=root))
    if sum(1 for m in out if m.root_volume) > 1:
        ctx.error(path, "only one mapping may set rootVolume: true")
    return tuple(out)


def _ebs(ctx: Collector, value: Any, path: str) -> BlockDevice | None:
    ebs = get_map(ctx, value, path, required=True)
    if ebs is None:
        return None
    check_fields(
        ctx,
        ebs,
        path,
        (
            "volumeSize",
            "volumeType",
            "iops",
            "throughput",
            "encrypted",
            "kmsKeyID",
            "deleteOnTermination",
            "snapshotID",
        ),
        unsupported={"volumeInitializationRate": "volumeInitializationRate is not supported yet by nodewright"},
    )
    size_bytes = None
    size = get_str(ctx, ebs.get("volumeSize"), join(path, "volumeSize"))
    if size is not None:
        if not VOLUME_SIZE.match(size):
            ctx.error(join(path, "volumeSize"), f'"{size}" must be a whole size in Gi, G, Ti or T, e.g. 100Gi')
        else:
            try:
                size_bytes = int(parse_quantity(size))
            except QuantityError as exc:
                ctx.error(join(path, "volumeSize"), str(exc))
            if size_bytes is not None and size_bytes > 64 * 10**12:
                ctx.error(join(path, "volumeSize"), f'"{size}" is larger than the EBS maximum of 64T')
    snapshot = get_str(ctx, ebs.get("snapshotID"), join(path, "snapshotID")) or ""
    if size is None and not snapshot:
        ctx.error(path, "set volumeSize or snapshotID")
    volume_type = get_enum(ctx, ebs.get("volumeType"), join(path, "volumeType"), VOLUME_TYPES) or "gp3"
    iops = get_int(ctx, ebs.get("iops"), join(path, "iops"), minimum=100, maximum=256000)
    if iops is not None and volume_type not in ("io1", "io2", "gp3"):
        ctx.error(join(path, "iops"), f"iops applies to io1, io2 and gp3 volumes only, not {volume_type}")
    throughput = get_int(ctx, ebs.get("throughput"), join(path, "throughput"), minimum=125, maximum=1000)
    if throughput is not None and volume_type != "gp3":
        ctx.error(join(path, "throughput"), f"throughput applies to gp3 volumes only, not {volume_type}")
    encrypted = get_bool(ctx, ebs.get("encrypted"), join(path, "encrypted"))
    delete = get_bool(ctx, ebs.get("deleteOnTermination"), join(path, "deleteOnTermination"))
    return BlockDevice(
        volume_size_bytes=size_bytes,
        volume_type=volume_type,
        iops=iops,
        throughput=throughput,
        encrypted=True if encrypted is None else encrypted,
        kms_key_id=get_str(ctx, ebs.get("kmsKeyID"), join(path, "kmsKeyID")) or "",
        delete_on_termination=True if delete is None else delete,
        snapshot_id=snapshot,
    )


def _metadata_options(ctx: Collector, value: Any, path: str) -> MetadataOptions:
    raw = get_map(ctx, value, path)
    default = MetadataOptions()
    if raw is None:
        return default
    check_fields(ctx, raw, path, ("httpEndpoint", "httpProtocolIPv6", "httpPutResponseHopLimit", "httpTokens"))
    states = ("enabled", "disabled")
    return MetadataOptions(
        http_endpoint=get_enum(ctx, raw.get("httpEndpoint"), join(path, "httpEndpoint"), states)
        or default.http_endpoint,
        http_protocol_ipv6=get_enum(ctx, raw.get("httpProtocolIPv6"), join(path, "httpProtocolIPv6"), states)
        or default.http_protocol_ipv6,
        http_put_response_hop_limit=get_int(
            ctx, raw.get("httpPutResponseHopLimit"), join(path, "httpPutResponseHopLimit"), minimum=1, maximum=64
        )
        or default.http_put_response_hop_limit,
        http_tokens=get_enum(ctx, raw.get("httpTokens"), join(path, "httpTokens"), ("required", "optional"))
        or default.http_tokens,
    )


def _reserved(ctx: Collector, value: Any, path: str) -> dict[str, int]:
    raw = get_map(ctx, value, path) or {}
    for key in raw:
        if key not in RESERVED_RESOURCES:
            ctx.error(map_key(path, str(key)), f"is not reservable; use {', '.join(RESERVED_RESOURCES)}")
    return get_resources(ctx, {k: v for k, v in raw.items() if k in RESERVED_RESOURCES}, path)


def _eviction(ctx: Collector, value: Any, path: str) -> dict[str, str]:
    raw = get_str_map(ctx, value, path)
    out = {}
    for signal, threshold in raw.items():
        where = map_key(path, signal)
        if signal not in EVICTION_SIGNALS:
            ctx.error(where, f"is not an eviction signal; use one of {', '.join(EVICTION_SIGNALS)}")
            continue
        if not PERCENT.match(threshold):
            try:
                parse_quantity(threshold)
            except QuantityError:
                ctx.error(where, f'"{threshold}" must be a quantity such as 100Mi or a percentage such as 5%')
                continue
        out[signal] = threshold
    return out


def _kubelet(ctx: Collector, value: Any, path: str) -> KubeletConfiguration:
    raw = get_map(ctx, value, path)
    if raw is None:
        return KubeletConfiguration()
    check_fields(
        ctx,
        raw,
        path,
        (
            "maxPods",
            "podsPerCore",
            "systemReserved",
            "kubeReserved",
            "evictionHard",
            "evictionSoft",
            "evictionSoftGracePeriod",
            "evictionMaxPodGracePeriod",
            "imageGCHighThresholdPercent",
            "imageGCLowThresholdPercent",
            "cpuCFSQuota",
            "clusterDNS",
        ),
    )
    soft = _eviction(ctx, raw.get("evictionSoft"), join(path, "evictionSoft"))
    grace = get_str_map(ctx, raw.get("evictionSoftGracePeriod"), join(path, "evictionSoftGracePeriod"))
    for signal, period in grace.items():
        where = map_key(join(path, "evictionSoftGracePeriod"), signal)
        if signal not in soft:
            ctx.error(where, "has no matching evictionSoft threshold; set both or neither")
        try:
            parse_duration(period)
        except DurationError as exc:
            ctx.error(where, str(exc))
    for signal in soft:
        if signal not in grace:
            ctx.error(
                map_key(join(path, "evictionSoft"), signal),
                "needs a matching evictionSoftGracePeriod entry (e.g. 1m30s)",
            )
    high = get_int(ctx, raw.get("imageGCHighThresholdPercent"), join(path, "imageGCHighThresholdPercent"), 0, 100)
    low = get_int(ctx, raw.get("imageGCLowThresholdPercent"), join(path, "imageGCLowThresholdPercent"), 0, 100)
    if high is not None and low is not None and high <= low:
        ctx.error(
            join(path, "imageGCHighThresholdPercent"),
            f"{high} must be greater than imageGCLowThresholdPercent ({low})",
        )
    dns = parse_string_list(ctx, raw.get("clusterDNS"), join(path, "clusterDNS"))
    for i, address in enumerate(dns):
        try:
            ipaddress.ip_address(address)
        except ValueError:
            ctx.error(join(join(path, "clusterDNS"), i), f'"{address}" is not an IP address')
    return KubeletConfiguration(
        max_pods=get_int(ctx, raw.get("maxPods"), join(path, "maxPods"), minimum=0),
        pods_per_core=get_int(ctx, raw.get("podsPerCore"), join(path, "podsPerCore"), minimum=0),
        system_reserved=_reserved(ctx, raw.get("systemReserved"), join(path, "systemReserved")),
        kube_reserved=_reserved(ctx, raw.get("kubeReserved"), join(path, "kubeReserved")),
        eviction_hard=_eviction(ctx, raw.get("evictionHard"), join(path, "evictionHard")),
        eviction_soft=soft,
        cluster_dns=dns,
        eviction_soft_grace_period=grace,
        eviction_max_pod_grace_period=get_int(
            ctx, raw.get("evictionMaxPodGracePeriod"), join(path, "evictionMaxPodGracePeriod")
        ),
        image_gc_high_threshold_percent=high,
        image_gc_low_threshold_percent=low,
        cpu_cfs_quota=get_bool(ctx, raw.get("cpuCFSQuota"), join(path, "cpuCFSQuota")),
    )


def _tags(ctx: Collector, value: Any, path: str) -> dict[str, str]:
    tags = get_str_map(ctx, value, path)
    for key in tags:
        where = map_key(path, key)
        if not key:
            ctx.error(where, "empty tag keys are not supported")
        elif key.startswith("kubernetes.io/cluster"):
            ctx.error(where, "is a restricted tag (kubernetes.io/cluster/*); nodewright sets it itself")
        elif key in RESTRICTED_TAGS:
            ctx.error(where, f"is a restricted tag ({key}); nodewright sets it itself")
    return tags


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
    requirements = parse_requirements(ctx, spec.get("requirements"), "spec.requirements", min_values=True)
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
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or [] if isinstance(c, dict)}
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
        registered=conditions.get("Registered") == "True",
        initialized=conditions.get("Initialized") == "True",
        node_class=ref.name,
    )
