"""The Cluster port on the Kubernetes API, reached with an EKS token (the same path in AWS and locally).

`from_eks()` reads the API server endpoint and CA from eks:DescribeCluster and authenticates every request
with a bearer token from `adapters.eks_token.EksTokenSource` (minted every ~14 minutes). No kubeconfig is
involved, so a Lambda needs nothing but its IAM role and the cluster's access entry.

The transport is urllib3, which botocore has already loaded, speaking JSON to REST paths. The official
`kubernetes` package is not imported here: its import (the generated models and APIs, and requests,
oauthlib, websocket and dateutil under them) took about 180 ms, the largest part of a Lambda cold start,
for a dozen REST calls whose bodies we read as plain JSON anyway.

Reads take only what a decision needs. Lists a decision can take a moment old (NodePools, NodeClasses,
NodeClaims, Nodes, DaemonSets, StorageClasses, pending pods, the pods a topology term selects) are served
from the API server's watch cache (`resourceVersion=0`), which costs etcd nothing; the pending set is read
consistently when the forwarder's hint shows the cache is behind. Pods are always read through field
selectors (`spec.nodeName=` for pending pods, `spec.nodeName!=` plus a label selector for bound ones), never
as the whole cluster. Lists are read in pages of 500 (the watch cache may answer in one). List items carry
no kind/apiVersion, so they are added. What nothing reads (managedFields, a Node's images, a pod's container
statuses, ...) is cut from each page as it is parsed (`adapters.slim`).

With `informers` (the planner's and the provisioner's, `NODEWRIGHT_INCREMENTAL_READS`), `read()` lists each of its
lists once per warm container and then follows it with a watch from its resourceVersion (`adapters.informer`): a
tick reads what changed since the last, not the cluster. Its result is the same documents a full list gives. The
provisioner's `read_for_provisioning()` follows its Nodes the same way, and `nodeclaims()` its NodeClaims, each
watch read only until it reaches the resourceVersion a consistent one-object read is at; NodeClaims that cannot
be shown to have reached it are listed consistently (never older than that read). Lists of fewer than
`WATCH_FROM_OBJECTS` objects are listed again instead (a watch may take a second to prove it is current).

Custom objects: NodePools, EC2NodeClasses and NodeClaims of `nodewright.io/v1` only. Karpenter's
`karpenter.sh/v1` and `karpenter.k8s.aws/v1` objects are never read in a cluster, so nodewright and Karpenter
can run side by side without both acting on the same NodePool (the CLI still reads Karpenter's files, and
`nodewright migrate` rewrites them). A group whose CRD is not installed (HTTP 404) is simply empty.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from typing import Any

from nodewright.adapters.apiserver import ApiError, ApiServer
from nodewright.adapters.informer import PROOF_WATCH_SECONDS, WATCH_SECONDS, Informers, informers_for
from nodewright.adapters.slim import slim
from nodewright.model.conditions import Condition, merge_conditions
from nodewright.model.objects import LabelSelector
from nodewright.model.requirements import Operator
from nodewright.ports import BLOCKED, EVICTED, GONE, ClusterView, FleetView, NodeEvent, PodEvent, ProvisioningView
from nodewright.tags import CORDONED, FINALIZER

NODECLAIMS = ("nodewright.io", "v1", "nodeclaims")
# The objects whose status nodewright writes besides NodeClaims: its own group only, never Karpenter's.
# Kinds of nodewright's own objects that events are recorded on, with their API version.
CUSTOM_KINDS = {"NodeClaim": "nodewright.io/v1", "NodePool": "nodewright.io/v1"}
STATUS_RESOURCES = {
    "NodePool": "/apis/nodewright.io/v1/nodepools",
    "EC2NodeClass": "/apis/nodewright.io/v1/ec2nodeclasses",
    "NodeOverlay": "/apis/nodewright.io/v1alpha1/nodeoverlays",
}
ACTIVE = "status.phase!=Succeeded,status.phase!=Failed"
PENDING_PODS = f"spec.nodeName=,{ACTIVE}"
BOUND_PODS = f"spec.nodeName!=,{ACTIVE}"
_READ_WORKERS = 8
NODEPOOLS = (("nodewright.io", "v1", "nodepools"),)
NODECLASSES = (("nodewright.io", "v1", "ec2nodeclasses"),)
NODEOVERLAYS = ("nodewright.io", "v1alpha1", "nodeoverlays")
# The lists of the planner's whole-cluster read, after its NodePools, classes and NodeClaims: (path, kind, apiVersion,
# query). Pods are the active ones only; `read()` tells bound from unbound.
CLUSTER_LISTS: tuple[tuple[str, str, str, tuple[tuple[str, str], ...]], ...] = (
    ("/api/v1/nodes", "Node", "v1", ()),
    ("/api/v1/pods", "Pod", "v1", (("fieldSelector", ACTIVE),)),
    ("/apis/apps/v1/daemonsets", "DaemonSet", "apps/v1", ()),
    ("/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudget", "policy/v1", ()),
    ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim", "v1", ()),
    ("/api/v1/persistentvolumes", "PersistentVolume", "v1", ()),
    ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass", "storage.k8s.io/v1", ()),
)
MERGE_PATCH = "application/merge-patch+json"
COMPONENT = "nodewright"
_EVENT_WORKERS = 8
# The connections one ApiServer pools: as many as `record_events` or an incremental `read()` uses threads.
CONNECTIONS = max(_EVENT_WORKERS, len(NODEPOOLS) + len(NODECLASSES) + 1 + len(CLUSTER_LISTS))
# The API server's answer (HTTP 500) to an Eviction of a pod more than one PodDisruptionBudget selects.
MULTIPLE_PDBS_MESSAGE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
)
# The provisioner's informers (`read_for_provisioning`, `nodeclaims`) list a list smaller than this again instead of
# watching it: a watch may take a second to prove it is current, a few hundred objects take less to list and parse.
WATCH_FROM_OBJECTS = 1000
_CONFLICT_RETRIES = 5
_POSTED_MEMORY_SECONDS = 900.0


BUFFER_GROUP = "autoscaling.x-k8s.io"
BUFFER_VERSIONS = ("v1beta1", "v1alpha1")  # Karpenter's CRD serves v1beta1, Cluster Autoscaler's first was v1alpha1
_SCALABLE_PATHS = {"Deployment": "deployments", "ReplicaSet": "replicasets", "StatefulSet": "statefulsets"}


def _buffer_ref(buffer: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(API path, kind, apiVersion) of the PodTemplate or workload a CapacityBuffer names (in its namespace); None
    when it names nothing nodewright reads."""
    namespace = (buffer.get("metadata") or {}).get("namespace") or "default"
    spec = buffer.get("spec") or {}
    template = spec.get("podTemplateRef") or {}
    scalable = spec.get("scalableRef") or {}
    if isinstance(template, Mapping) and template.get("name"):
        return f"/api/v1/namespaces/{namespace}/podtemplates/{template['name']}", "PodTemplate", "v1"
    if isinstance(scalable, Mapping) and scalable.get("kind") in _SCALABLE_PATHS and scalable.get("name"):
        if (scalable.get("apiGroup") or "apps") != "apps":
            return None
        plural = _SCALABLE_PATHS[str(scalable["kind"])]
        return f"/apis/apps/v1/namespaces/{namespace}/{plural}/{scalable['name']}", str(scalable["kind"]), "apps/v1"
    return None


