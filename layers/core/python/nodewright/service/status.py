"""NodePool and EC2NodeClass status, as Karpenter writes it, so `kubectl get` says what is wrong.

EC2NodeClass (Karpenter AWS v1.14 `pkg/controllers/nodeclass`): `status.subnets` (the subnet used per zone:
id, zone, zone id), `status.securityGroups`, `status.amis` (id, name, and the requirements an instance type
must meet to boot it), `status.instanceProfile`, and the conditions SubnetsReady, SecurityGroupsReady,
AMIsReady, InstanceProfileReady (False with Karpenter's reasons: SubnetsNotFound, SecurityGroupsNotFound,
AMINotFound; and InstanceProfileNotAllowed when `spec.role` is not one of the node roles the stack may
pass, its own or the `nodeRoles` context's, or `spec.instanceProfile` is missing or holds another role),
ValidationSucceeded, and Ready.

NodePool (Karpenter v1.9.1 `pkg/controllers/nodepool`): `status.resources` (cpu, memory, pods,
ephemeral-storage and `nodes`, summed over the pool's nodes: a registered node's capacity, else its
NodeClaim's `status.capacity`), `status.nodes`, and the conditions ValidationSucceeded (False:
NodePoolValidationFailed), NodeClassReady (False: NodeClassNotFound, or the EC2NodeClass's own reason) and
Ready.

Ready, where Karpenter's root condition says only "UnhealthyDependents", carries the reason and message of the
first condition that is False, so `kubectl get ec2nodeclasses` shows `InstanceProfileNotAllowed` rather than
a pointer to look further.

Who writes: the provisioner on every batch that plans (it has just resolved the EC2NodeClasses) and the
planner on its one-minute tick, so a cluster with no pending pods still gets status. Writes happen only
when something changed, and only to nodewright.io objects: Karpenter's own objects are Karpenter's to write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodewright.launch.template import ResolvedNodeClass
from nodewright.model.conditions import FALSE, TRUE, UNKNOWN, Condition
from nodewright.model.errors import ValidationError
from nodewright.model.loader import load_documents
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.quantity import format_canonical, to_canonical
from nodewright.ports import Clock, Cloud, Cluster, NodeClassError

NODEWRIGHT_GROUP = "nodewright.io/"
READY, VALIDATION = "Ready", "ValidationSucceeded"
NODECLASS_PARTS = ("SubnetsReady", "SecurityGroupsReady", "AMIsReady", "InstanceProfileReady")
POOL_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
ACCELERATOR_COUNT = "karpenter.k8s.aws/instance-accelerator-count"


@dataclass(frozen=True, slots=True)
class NodeClassState:
    """One EC2NodeClass as resolved against the account: what resolved, and which parts failed why."""

    name: str
    resolved: ResolvedNodeClass | None
    failures: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not self.failures and self.resolved is not None

    @property
    def problem(self) -> str:
        return "; ".join(message for _, message in self.failures.values())


def resolve_node_classes(
    node_classes: Iterable[EC2NodeClass], cloud: Cloud, k8s_version: str
) -> dict[str, NodeClassState]:
    """Resolve each EC2NodeClass (subnets, security groups, AMIs, instance profile), keeping what failed."""
    out: dict[str, NodeClassState] = {}
    for node_class in node_classes:
        try:
            out[node_class.name] = NodeClassState(node_class.name, cloud.resolve_node_class(node_class, k8s_version))
        except NodeClassError as error:
            out[node_class.name] = NodeClassState(node_class.name, error.partial, dict(error.failures))
    return out


# --------------------------------------------------------------------------------------- what to write


def _ready(conditions: Sequence[Condition]) -> Condition:
    """Ready over the dependents: True when all are, else the first False one's reason and message."""
    for c in conditions:
        if c.status == FALSE:
            return Condition(READY, FALSE, c.reason, c.message)
    waiting = [f"{c.type}={c.status}" for c in conditions if c.status != TRUE]
    if waiting:
        return Condition(READY, UNKNOWN, "ReconcilingDependents", ", ".join(waiting))
    return Condition(READY, TRUE, READY)


def _ami_requirements(architecture: str, variant: str) -> list[dict[str, Any]]:
    requirements: list[dict[str, Any]] = [
        {"key": "kubernetes.io/arch", "operator": "In", "values": [architecture]},
    ]
    if variant == "nvidia":
        requirements.append({"key": GPU_COUNT, "operator": "Exists"})
    else:
        requirements.append({"key": ACCELERATOR_COUNT, "operator": "DoesNotExist"})
        requirements.append({"key": GPU_COUNT, "operator": "DoesNotExist"})
    return requirements


