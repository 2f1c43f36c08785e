"""Load a cluster description (multi-document YAML files, or API objects) into `ClusterInputs`.

Files and API objects go through the same code (`load_documents`), so what `nodewright validate` accepts
is exactly what the provisioner accepts. Every document is checked and every error is returned; objects
with errors are left out of the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from nodewright.gcpause import paused_cycle_collector
from nodewright.model import capacitybuffer, kube, storage
from nodewright.model.durations import format_duration
from nodewright.model.errors import Collector, ValidationError
from nodewright.model.inputs import ClusterInputs, LoadedObject
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.model.nodeoverlay import NodeOverlay, nodeoverlay_from
from nodewright.model.nodepool import NodePool
from nodewright.model.objects import (
    DaemonSet,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    StorageClass,
)
from nodewright.model.parse import nodeclaim_from, nodepool_from, object_name
from nodewright.model.parse_ec2nodeclass import ec2nodeclass_from
from nodewright.model.pod_spec import ParsedPod
from nodewright.model.quantity import format_canonical
from nodewright.model.replica_key import replica_key
from nodewright.model.schema import suggest, type_name

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob")
KNOWN_KINDS = (
    "NodePool",
    "EC2NodeClass",
    "NodeClaim",
    "NodeOverlay",
    "Pod",
    *WORKLOAD_KINDS,
    "DaemonSet",
    "Node",
    "PodDisruptionBudget",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "PodTemplate",
    "CapacityBuffer",
)


def describe_resources(resources: Mapping[str, int], skip: Iterable[str] = ()) -> str:
    """`cpu=500m memory=1Gi` for messages and summaries (sorted, cpu and memory first)."""
    order = {"cpu": 0, "memory": 1}
    names = sorted((n for n in resources if n not in skip), key=lambda n: (order.get(n, 2), n))
    return " ".join(f"{n}={format_canonical(n, resources[n])}" for n in names)


@dataclass
class _State:
    """What loading one set of documents has collected so far."""

    nodepools: list[NodePool] = field(default_factory=list)
    nodeclasses: list[EC2NodeClass] = field(default_factory=list)
    nodeclaims: list[NodeClaim] = field(default_factory=list)
    nodeoverlays: list[NodeOverlay] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    pods: list[tuple[Pod, str]] = field(default_factory=list)  # (pod, source)
    daemonsets: list[DaemonSet] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    generated_pvcs: list[PersistentVolumeClaim] = field(default_factory=list)
    pvs: list[PersistentVolume] = field(default_factory=list)
    storage_classes: list[tuple[StorageClass, bool]] = field(default_factory=list)
    priority_classes: dict[str, tuple[int, bool]] = field(default_factory=dict)
    objects: list[tuple[LoadedObject, Any]] = field(default_factory=list)  # (object, value for summaries)
    seen: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, name) -> source
    errors: list[ValidationError] = field(default_factory=list)
    parsed_pods: ParsedPods | None = None
    # With `keep_only_loaded`: the version keys of the pods, Nodes and NodeClaims this load read (see `load_sources`).
    loaded_versions: set[tuple[str, str]] | None = None
    # What CapacityBuffers resolve against: PodTemplates by namespace/name, workloads by (kind, namespace/name).
    buffers: list[tuple[capacitybuffer.CapacityBuffer, str]] = field(default_factory=list)
    pod_templates: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    scalables: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    # Clean parses of this load's Pod documents by `replica_key` (see `_parse_pod`).
    replicas: dict[bytes | str, ParsedPod] = field(default_factory=dict)
    # With `omit_orphans`: a pod bound to a Node the documents do not hold is left out, not an error.
    omit_orphans: bool = False


def _expand(docs: Iterable[Any], source: str, errors: list[ValidationError]) -> list[Mapping[str, Any]]:
    """Drop empty documents and expand `kind: List` (and `<Kind>List`) into their items."""
    out: list[Mapping[str, Any]] = []
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            errors.append(
                ValidationError(source, "", "", f"document {index + 1}", f"must be a map, not {type_name(doc)}")
            )
            continue
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
            items = doc.get("items")
            if not isinstance(items, list):
                errors.append(ValidationError(source, kind, "", "items", "must be a list"))
                continue
            out.extend(_expand(items, source, errors))
            continue
        out.append(doc)
    return out


def load_text(text: str, source: str) -> tuple[ClusterInputs, list[ValidationError]]:
    """Load one multi-document YAML text (named `source` in messages)."""
    docs, errors = _parse_yaml(text, source)
    inputs, more = load_documents(docs, source)
    return inputs, errors + more


def _parse_yaml(text: str, source: str) -> tuple[list[Any], list[ValidationError]]:
    # A file of strict JSON (`kubectl get -o json`) is read by the JSON decoder: many times quicker, and what the
    # API server would read where YAML 1.1 reads JSON otherwise (see json_documents).
    from nodewright.model.json_documents import load_json

    docs = load_json(text)
    if docs is not None:
        return docs, []
    # Imported here: the Lambdas load API objects through this module but never parse YAML text, and PyYAML
    # is a measurable part of their cold start.
    import yaml

    from nodewright.model import yaml_documents

    # libyaml's parser (when PyYAML was built with it; its wheels are) with a quicker constructor: the same
    # objects and errors as yaml.load_all with the C safe loader (see yaml_documents).
    try:
        # The model reads no `metadata.managedFields`, and no command that loads files prints their documents: the
        # blocks certain to be cut are not parsed (yaml_prune).
        return yaml_documents.load_all(text, prune=True), []
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        return [], [ValidationError(source, "", "", where, f"YAML syntax error: {problem}")]


def load_files(paths: Sequence[str | Path], summaries: bool = True) -> tuple[ClusterInputs, list[ValidationError]]:
    """Read multi-document YAML files (a directory means its *.yaml / *.yml files) and load every object.

    Returns the inputs (objects with errors left out) and all errors, each naming file, object and field.
    `summaries`: give each object its one-line summary (what `validate` prints).
    """
    sources, errors = read_files(paths)
    inputs, more = load_sources(sources, summaries)
    return inputs, errors + more


def read_files(paths: Sequence[str | Path]) -> tuple[list[tuple[list[Any], str]], list[ValidationError]]:
    """The documents of each file (a `List` expanded into its items), with the file's name; and the errors of
    files that cannot be read or parsed."""
    sources: list[tuple[list[Any], str]] = []
    errors: list[ValidationError] = []
    for path in _expand_paths(paths):
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            errors.append(ValidationError(source, "", "", "", f"cannot read the file: {exc.strerror or exc}"))
            continue
        docs, yaml_errors = _parse_yaml(text, source)
        errors.extend(yaml_errors)
        sources.append((_expand(docs, source, errors), source))
    return sources, errors


def _expand_paths(paths: Sequence[str | Path]) -> list[str | Path]:
    """A directory stands for its *.yaml and *.yml files (not recursive), in name order."""
    out: list[str | Path] = []
    for path in paths:
        if Path(path).is_dir():
            out.extend(sorted(p for p in Path(path).iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()))
        else:
            out.append(path)
    return out


# Parses kept by (uid, resourceVersion): ParsedPod, Node or NodeClaim (see `_cached_parse`).
ParsedPods = MutableMapping[tuple[str, str], Any]


def load_documents(
    docs: Iterable[Any],
    source: str,
    summaries: bool = True,
    parsed_pods: ParsedPods | None = None,
    buffers: Sequence[Mapping[str, Any]] = (),
    keep_only_loaded: bool = False,
    omit_orphans: bool = False,
) -> tuple[ClusterInputs, list[ValidationError]]:
    """Load already-parsed documents (YAML-loaded dicts or API objects as dicts) from one source. `summaries`: give
    each loaded object its one-line summary (what `validate` prints); services that only decide leave it off.
    `parsed_pods`: pods, Nodes and NodeClaims parsed by earlier loads of full API objects, by (uid,
    resourceVersion); see `_cached_parse`. `buffers`: CapacityBuffers read from the API server with the
    PodTemplates and workloads they name (`ClusterView.buffers`); those workloads only give their pod template and
    replica count (their pods are read as pods). `keep_only_loaded`, `omit_orphans`: see `load_sources`."""
    return load_sources(
        [(list(docs), source)],
        summaries,
        parsed_pods,
        buffers=buffers,
        keep_only_loaded=keep_only_loaded,
        omit_orphans=omit_orphans,
    )


def load_sources(
    sources: Iterable[tuple[Sequence[Any], str]],
    summaries: bool = True,
    parsed_pods: ParsedPods | None = None,
    buffers: Sequence[Mapping[str, Any]] = (),
    keep_only_loaded: bool = False,
    omit_orphans: bool = False,
) -> tuple[ClusterInputs, list[ValidationError]]:
    """Load documents from several sources into one `ClusterInputs` (names must be unique across them).
    Replicas share a parse: a Pod document whose `replica_key` an earlier clean parse of this load had is a
    renamed copy of it (`_parse_pod`), the pod parsing it gives. `buffers`: see `load_documents`.
    `keep_only_loaded`: afterwards `parsed_pods` holds only the parses of the versions this load read, with no
    size limit (a caller whose every load reads the whole cluster, the planner: its cache then follows the
    cluster's size, and a cluster of more objects than PARSED_PODS_LIMIT is not parsed again every tick).
    `omit_orphans`: a pod bound to a Node the documents do not hold is left out and named in
    `ClusterInputs.orphaned_pods` instead of being an error (a whole-cluster read, where such a pod belongs to a
    deleted Node and waits for the pod garbage collector; in files it is a mistake, and an error says so)."""
    state = _State(parsed_pods=parsed_pods, omit_orphans=omit_orphans)
    if keep_only_loaded and parsed_pods is not None:
        state.loaded_versions = set()
    with paused_cycle_collector():  # tens of thousands of objects that live on and form no cycles (see gcpause)
        for docs, source in sources:
            for doc in _expand(docs, source, state.errors):
                if state.loaded_versions is not None and doc.get("kind") in CACHED_KINDS:
                    key = _version_key(doc)
                    if key is not None:
                        state.loaded_versions.add(key)
                if not _load_known_pod(state, doc, source):
                    _load_one(state, doc, source)
        for doc in buffers:
            kind = str(doc.get("kind", ""))
            if kind in capacitybuffer.SCALABLE_KINDS:
                state.scalables[(kind, _display_name(doc, kind))] = doc
            elif kind in ("CapacityBuffer", "PodTemplate"):
                _load_one(state, doc, "cluster")
        if state.loaded_versions is not None and parsed_pods is not None:
            for gone in [key for key in parsed_pods if key not in state.loaded_versions]:
                del parsed_pods[gone]
        return _finish(state, summaries), state.errors


def _display_name(doc: Mapping[str, Any], kind: str) -> str:
    if kind in kube.NAMESPACED:
        namespace, name = kube.namespaced_name(doc)
        return f"{namespace}/{name}" if name else ""
    return object_name(doc)


def _claim(state: _State, kind: str, name: str, source: str, ctx: Collector) -> bool:
    """Record that `kind/name` exists; report a duplicate (with where the first one was) and refuse it."""
    key = (kind, name)
    if key in state.seen:
        ctx.error("metadata.name", f"duplicate {kind} {name!r}; the first one is in {state.seen[key]}")
        return False
    state.seen[key] = source
    return True


def _load_one(state: _State, doc: Mapping[str, Any], source: str) -> None:
    if _finished_pod(doc):
        return  # a Succeeded or Failed pod holds no capacity and is placed nowhere (as the kube-scheduler counts)
    raw_kind = doc.get("kind")
    kind = raw_kind if isinstance(raw_kind, str) else ""
    name = _display_name(doc, kind) if kind else object_name(doc)
    ctx = Collector(source, kind, name)
    if kind not in KNOWN_KINDS:
        near = suggest(kind, KNOWN_KINDS) if kind else None
        hint = f"; did you mean {near}?" if near else ""
        what = f'"{kind}" is not a kind nodewright reads' if kind else "is missing"
        ctx.kind = kind or "<no kind>"
        ctx.error("kind", f"{what}{hint} (it reads {', '.join(KNOWN_KINDS)})")
        state.errors.extend(ctx.errors)
        return
    value: Any = None
    if kind == "NodePool":
        value = nodepool_from(ctx, doc)
    elif kind == "EC2NodeClass":
        value = ec2nodeclass_from(ctx, doc)
    elif kind == "NodeClaim":
        value = nodeclaim_from(ctx, doc)
        _remember(state, doc, value, ctx)
    elif kind == "NodeOverlay":
        value = nodeoverlay_from(ctx, doc)
    elif kind == "Pod":
        value = _parse_pod(ctx, doc, state)
    elif kind in WORKLOAD_KINDS:
        value = kube.parse_workload(ctx, doc, kind)
        if value is not None and ctx.ok and kind in capacitybuffer.SCALABLE_KINDS:
            state.scalables[(kind, name)] = doc
    elif kind == "PodTemplate":
        value = kube.parse_pod_template_object(ctx, doc)
    elif kind == "CapacityBuffer":
        value = capacitybuffer.parse_capacity_buffer(ctx, doc)
    elif kind == "DaemonSet":
        value = kube.parse_daemonset(ctx, doc)
    elif kind == "Node":
        value = kube.parse_node(ctx, doc)
        _remember(state, doc, value, ctx)
    elif kind == "PodDisruptionBudget":
        value = kube.parse_pdb(ctx, doc)
    elif kind == "PersistentVolumeClaim":
        value = storage.parse_pvc(ctx, doc)
    elif kind == "PersistentVolume":
        value = storage.parse_pv(ctx, doc)
    elif kind == "StorageClass":
        value = storage.parse_storage_class(ctx, doc)
    elif kind == "PriorityClass":
        value = kube.parse_priority_class(ctx, doc)
    if ctx.ok and value is not None and name and kind != "Pod":
        # Pods are claimed by their namespace/name in _store, together with pods that workloads create.
        _claim(state, kind, name, source, ctx)
    if not ctx.ok or value is None:
        state.errors.extend(ctx.errors)
        return
    _store(state, kind, value, source, ctx)
    state.errors.extend(ctx.errors)
    if ctx.ok:
        state.objects.append((LoadedObject(source, kind, name, ""), value))


def _finished_pod(doc: Mapping[str, Any]) -> bool:
    status = doc.get("status")
    return doc.get("kind") == "Pod" and isinstance(status, Mapping) and status.get("phase") in ("Succeeded", "Failed")


# An object as the API server serves it is immutable for a given (uid, resourceVersion): every write bumps the
# version. A warm planner reads the same tens of thousands of pods every minute, and the provisioner the same
# thousand nodes every batch, so a container keeps their parses and parses each version once: pods, Nodes and
# NodeClaims (uids are unique across kinds, so one mapping holds them all). Only clean parses of full API objects
# are kept (a caller passes the mapping only for those; the forwarder's projections keep uid and version but not
# every field); the oldest half goes when it is full, unless the load keeps only what it read (`keep_only_loaded`).
PARSED_PODS_LIMIT = 200_000
CACHED_KINDS = ("Pod", "Node", "NodeClaim")


def _version_key(doc: Mapping[str, Any]) -> tuple[str, str] | None:
    metadata = doc.get("metadata")
    # A plain dict first: `isinstance` against the Mapping ABC costs more than the rest, for every object a load reads.
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        return None
    uid, version = metadata.get("uid"), metadata.get("resourceVersion")
    return (uid, version) if isinstance(uid, str) and uid and isinstance(version, str) and version else None


_PARSED_TYPES: dict[Any, type] = {"Pod": ParsedPod, "Node": Node, "NodeClaim": NodeClaim}


def _cached_parse(doc: Mapping[str, Any], parsed: ParsedPods | None) -> Any:
    """The parse an earlier load kept for this document's kind, uid and version, else None."""
    expected = _PARSED_TYPES.get(doc.get("kind"))
    if parsed is None or expected is None:
        return None
    key = _version_key(doc)
    found = parsed.get(key) if key is not None else None
    return found if isinstance(found, expected) else None


@lru_cache(maxsize=1 << 15)
def _loaded_object(source: str, kind: str, name: str) -> LoadedObject:
    # Immutable, so one per name serves every load: the provisioner loads the same ten thousand nodes each batch.
    return LoadedObject(source, kind, name, "")


def _load_known_pod(state: _State, doc: Mapping[str, Any], source: str) -> bool:
    """Store a pod, Node or NodeClaim whose version an earlier load parsed cleanly, without the checks a new
    document needs (the same version is the same document); False when the document is anything else."""
    found = _cached_parse(doc, state.parsed_pods)
    if found is None:
        return False
    kind = str(doc["kind"])
    if kind != "Pod" and (kind, found.name) not in state.seen:
        # The common case at thousands of nodes, without a collector: a Node or NodeClaim seen once, as `_claim`
        # and `_store` would record it.
        state.seen[(kind, found.name)] = source
        (state.nodes if kind == "Node" else state.nodeclaims).append(found)
        state.objects.append((_loaded_object(source, kind, found.name), found))
        return True
    name = found.pod.key if isinstance(found, ParsedPod) else found.name
    ctx = Collector(source, kind, name)
    if kind == "Pod" or _claim(state, kind, name, source, ctx):
        _store(state, kind, found, source, ctx)
    state.errors.extend(ctx.errors)
    if ctx.ok:
        state.objects.append((LoadedObject(source, kind, name, ""), found))
    return True


def _remember(state: _State, doc: Mapping[str, Any], value: Any, ctx: Collector) -> None:
    """Keep a clean parse of a full API object by its uid and version (see above)."""
    parsed = state.parsed_pods
    key = _version_key(doc)
    if parsed is None or key is None or value is None or not ctx.ok:
        return
    if state.loaded_versions is None and len(parsed) >= PARSED_PODS_LIMIT:
        for old in list(parsed)[: PARSED_PODS_LIMIT // 2]:
            del parsed[old]
    parsed[key] = value


def _parse_pod(ctx: Collector, doc: Mapping[str, Any], state: _State) -> ParsedPod | None:
    found = _cached_parse(doc, state.parsed_pods)
    if found is not None:
        return found  # type: ignore[no-any-return]
    replica = replica_key(doc)
    twin = state.replicas.get(replica[0]) if replica is not None else None
    if replica is not None and twin is not None:
        parsed: ParsedPod | None = twin.renamed(replica[1], node_name=replica[2])
    else:
        parsed = kube.parse_pod(ctx, doc)
        if replica is not None and parsed is not None and ctx.ok and not ctx.errors:
            state.replicas[replica[0]] = parsed
    _remember(state, doc, parsed, ctx)
    return parsed


def _store(state: _State, kind: str, value: Any, source: str, ctx: Collector) -> None:
    if isinstance(value, NodePool):
        state.nodepools.append(value)
    elif isinstance(value, EC2NodeClass):
        state.nodeclasses.append(value)
    elif isinstance(value, NodeClaim):
        state.nodeclaims.append(value)
    elif isinstance(value, NodeOverlay):
        state.nodeoverlays.append(value)
    elif isinstance(value, ParsedPod):
        if _claim_pod(state, value.pod, source, ctx):
            state.pods.append((value.pod, source))
            if value.ephemeral_volumes:
                state.generated_pvcs.extend(value.ephemeral_claims)
    elif isinstance(value, kube.Workload):
        for pod in value.pods:
            if _claim_pod(state, pod, source, ctx):
                state.pods.append((pod, source))
        state.generated_pvcs.extend(value.claims)
    elif isinstance(value, DaemonSet):
        state.daemonsets.append(value)
    elif isinstance(value, Node):
        state.nodes.append(value)
    elif isinstance(value, PodDisruptionBudget):
        state.pdbs.append(value)
    elif isinstance(value, PersistentVolumeClaim):
        state.pvcs.append(value)
    elif isinstance(value, PersistentVolume):
        state.pvs.append(value)
    elif kind == "StorageClass":
        state.storage_classes.append(value)
    elif kind == "PriorityClass":
        class_name, priority, default = value
        state.priority_classes[class_name] = (priority, default)
    elif kind == "PodTemplate":
        state.pod_templates[_display_name(value, kind)] = value
    elif isinstance(value, capacitybuffer.CapacityBuffer):
        state.buffers.append((value, source))


def _claim_pod(state: _State, pod: Pod, source: str, ctx: Collector) -> bool:
    # Pods expanded from different workloads can collide (a Deployment "web" and a Pod "web-0").
    key = ("Pod", pod.key)
    if key in state.seen:
        ctx.error("metadata.name", f"creates pod {pod.key}, which is already defined in {state.seen[key]}")
        return False
    state.seen[key] = source
    return True


def _finish(state: _State, summaries: bool = True) -> ClusterInputs:
    pods = _resolve_priorities(state)
    node_names = {node.name for node in state.nodes}
    bound: dict[str, list[Pod]] = {name: [] for name in node_names}
    pending: list[Pod] = []
    orphaned: list[str] = []
    for pod, source in pods:
        if pod.node_name:
            if pod.node_name in bound:
                bound[pod.node_name].append(pod)
            elif state.omit_orphans:
                orphaned.append(pod.key)
            else:
                state.errors.append(
                    ValidationError(
                        source,
                        "Pod",
                        pod.key,
                        "spec.nodeName",
                        f'node "{pod.node_name}" is not defined in the inputs; add its Node or remove nodeName',
                    )
                )
        elif not pod.is_daemonset_pod:
            # From files every unbound pod waits for capacity (DaemonSet pods follow their nodes instead).
            pending.append(pod)
    # A node without pods stays the object parsed (and kept by version, `_cached_parse`): a warm container then sees
    # an unchanged node as the same object batch after batch, and registers it once (`scheduling.kept`).
    nodes = tuple(
        replace(node, pods=tuple(bound[node.name])) if bound[node.name] or node.pods else node for node in state.nodes
    )
    buffers = _resolve_buffers(state)
    pending.extend(capacitybuffer.virtual_pods(buffers))
    _check_references(state)
    pvcs = _resolve_claims(state)
    inputs = ClusterInputs(
        nodepools=tuple(state.nodepools),
        nodeclasses=tuple(state.nodeclasses),
        nodes=nodes,
        pending_pods=tuple(pending),
        daemonsets=tuple(state.daemonsets),
        pdbs=tuple(state.pdbs),
        pvcs=pvcs,
        pvs=tuple(state.pvs),
        storage_classes=tuple(sc for sc, _ in state.storage_classes),
        nodeclaims=tuple(state.nodeclaims),
        nodeoverlays=tuple(state.nodeoverlays),
        buffers=buffers,
        orphaned_pods=tuple(orphaned),
    )
    if not summaries:
        return replace(inputs, objects=tuple(obj for obj, _ in state.objects))
    by_name = {n.name: n for n in inputs.nodes}
    objects = tuple(replace(obj, summary=_summary(value, by_name)) for obj, value in state.objects)
    return replace(inputs, objects=objects)


def _resolve_buffers(state: _State) -> tuple[capacitybuffer.BufferResolution, ...]:
    """Each CapacityBuffer resolved against the PodTemplates and workloads loaded; one that is not ready for
    provisioning (a missing reference, an unreadable template) is an error naming the field to fix, and plans no
    pods."""
    out = []
    for buffer, source in state.buffers:
        found = capacitybuffer.resolve(buffer, state.pod_templates, state.scalables)
        out.append(found)
        if not found.ready:
            where = "spec.podTemplateRef.name" if buffer.pod_template_ref else "spec.scalableRef"
            fix = "add it to the inputs or fix the reference" if found.reason != "ResolutionFailed" else "fix it"
            state.errors.append(
                ValidationError(source, "CapacityBuffer", buffer.key, where, f"{found.message} ({found.reason}); {fix}")
            )
    return tuple(out)


def _resolve_priorities(state: _State) -> list[tuple[Pod, str]]:
    """Give pods the value of their PriorityClass (or the global default), as admission would."""
    if not state.priority_classes:
        return state.pods
    default = next((value for value, is_default in state.priority_classes.values() if is_default), None)
    out = []
    for pod, source in state.pods:
        if pod.priority_class_name in state.priority_classes:
            pod = replace(pod, priority=state.priority_classes[pod.priority_class_name][0])
        elif not pod.priority_class_name and default is not None and not pod.priority:
            pod = replace(pod, priority=default)
        out.append((pod, source))
    return out


def _resolve_claims(state: _State) -> tuple[PersistentVolumeClaim, ...]:
    """Explicit claims win over ones a StatefulSet or ephemeral volume would create; fill default classes."""
    # Of several default classes the newest is used, the first by name among equally new ones (Kubernetes
    # 1.26+). `created` is RFC 3339 in UTC, so it sorts as text; a class without one counts as the oldest.
    defaults = sorted((sc for sc, is_default in state.storage_classes if is_default), key=lambda sc: sc.name)
    default = max(defaults, key=lambda sc: sc.created).name if defaults else ""
    explicit = {(c.namespace, c.name) for c in state.pvcs}
    claims = list(state.pvcs) + [c for c in state.generated_pvcs if (c.namespace, c.name) not in explicit]
    if default:
        claims = [replace(c, storage_class_name=default) if c.default_class else c for c in claims]
    return tuple(claims)


def _check_references(state: _State) -> None:
    """A NodePool must reference a loaded EC2NodeClass, when any EC2NodeClass was loaded at all.

    Validating a file of NodePools alone is allowed, so a missing class is only an error when the inputs
    describe node classes and this one is not among them. Pools with a dangling reference are left out.
    """
    if not state.nodeclasses:
        return
    names = sorted(c.name for c in state.nodeclasses)
    kept = []
    for pool in state.nodepools:
        if pool.node_class_ref.name in names:
            kept.append(pool)
            continue
        state.errors.append(
            ValidationError(
                pool.source,
                "NodePool",
                pool.name,
                "spec.template.spec.nodeClassRef.name",
                f'EC2NodeClass "{pool.node_class_ref.name}" is not defined in the inputs (defined: {", ".join(names)})',
            )
        )
    state.nodepools = kept


def _summary(value: Any, nodes: Mapping[str, Node]) -> str:
    if isinstance(value, NodePool):
        parts = [f"weight {value.weight}" if value.weight else "no weight"]
        parts.append(f"{len(value.requirements)} requirement{'s' if len(value.requirements) != 1 else ''}")
        if value.taints:
            parts.append("taints " + ", ".join(str(t) for t in value.taints))
        if value.limits:
            parts.append("limits " + describe_resources(value.limits))
        parts.append(f"expireAfter {format_duration(value.expire_after_seconds)}")
        parts.append(f"class {value.node_class_ref.name}")
        return ", ".join(parts)
    if isinstance(value, EC2NodeClass):
        ami = next((t.alias for t in value.ami_selector_terms if t.alias), "")
        parts = [f"ami {ami}" if ami else f"{value.ami_family} ({len(value.ami_selector_terms)} AMI terms)"]
        parts.append(f"role {value.role}" if value.role else f"instance profile {value.instance_profile}")
        parts.append(f"{len(value.subnet_selector_terms)} subnet term(s)")
        parts.append(f"{len(value.security_group_selector_terms)} security group term(s)")
        if value.kubelet.max_pods is not None:
            parts.append(f"maxPods {value.kubelet.max_pods}")
        return ", ".join(parts)
    if isinstance(value, NodeOverlay):
        return _overlay_summary(value)
    if isinstance(value, NodeClaim):
        return f"nodepool {value.nodepool}, {value.instance_type or 'not launched'}"
    if isinstance(value, ParsedPod):
        pod = value.pod
        where = f"bound to {pod.node_name}" if pod.node_name else "pending"
        return f"{where}, requests {describe_resources(pod.requests, skip=('pods',))}"
    if isinstance(value, kube.Workload):
        if not value.pods:
            return "0 pods" if value.replicas == 0 else "not expanded: runs on its schedule"
        first = value.pods[0]
        noun = "pod" if value.replicas == 1 else "pods"
        return f"{value.replicas} {noun}, each {describe_resources(first.requests, skip=('pods',))}"
    if isinstance(value, DaemonSet):
        return f"on every fitting node: {describe_resources(value.pod.requests, skip=('pods',))}"
    if isinstance(value, Node):
        node = nodes.get(value.name, value)
        return f"allocatable {describe_resources(node.allocatable)}, {len(node.pods)} pods bound"
    if isinstance(value, PodDisruptionBudget):
        if value.min_available is not None:
            return f"minAvailable {value.min_available}"
        return f"maxUnavailable {value.max_unavailable}"
    if isinstance(value, PersistentVolumeClaim):
        return f"bound to {value.volume_name}" if value.volume_name else f"class {value.storage_class_name or '-'}"
    if isinstance(value, PersistentVolume):
        return f"{len(value.node_terms)} node affinity term(s)"
    if isinstance(value, capacitybuffer.CapacityBuffer):
        ref = f"podTemplate {value.pod_template_ref}" if value.pod_template_ref else ""
        if value.scalable_ref is not None:
            ref = f"{value.scalable_ref.kind} {value.scalable_ref.name}"
        return f"buffer for {ref}"
    if isinstance(value, tuple) and value and isinstance(value[0], StorageClass):
        storage_class: StorageClass = value[0]
        return f"{storage_class.provisioner}, {storage_class.volume_binding_mode}"
    if isinstance(value, tuple) and len(value) == 3:
        return f"value {value[1]}"
    return ""


def _overlay_summary(overlay: NodeOverlay) -> str:
    parts = [f"weight {overlay.weight}" if overlay.weight else "no weight"]
    n = len(overlay.requirements)
    parts.append(f"{n} requirement{'s' if n != 1 else ''}")
    if overlay.price is not None:
        parts.append(f"price {overlay.price}")
    if overlay.price_adjustment is not None:
        parts.append(f"priceAdjustment {overlay.price_adjustment}")
    if overlay.capacity:
        parts.append("capacity " + describe_resources(overlay.capacity))
    return ", ".join(parts)