def side_by_side_gets(get: Callable[[str], dict[str, Any] | None], paths: Sequence[str]) -> list[dict[str, Any] | None]:
    """GETs of these paths at once (None for a 404), in the order of `paths`."""
    if len(paths) <= 1:
        return [get(p) for p in paths]
    with ThreadPoolExecutor(max_workers=min(_READ_WORKERS, len(paths))) as pool:
        return list(pool.map(get, paths))


def _strip(doc: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    doc.setdefault("kind", kind)
    doc.setdefault("apiVersion", api_version)
    return slim(doc, kind)


def _pod_key(pod: Mapping[str, Any]) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"


def selector_string(selector: LabelSelector) -> str:
    """A LabelSelector in the API's `labelSelector` query syntax (`app=web,tier in (a,b),!legacy`)."""
    parts = [f"{key}={value}" for key, value in selector.match_labels]
    for r in selector.match_expressions:
        if r.operator is Operator.IN:
            parts.append(f"{r.key} in ({','.join(sorted(r.values))})")
        elif r.operator is Operator.NOT_IN:
            parts.append(f"{r.key} notin ({','.join(sorted(r.values))})")
        elif r.operator is Operator.EXISTS:
            parts.append(r.key)
        elif r.operator is Operator.DOES_NOT_EXIST:
            parts.append(f"!{r.key}")
        else:
            raise ValueError(f"label selectors have no operator {r.operator.value}")
    return ",".join(parts)


class KubernetesCluster:
    """Cluster port over the Kubernetes REST API (see the module doc)."""

    def __init__(
        self, api: ApiServer, clock: Callable[[], float] | None = None, informers: Informers | None = None
    ) -> None:
        """`informers`: where `read()` keeps its lists between calls and follows them with watches (None: it lists
        everything every time)."""
        self.api = api
        self._clock = clock or (lambda: datetime.now(UTC).timestamp())
        self._posted: dict[str, float] = {}  # event name -> when this process posted it
        self._informers = informers

    @classmethod
    def from_eks(cls, cluster_name: str, eks: Any, token_source: Any, incremental: bool = False) -> KubernetesCluster:
        """Endpoint and CA from eks:DescribeCluster; bearer tokens from `token_source.token()`. `incremental`:
        `read()` follows its lists with watches, in stores the process keeps by endpoint (`informers_for`)."""
        cluster = eks.describe_cluster(name=cluster_name)["cluster"]
        ca_pem = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
        api = ApiServer(str(cluster["endpoint"]), ca_pem, token_source.token, CONNECTIONS)
        # Kept by endpoint and CA: a cluster made again at the same address starts its resourceVersions anew, and
        # a watch from the old cluster's resourceVersion must not be applied to its objects.
        kept = f"{api.endpoint} {hashlib.sha256(ca_pem.encode()).hexdigest()[:16]}"
        return cls(api, informers=informers_for(kept) if incremental else None)

    # ---------------------------------------------------------------------------------------- REST

    def _call(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
        data = self._send(method, path, query, payload, content_type).decode()
        parsed: dict[str, Any] = json.loads(data) if data else {}
        return parsed

    def _send(
        self, method: str, path: str, query: Sequence[tuple[str, str]], payload: bytes | None, content_type: str
    ) -> bytes:
        """The body of the answer; an error status raises ApiError."""
        # gzip, as client-go asks for it: a thousand nodes are 4 MB of JSON and 0.2 MB compressed.
        headers = {"Accept": "application/json", "Accept-Encoding": "gzip"}
        if payload is not None:
            headers["Content-Type"] = content_type
        status, raw = self.api.request(method, path, query, payload, headers)
        if status >= 400:
            raise ApiError(status, method, path, raw.decode(errors="replace"))
        return raw

    def _list(
        self,
        path: str,
        kind: str,
        api_version: str,
        query: Sequence[tuple[str, str]] = (),
        cached: bool = False,
    ) -> list[dict[str, Any]]:
        """Every item of a list, following `continue` tokens, with kind and apiVersion filled in. `cached`
        asks for the watch cache's copy (resourceVersion=0) on the first page; later pages follow the token."""
        return self._list_at(path, kind, api_version, query, cached)[0]

    def _list_at(
        self,
        path: str,
        kind: str,
        api_version: str,
        query: Sequence[tuple[str, str]] = (),
        cached: bool = False,
    ) -> tuple[list[dict[str, Any]], str]:
        """`_list`'s items and the list's resourceVersion (what a watch goes on from)."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            params = [*query, ("limit", "500")]
            if token:
                params.append(("continue", token))
            elif cached:
                params.append(("resourceVersion", "0"))
            page = self._call("GET", path, params)
            items.extend(_strip(d, kind, api_version) for d in page.get("items", []))
            metadata = page.get("metadata") or {}
            token = str(metadata.get("continue") or "")
            if not token:
                return items, str(metadata.get("resourceVersion") or "")

    def _get(self, path: str) -> dict[str, Any] | None:
        try:
            return self._call("GET", path)
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    # ------------------------------------------------------------------------------------- read

    def _custom(self, group: str, version: str, plural: str, cached: bool = False) -> list[dict[str, Any]]:
        try:
            return self._list(f"/apis/{group}/{version}/{plural}", "", f"{group}/{version}", cached=cached)
        except ApiError as error:
            if error.status == 404:
                return []
            raise

    def read(self) -> ClusterView:
        # The planner's whole-cluster read, once a minute: from the watch cache, as informers would hold it.
        customs = [
            (f"/apis/{g}/{v}/{p}", "", f"{g}/{v}", ())
            for g, v, p in (*NODEPOOLS, *NODECLASSES, NODECLAIMS, NODEOVERLAYS)
        ]
        lists = [*customs, *CLUSTER_LISTS]
        if self._informers is None:
            got = [self._list_or_none(*spec)[0] for spec in lists]
        else:
            # Side by side: each watch waits out its timeoutSeconds, and the read should pay that once.
            with ThreadPoolExecutor(max_workers=len(lists)) as pool:
                got = list(pool.map(lambda spec: self._follow(*spec), lists))
        documents: list[dict[str, Any]] = []
        unbound: dict[str, dict[str, Any]] = {}
        for (path, _, _, _), items in zip(lists, got, strict=True):
            if path != "/api/v1/pods":
                documents.extend(items)
                continue
            for pod in items:
                if (pod.get("spec") or {}).get("nodeName"):
                    documents.append(pod)
                else:
                    metadata = pod.get("metadata") or {}
                    unbound[f"{metadata.get('namespace', 'default')}/{metadata.get('name', '')}"] = pod
        return ClusterView(documents, unbound, self.capacity_buffers())

    def capacity_buffers(self) -> Sequence[Mapping[str, Any]]:
        buffers: list[dict[str, Any]] = []
        for version in BUFFER_VERSIONS:
            path = f"/apis/{BUFFER_GROUP}/{version}/capacitybuffers"
            found, _ = self._list_or_none(path, "", f"{BUFFER_GROUP}/{version}", ())
            if found:
                # Listed with no kind (a custom list whose CRD may be absent): each item is a CapacityBuffer.
                buffers = [{**d, "kind": "CapacityBuffer", "apiVersion": f"{BUFFER_GROUP}/{version}"} for d in found]
                break
        wanted = sorted({ref for ref in (_buffer_ref(b) for b in buffers) if ref is not None})
        named = side_by_side_gets(self._get, [path for path, _, _ in wanted])
        referenced = [_strip(doc, kind, api) for (_, kind, api), doc in zip(wanted, named, strict=True) if doc]
        return [*buffers, *referenced]

    def set_capacity_buffer_status(
        self, buffer: Mapping[str, Any], fields: Mapping[str, Any], conditions: Sequence[Condition] = ()
    ) -> None:
        metadata = buffer.get("metadata") or {}
        api_version = str(buffer.get("apiVersion") or f"{BUFFER_GROUP}/{BUFFER_VERSIONS[0]}")
        path = (
            f"/apis/{api_version}/namespaces/{metadata.get('namespace') or 'default'}/capacitybuffers/"
            f"{metadata.get('name', '')}"
        )
        self._merge_status(path, fields, conditions, ())

    def _list_or_none(
        self, path: str, kind: str, api_version: str, query: Sequence[tuple[str, str]], cached: bool = True
    ) -> tuple[list[dict[str, Any]], str]:
        """A list (from the watch cache unless not `cached`) and its resourceVersion; a custom resource whose CRD is
        not installed (404) is empty (and has no resourceVersion to follow)."""
        try:
            return self._list_at(path, kind, api_version, query, cached=cached)
        except ApiError as error:
            if error.status == 404 and path.startswith("/apis/") and not kind:
                return [], ""
            raise

    def _follow(
        self,
        path: str,
        kind: str,
        api_version: str,
        query: tuple[tuple[str, str], ...],
        reach: Callable[[], str] | None = None,
        consistent: bool = False,
    ) -> list[dict[str, Any]]:
        """A list through its informer: listed the first time, then followed with a watch. Without `reach` (the
        planner's `read()`), the watch runs `WATCH_SECONDS`. With it (the provisioner's reads), it runs until the
        store reaches the resourceVersion `reach()` gives (`PROOF_WATCH_SECONDS` at most), and a store with fewer
        than `WATCH_FROM_OBJECTS` objects is listed again instead. `consistent`: the list is listed consistently
        (not from the watch cache) and a watch that does not prove it reached that version is followed by that list
        (`Informer.sync`). `reach` is asked only of a store that holds a list: an empty one (a cold container) lists,
        consistently where it must, and a consistent read of where to go would only delay that list."""
        assert self._informers is not None
        key = (path, query, "consistent") if consistent else (path, query)
        informer = self._informers.informer(key, lambda doc: _strip(doc, kind, api_version))
        target = reach() if reach is not None and informer.resource_version else ""
        seconds = PROOF_WATCH_SECONDS if target or consistent else WATCH_SECONDS

        def watch(resource_version: str) -> Iterable[bytes]:
            params = [
                *query,
                ("watch", "1"),
                ("resourceVersion", resource_version),
                ("allowWatchBookmarks", "true"),
                ("timeoutSeconds", str(seconds)),
            ]
            stream = getattr(self.api, "stream", None)
            if stream is None:  # a transport that answers whole bodies only
                return self._send("GET", path, params, None, "").splitlines()
            lines: Iterable[bytes] = stream(path, params, {"Accept": "application/json", "Accept-Encoding": "gzip"})
            return lines

        relist = partial(self._list_or_none, path, kind, api_version, query, not consistent)
        if not (target or consistent):
            return informer.sync(relist, watch)
        return informer.sync(relist, watch, target, consistent, WATCH_FROM_OBJECTS)

    def _current_version(self, path: str) -> str:
        """The resourceVersion a consistent read of `path` is at now ("" when its CRD is not installed): one
        object's page, which etcd answers without reading the list."""
        try:
            page = self._call("GET", path, [("limit", "1")])
        except ApiError as error:
            if error.status == 404 and path.startswith("/apis/"):
                return ""
            raise
        return str((page.get("metadata") or {}).get("resourceVersion") or "")

    def read_for_provisioning(self) -> ProvisioningView:
        # Independent lists, asked side by side: the decision waits for the slowest, not for their sum.
        lists: dict[str, Callable[[], list[dict[str, Any]]]] = {
            "claims": lambda: self._custom(*NODECLAIMS, cached=True),
            "overlays": lambda: self._custom(*NODEOVERLAYS, cached=True),
            "nodes": lambda: self._list("/api/v1/nodes", "Node", "v1", cached=True),
            "pending": lambda: self._pending(cached=True),
            "daemonsets": lambda: self._list("/apis/apps/v1/daemonsets", "DaemonSet", "apps/v1", cached=True),
            "classes": lambda: self._list(
                "/apis/storage.k8s.io/v1/storageclasses", "StorageClass", "storage.k8s.io/v1", cached=True
            ),
        }
        if self._informers is not None:
            # Nodes, the one large list here, are followed from the last read, up to where a consistent read of
            # them is now. NodeClaims come from `nodeclaims()`, which the provisioner reads beside this (consistently).
            lists["nodes"] = lambda: self._follow(
                "/api/v1/nodes", "Node", "v1", (), reach=partial(self._current_version, "/api/v1/nodes")
            )
            lists["claims"] = list
        for kind, groups in (("pools", NODEPOOLS), ("nodeclasses", NODECLASSES)):
            for group, version, plural in groups:
                lists[f"{kind}/{group}"] = partial(self._custom, group, version, plural, True)
        with ThreadPoolExecutor(max_workers=_READ_WORKERS) as pool:
            futures = {name: pool.submit(read) for name, read in lists.items()}
            got = {name: future.result() for name, future in futures.items()}
        return ProvisioningView(
            nodepools=[d for g, _, _ in NODEPOOLS for d in got[f"pools/{g}"]],
            nodeclasses=[d for g, _, _ in NODECLASSES for d in got[f"nodeclasses/{g}"]],
            nodeclaims=got["claims"],
            nodes=got["nodes"],
            daemonsets=got["daemonsets"],
            storage_classes=got["classes"],
            pending={_pod_key(p): p for p in got["pending"]},
            nodeoverlays=got["overlays"],
        )

    def _pending(self, cached: bool, namespace: str | None = None) -> list[dict[str, Any]]:
        path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
        return self._list(path, "Pod", "v1", [("fieldSelector", PENDING_PODS)], cached=cached)

    def nodeclaims(self) -> Sequence[Mapping[str, Any]]:
        # Not resourceVersion=0: the watch cache may not yet hold the NodeClaims another planner just created.
        if self._informers is None:
            return self._custom(*NODECLAIMS, cached=False)
        # With informers: the store followed up to the resourceVersion a consistent read is at now, or listed
        # consistently when the watch cannot prove it got there (`Informer.sync`): never older than that read.
        path = self._nodeclaims()
        group, version, _ = NODECLAIMS
        return self._follow(path, "", f"{group}/{version}", (), partial(self._current_version, path), consistent=True)

    def pending_pods(self, namespaces: Sequence[str] | None = None) -> Mapping[str, Mapping[str, Any]]:
        if namespaces is None:
            return {_pod_key(p): p for p in self._pending(cached=False)}
        reads = [partial(self._pending, False, namespace) for namespace in namespaces]
        with ThreadPoolExecutor(max_workers=max(1, min(_READ_WORKERS, len(reads)))) as pool:
            lists = list(pool.map(lambda read: read(), reads))
        return {_pod_key(p): p for pods in lists for p in pods}

    def bound_pods(self, namespace: str | None, selector: LabelSelector | None) -> Sequence[Mapping[str, Any]]:
        path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
        query = [("fieldSelector", BOUND_PODS)]
        if selector is not None and not selector.is_empty():
            query.append(("labelSelector", selector_string(selector)))
        return self._list(path, "Pod", "v1", query, cached=True)

    def volumes(
        self, claims: Sequence[tuple[str, str]]
    ) -> tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]:
        pvcs = [
            _strip(d, "PersistentVolumeClaim", "v1")
            for namespace, name in sorted(set(claims))
            if (d := self._get(f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}")) is not None
        ]
        bound = sorted({str((c.get("spec") or {}).get("volumeName") or "") for c in pvcs} - {""})
        pvs = [
            _strip(d, "PersistentVolume", "v1")
            for name in bound
            if (d := self._get(f"/api/v1/persistentvolumes/{name}")) is not None
        ]
        return pvcs, pvs

    def read_fleet(self) -> FleetView:
        pools = [d for group, version, plural in NODEPOOLS for d in self._custom(group, version, plural)]
        classes = [d for group, version, plural in NODECLASSES for d in self._custom(group, version, plural)]
        return FleetView(pools, self._custom(*NODECLAIMS), self._list("/api/v1/nodes", "Node", "v1"), classes)

    def volume_attachments(self, node: str) -> Sequence[Mapping[str, Any]]:
        # The API server has no spec.nodeName field selector for VolumeAttachments (Karpenter indexes its cache):
        # list them all, a page at a time, and keep the node's.
        return [
            d
            for d in self._list("/apis/storage.k8s.io/v1/volumeattachments", "VolumeAttachment", "storage.k8s.io/v1")
            if (d.get("spec") or {}).get("nodeName") == node
        ]

    def pods_on_node(self, node: str) -> Sequence[Mapping[str, Any]]:
        selector = f"spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed"
        return self._list("/api/v1/pods", "Pod", "v1", [("fieldSelector", selector)])

    # ---------------------------------------------------------------------------------- NodeClaims

    def _nodeclaims(self, name: str = "", sub: str = "") -> str:
        group, version, plural = NODECLAIMS
        path = f"/apis/{group}/{version}/{plural}"
        return f"{path}/{name}{sub}" if name else path

    def create_nodeclaim(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        try:
            self._call("POST", self._nodeclaims(), body=dict(document))
        except ApiError as error:
            if error.status != 409:
                raise
            name = str((document.get("metadata") or {}).get("name", ""))
            return self._call("GET", self._nodeclaims(name))
        return None

    def update_nodeclaim(
        self, name: str, labels: Mapping[str, str], annotations: Mapping[str, str], status: Mapping[str, Any]
    ) -> None:
        if labels or annotations:
            metadata: dict[str, Any] = {}
            if labels:
                metadata["labels"] = dict(labels)
            if annotations:
                metadata["annotations"] = dict(annotations)
            self._call("PATCH", self._nodeclaims(name), body={"metadata": metadata}, content_type=MERGE_PATCH)
        if status:
            self._patch_status(self._nodeclaims(name), {"status": dict(status)})

    def set_nodeclaim_conditions(self, name: str, conditions: Sequence[Condition], clear: Sequence[str] = ()) -> None:
        self._merge_status(self._nodeclaims(name), {}, conditions, clear)

    def set_status(self, kind: str, name: str, fields: Mapping[str, Any], conditions: Sequence[Condition] = ()) -> None:
        if kind not in STATUS_RESOURCES:
            raise ValueError(f"set_status: kind {kind!r} is not one of {', '.join(STATUS_RESOURCES)}")
        self._merge_status(f"{STATUS_RESOURCES[kind]}/{name}", fields, conditions, ())

    def _merge_status(
        self, path: str, fields: Mapping[str, Any], conditions: Sequence[Condition], clear: Sequence[str]
    ) -> None:
        # A merge patch replaces the whole conditions list, so it carries the resourceVersion it was merged
        # from: a writer that changed another condition in between makes it fail (409) and it merges again.
        for _ in range(_CONFLICT_RETRIES):
            current = self._get(path)
            if current is None:
                return
            status = current.get("status") or {}
            body: dict[str, Any] = {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "status": dict(fields),
            }
            if conditions or clear:
                body["status"]["conditions"] = merge_conditions(
                    status.get("conditions") or [], conditions, clear, self._clock()
                )
            try:
                self._patch_status(path, body)
                return
            except ApiError as error:
                if error.status == 404:
                    return
                if error.status != 409:
                    raise
        raise ApiError(409, "PATCH", f"{path}/status", "the status kept changing under us")

    def _patch_status(self, path: str, body: Mapping[str, Any]) -> None:
        try:
            self._call("PATCH", f"{path}/status", body=dict(body), content_type=MERGE_PATCH)
        except ApiError as error:
            # A CRD without the status subresource keeps status in the main resource.
            if error.status != 404:
                raise
            self._call("PATCH", path, body=dict(body), content_type=MERGE_PATCH)

    def get_nodeclaim(self, name: str) -> Mapping[str, Any] | None:
        found = self._get(self._nodeclaims(name))
        return _strip(found, "NodeClaim", "/".join(NODECLAIMS[:2])) if found is not None else None

    def get_node(self, name: str) -> Mapping[str, Any] | None:
        found = self._get(f"/api/v1/nodes/{name}")
        return _strip(found, "Node", "v1") if found is not None else None

    def delete_nodeclaim(self, name: str) -> None:
        self._release(self._nodeclaims(name))

    def request_nodeclaim_deletion(self, name: str) -> None:
        try:
            self._call("DELETE", self._nodeclaims(name))
        except ApiError as error:
            if error.status != 404:
                raise

    def _read_modify_write(self, path: str, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> bool:
        """Read the object at `path`, turn it into a merge-patch body with `change` (None: nothing to change) and
        patch it with the resourceVersion it was read at: a merge patch replaces whole lists (taints,
        finalizers), so an object written in between (a heartbeat, another taint) fails with 409 and is read
        again. False when the object is gone or nothing changed."""
        for _ in range(_CONFLICT_RETRIES):
            current = self._get(path)
            body = change(current) if current is not None else None
            if current is None or body is None:
                return False
            metadata = {**(body.get("metadata") or {}), "resourceVersion": current["metadata"]["resourceVersion"]}
            try:
                self._call("PATCH", path, body={**body, "metadata": metadata}, content_type=MERGE_PATCH)
                return True
            except ApiError as error:
                if error.status == 404:
                    return False
                if error.status != 409:
                    raise
        raise ApiError(409, "PATCH", path, "the object kept changing under us")

    def _finalizer(self, path: str, present: bool) -> None:
        """Put the termination finalizer on the object at `path` (present) or take it off; an object that is
        gone, already so, or (when adding) being deleted is left alone."""

        def change(current: dict[str, Any]) -> dict[str, Any] | None:
            metadata = current.get("metadata") or {}
            finalizers = list(metadata.get("finalizers") or [])
            if (FINALIZER in finalizers) == present:
                return None
            if present and metadata.get("deletionTimestamp"):
                return None  # the API server refuses new finalizers on an object being deleted
            others = [f for f in finalizers if f != FINALIZER]
            return {"metadata": {"finalizers": [*finalizers, FINALIZER] if present else others}}

        self._read_modify_write(path, change)

    def _release(self, path: str) -> None:
        """nodewright's own deletion: its finalizer off, then the object deleted (absent is fine)."""
        self._finalizer(path, present=False)
        try:
            self._call("DELETE", path)
        except ApiError as error:
            if error.status != 404:
                raise

    # -------------------------------------------------------------------------------- nodes, events

    def _change_taints(self, node: str, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None]) -> bool:
        """Apply `change` to the node's taints (None: nothing to change); False when the node is gone or nothing
        changed (see `_read_modify_write`)."""

        def body(current: dict[str, Any]) -> dict[str, Any] | None:
            changed = change(list((current.get("spec") or {}).get("taints") or []))
            return {"spec": {"taints": changed}} if changed is not None else None

        return self._read_modify_write(f"/api/v1/nodes/{node}", body)

    def remove_node_taint(self, node: str, taint_key: str, effect: str = "") -> None:
        def without(taints: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
            kept = [t for t in taints if t.get("key") != taint_key or (effect and t.get("effect") != effect)]
            return kept if len(kept) != len(taints) else None

        self._change_taints(node, without)

    def label_node(self, node: str, labels: Mapping[str, str | None]) -> None:
        try:
            body = {"metadata": {"labels": dict(labels)}}  # a merge patch: a null value removes the label
            self._call("PATCH", f"/api/v1/nodes/{node}", body=body, content_type=MERGE_PATCH)
        except ApiError as error:
            if error.status != 404:
                raise

    def add_node_taint(self, node: str, key: str, value: str, effect: str) -> bool:
        def with_taint(taints: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
            if any(t.get("key") == key and t.get("effect") == effect for t in taints):
                return None
            return [*taints, {"key": key, "effect": effect, **({"value": value} if value else {})}]

        return self._change_taints(node, with_taint)

    def set_unschedulable(self, node: str, unschedulable: bool) -> None:
        def change(current: dict[str, Any]) -> dict[str, Any] | None:
            cordoned = bool((current.get("spec") or {}).get("unschedulable"))
            ours = CORDONED in ((current.get("metadata") or {}).get("annotations") or {})
            if unschedulable and not cordoned:
                return {"spec": {"unschedulable": True}, "metadata": {"annotations": {CORDONED: "true"}}}
            if not unschedulable and ours:
                return {"spec": {"unschedulable": None}, "metadata": {"annotations": {CORDONED: None}}}
            return None  # already cordoned (by whoever), or a cordon that is not ours to lift

        self._read_modify_write(f"/api/v1/nodes/{node}", change)

    def evict_pod(self, namespace: str, name: str) -> str:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        try:
            self._call("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body=body)
        except ApiError as error:
            # 429: a PodDisruptionBudget refuses for now. A pod two budgets select gets a 500 the eviction
            # subresource answers every time; Karpenter's eviction queue reads it as a refusal too (eviction.go), so
            # the drain asks again next round instead of failing, until the deadline deletes the pod.
            if error.status == 429 or (error.status == 500 and MULTIPLE_PDBS_MESSAGE in error.body):
                return BLOCKED
            if error.status == 404:
                return GONE
            raise
        return EVICTED

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        query = [("gracePeriodSeconds", str(grace_seconds))] if grace_seconds is not None else []
        try:
            self._call("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", query)
        except ApiError as error:
            if error.status != 404:
                raise

    def delete_node(self, name: str) -> None:
        self._release(f"/api/v1/nodes/{name}")

    def add_node_finalizer(self, name: str) -> None:
        self._finalizer(f"/api/v1/nodes/{name}", present=True)

    def _event_body(
        self, kind: str, namespace: str, name: str, event: PodEvent | NodeEvent, now: str
    ) -> dict[str, Any]:
        scope = f"{kind}|" if kind in CUSTOM_KINDS else ""  # a NodeClaim's events never share a node's name
        digest = hashlib.sha256(f"{scope}{event.reason}|{event.dedupe or event.message}".encode()).hexdigest()[:16]
        involved = {
            "apiVersion": CUSTOM_KINDS.get(kind, "v1"),
            "kind": kind,
            "name": name,
            **({"namespace": namespace} if kind == "Pod" else {}),
        }
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name[:200]}.{digest}", "namespace": namespace},
            "involvedObject": involved,
            "reason": event.reason,
            "message": event.message[:1024],
            "type": event.type,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": COMPONENT,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }

    def _event(self, event: PodEvent, now: str) -> None:
        namespace, _, name = event.pod.partition("/")
        self._post_event(namespace, self._event_body("Pod", namespace, name, event, now))

    def record_node_events(self, events: Sequence[NodeEvent]) -> None:
        clock = self._clock()
        now = datetime.fromtimestamp(clock, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        # Node, NodeClaim and NodePool events live in the default namespace, as the kubelet's and Karpenter's do.
        # The planner repeats its events every tick; a warm process skips the ones it posted lately (the API
        # server would answer 409 for them anyway, since an event's name derives from its reason and dedupe key).
        bodies = []
        for event in events:
            body = self._event_body(event.kind, "default", event.node, event, now)
            name = str(body["metadata"]["name"])
            if clock - self._posted.get(name, -_POSTED_MEMORY_SECONDS) < _POSTED_MEMORY_SECONDS:
                continue
            self._posted[name] = clock
            bodies.append(body)
        if len(bodies) <= 2:
            for body in bodies:
                self._post_event("default", body)
            return
        with ThreadPoolExecutor(max_workers=_EVENT_WORKERS) as pool:
            for future in [pool.submit(self._post_event, "default", b) for b in bodies]:
                future.result()

    def _post_event(self, namespace: str, body: dict[str, Any]) -> None:
        try:
            self._call("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
        except ApiError as error:
            # 409: the same event was recorded by an earlier run of this batch; 404: the namespace is gone.
            if error.status not in (404, 409):
                raise

    def record_events(self, events: Sequence[PodEvent]) -> None:
        now = datetime.fromtimestamp(self._clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if len(events) <= 2:
            for event in events:
                self._event(event, now)
            return
        # Events are independent and the API server handles them in parallel; a thousand pods should not
        # mean a thousand sequential round trips.
        with ThreadPoolExecutor(max_workers=_EVENT_WORKERS) as pool:
            for future in [pool.submit(self._event, e, now) for e in events]:
                future.result()