def nodeclass_status(state: NodeClassState, invalid: Sequence[str] = ()) -> tuple[dict[str, Any], list[Condition]]:
    """The status fields and conditions of one EC2NodeClass (see the module doc). `invalid`: its validation
    errors, when it did not load (then nothing was resolved)."""
    resolved = state.resolved
    fields: dict[str, Any] = {
        "subnets": [
            {"id": s.id, "zone": s.zone, **({"zoneID": s.zone_id} if s.zone_id else {})}
            for s in (resolved.subnets if resolved else ())
        ],
        "securityGroups": [{"id": g} for g in (resolved.security_group_ids if resolved else ())],
        "amis": [
            {"id": image.id, "name": image.name, "requirements": _ami_requirements(arch, variant)}
            for (arch, variant), image in sorted((resolved.images if resolved else {}).items())
        ],
        "instanceProfile": resolved.instance_profile if resolved else "",
    }
    conditions = []
    for part in NODECLASS_PARTS:
        if invalid:
            conditions.append(Condition(part, UNKNOWN, "AwaitingValidation", "the EC2NodeClass did not validate"))
        elif part in state.failures:
            reason, message = state.failures[part]
            conditions.append(Condition(part, FALSE, reason, message))
        else:
            conditions.append(Condition(part, TRUE, part))
    if invalid:
        conditions.insert(0, Condition(VALIDATION, FALSE, "NodeClassValidationFailed", "; ".join(invalid)))
    else:
        conditions.append(Condition(VALIDATION, TRUE, VALIDATION))
    return fields, [*conditions, _ready(conditions)]


def pool_resources(
    pool: str, nodeclaims: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """`status.resources` of a NodePool: the capacity of its NodeClaims' nodes (a claim not registered yet
    counts with its own `status.capacity`), and `nodes`, how many there are."""
    return pools_resources([pool], nodeclaims, nodes)[pool]


def pools_resources(
    pools: Sequence[str], nodeclaims: Sequence[Mapping[str, Any]], nodes: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, str]]:
    """`pool_resources` of each of `pools`, in one pass over the NodeClaims and Nodes (tens of thousands at scale,
    once per batch rather than once per NodePool). Quantities are read once per distinct value: a fleet's nodes
    report a few capacities."""
    capacity_by_provider = {
        str((n.get("spec") or {}).get("providerID") or ""): (n.get("status") or {}).get("capacity") or {} for n in nodes
    }
    wanted = set(pools)
    totals = {pool: dict.fromkeys(POOL_RESOURCES, 0) for pool in wanted}
    counts = dict.fromkeys(wanted, 0)
    canonical: dict[tuple[str, type, Any], int | None] = {}
    for claim in nodeclaims:
        pool = ((claim.get("metadata") or {}).get("labels") or {}).get("karpenter.sh/nodepool")
        if pool not in wanted:
            continue
        status = claim.get("status") or {}
        capacity = capacity_by_provider.get(str(status.get("providerID") or "")) or status.get("capacity") or {}
        counts[pool] += 1
        for name in POOL_RESOURCES:
            if name in capacity:
                value = _canonical(canonical, name, capacity[name])
                if value is not None:
                    totals[pool][name] += value
    out: dict[str, dict[str, str]] = {}
    for pool in wanted:
        out[pool] = {name: format_canonical(name, value) for name, value in totals[pool].items()}
        out[pool]["nodes"] = str(counts[pool])
    return out


def _canonical(seen: dict[tuple[str, type, Any], int | None], name: str, raw: Any) -> int | None:
    """`to_canonical(name, raw)`, None when it is not a quantity; kept in `seen` by value (and type, so 1 and
    True stay apart) when the value can be kept."""
    key = (name, type(raw), raw) if isinstance(raw, (str, int, float)) else None
    if key is not None and key in seen:
        return seen[key]
    try:
        value: int | None = to_canonical(name, raw)
    except ValueError:
        value = None
    if key is not None:
        seen[key] = value
    return value


def nodepool_status(
    pool_doc: Mapping[str, Any],
    invalid: Sequence[str],
    nodeclass: Mapping[str, Any] | None,
    nodeclass_conditions: Sequence[Condition] | None,
    resources: Mapping[str, str],
) -> tuple[dict[str, Any], list[Condition]]:
    """The status fields and conditions of one NodePool (see the module doc). `nodeclass`: the EC2NodeClass
    it refers to (None when there is none); `nodeclass_conditions`: that class's conditions as computed now
    (None: take the ones it carries)."""
    conditions = [
        Condition(VALIDATION, FALSE, "NodePoolValidationFailed", "; ".join(invalid))
        if invalid
        else Condition(VALIDATION, TRUE, VALIDATION)
    ]
    if nodeclass is None:
        conditions.append(Condition("NodeClassReady", FALSE, "NodeClassNotFound", "NodeClass not found on cluster"))
    elif (nodeclass.get("metadata") or {}).get("deletionTimestamp"):
        conditions.append(Condition("NodeClassReady", FALSE, "NodeClassTerminating", "NodeClass is Terminating"))
    else:
        ready = _condition(nodeclass_conditions, nodeclass, READY)
        if ready is None or ready[0] == UNKNOWN:
            conditions.append(
                Condition("NodeClassReady", FALSE, "NodeClassReadinessUnknown", "Node Class Readiness Unknown")
            )
        elif ready[0] == FALSE:
            conditions.append(Condition("NodeClassReady", FALSE, ready[1], ready[2]))
        else:
            conditions.append(Condition("NodeClassReady", TRUE, "NodeClassReady"))
    fields = {"resources": dict(resources), "nodes": int(resources.get("nodes", "0"))}
    return fields, [*conditions, _ready(conditions)]


def _condition(computed: Sequence[Condition] | None, doc: Mapping[str, Any], kind: str) -> tuple[str, str, str] | None:
    if computed is not None:
        found = next((c for c in computed if c.type == kind), None)
        return (found.status, found.reason, found.message) if found else None
    for c in (doc.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return (str(c.get("status")), str(c.get("reason") or ""), str(c.get("message") or ""))
    return None


# ------------------------------------------------------------------------------------------------ write


@dataclass
class StatusReport:
    """What a status pass wrote: `kind/name` of each object written, and the Ready verdicts."""

    written: list[str] = field(default_factory=list)
    ready: dict[str, str] = field(default_factory=dict)  # kind/name -> "True" or "False (reason)"

    def to_json(self) -> dict[str, Any]:
        return {"written": self.written, "ready": self.ready}


def _changed(doc: Mapping[str, Any], fields: Mapping[str, Any], conditions: Sequence[Condition]) -> bool:
    status = doc.get("status") or {}
    if any(status.get(k) != v for k, v in fields.items()):
        return True
    have = {
        c.get("type"): (c.get("status"), c.get("reason"), c.get("message") or "")
        for c in status.get("conditions") or []
        if isinstance(c, Mapping)
    }
    return any(have.get(c.type) != (c.status, c.reason, c.message) for c in conditions)


def _name(doc: Mapping[str, Any]) -> str:
    return str((doc.get("metadata") or {}).get("name", ""))


def _ours(doc: Mapping[str, Any]) -> bool:
    return str(doc.get("apiVersion", "")).startswith(NODEWRIGHT_GROUP)


def _errors_by_name(errors: Iterable[ValidationError], kind: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for error in errors:
        if error.kind == kind:
            out.setdefault(error.name, []).append(f"{error.path}: {error.message}")
    return out


def write_status(
    cluster: Cluster,
    nodepools: Sequence[Mapping[str, Any]],
    nodeclasses: Sequence[Mapping[str, Any]],
    nodeclaims: Sequence[Mapping[str, Any]],
    nodes: Sequence[Mapping[str, Any]],
    states: Mapping[str, NodeClassState],
) -> StatusReport:
    """Write the status of every nodewright.io NodePool and EC2NodeClass whose status changed.

    `states`: the EC2NodeClasses resolved just now, by name (one that did not load is not among them)."""
    report = StatusReport()
    # Each kind alone: a NodePool naming an EC2NodeClass that does not exist is NodeClassNotFound, not invalid.
    pool_errors = _errors_by_name(load_documents(nodepools, "cluster")[1], "NodePool")
    class_errors = _errors_by_name(load_documents(nodeclasses, "cluster")[1], "EC2NodeClass")
    class_conditions: dict[str, list[Condition]] = {}
    for doc in nodeclasses:
        name = _name(doc)
        state = states.get(name) or NodeClassState(name, None)
        fields, conditions = nodeclass_status(state, class_errors.get(name, ()))
        class_conditions[name] = conditions
        if not _ours(doc):
            continue
        report.ready[f"ec2nodeclass/{name}"] = _verdict(conditions)
        if _changed(doc, fields, conditions):
            cluster.set_status("EC2NodeClass", name, fields, conditions)
            report.written.append(f"ec2nodeclass/{name}")
    classes = {_name(d): d for d in nodeclasses}
    resources = pools_resources([_name(d) for d in nodepools if _ours(d)], nodeclaims, nodes)
    for doc in nodepools:
        if not _ours(doc):
            continue
        name = _name(doc)
        template = ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}
        ref = str((template.get("nodeClassRef") or {}).get("name") or "")
        fields, conditions = nodepool_status(
            doc,
            pool_errors.get(name, ()),
            classes.get(ref),
            class_conditions.get(ref),
            resources[name],
        )
        report.ready[f"nodepool/{name}"] = _verdict(conditions)
        if _changed(doc, fields, conditions):
            cluster.set_status("NodePool", name, fields, conditions)
            report.written.append(f"nodepool/{name}")
    return report


def _verdict(conditions: Sequence[Condition]) -> str:
    ready = next(c for c in conditions if c.type == READY)
    return ready.status if ready.status == TRUE else f"{ready.status} ({ready.reason})"


def refresh_status(cluster: Cluster, cloud: Cloud, clock: Clock) -> StatusReport:
    """The planner's pass: read NodePools, EC2NodeClasses, NodeClaims and Nodes, resolve the EC2NodeClasses
    and write what changed."""
    del clock  # the conditions' times come from the cluster port's clock
    view = cluster.read_fleet()
    inputs, _ = load_documents([*view.nodeclasses], "cluster")
    states = resolve_node_classes(inputs.nodeclasses, cloud, cloud.cluster_info().version)
    return write_status(cluster, view.nodepools, view.nodeclasses, view.nodeclaims, view.nodes, states)
