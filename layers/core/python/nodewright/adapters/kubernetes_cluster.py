"""The Cluster port on the Kubernetes API, reached with an EKS token (the same path in AWS and locally).

`from_eks()` reads the API server endpoint and CA from eks:DescribeCluster and authenticates every request
with a bearer token from `adapters.eks_token.EksTokenSource` (minted every ~14 minutes). No kubeconfig is
involved, so a Lambda needs nothing but its IAM role and the cluster's access entry.

The transport is urllib3, which botocore has already loaded, speaking JSON to REST paths. The official
`kubernetes` package is not imported here: its import (the generated models and APIs, and requests,
oauthlib, websocket and dateutil under them) took about 180 ms, the largest part of a Lambda cold start,
for a dozen REST calls whose bodies we read as plain JSON anyway.

Lists are read in pages of 500. List items carry no kind/apiVersion, so they are added. managedFields are
dropped (large and never read).

Custom objects: NodePools, EC2NodeClasses and NodeClaims of `nodewright.io/v1` only. Karpenter's
`karpenter.sh/v1` and `karpenter.k8s.aws/v1` objects are never read in a cluster, so nodewright and Karpenter
can run side by side without both acting on the same NodePool (the CLI still reads Karpenter's files, and
`nodewright migrate` rewrites them). A group whose CRD is not installed (HTTP 404) is simply empty.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from nodewright.model.conditions import Condition, merge_conditions
from nodewright.ports import BLOCKED, EVICTED, GONE, ClusterView, FleetView, NodeEvent, PodEvent

NODECLAIMS = ("nodewright.io", "v1", "nodeclaims")
NODEPOOLS = (("nodewright.io", "v1", "nodepools"),)
NODECLASSES = (("nodewright.io", "v1", "ec2nodeclasses"),)
MERGE_PATCH = "application/merge-patch+json"
COMPONENT = "nodewright"
_EVENT_WORKERS = 8
CONNECT_TIMEOUT_SECONDS = 5.0
READ_TIMEOUT_SECONDS = 30.0
_CONFLICT_RETRIES = 5
_POSTED_MEMORY_SECONDS = 900.0


def _strip(doc: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    doc.setdefault("kind", kind)
    doc.setdefault("apiVersion", api_version)
    (doc.get("metadata") or {}).pop("managedFields", None)
    return doc


class ApiError(Exception):
    """The API server answered with an error status."""

    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status


class ApiServer:
    """HTTP(S) requests to one Kubernetes API server, each with a fresh-enough bearer token.

    `endpoint` is the server's base URL; `ca_pem` the PEM bundle that signs its certificate (None: the
    system's trust store); `token()` is called per request and is expected to cache (EksTokenSource does).
    Connection failures are retried (the request never reached the server); a request that reached it is
    retried only when it is idempotent and the read failed, and HTTP error statuses are returned, not retried.
    The pool holds as many connections as `record_events` uses threads.
    """

    def __init__(self, endpoint: str, ca_pem: str | None, token: Callable[[], str]) -> None:
        import urllib3

        self._base = endpoint.rstrip("/")
        self._token = token
        self._pool = urllib3.PoolManager(
            num_pools=1,
            maxsize=_EVENT_WORKERS,
            cert_reqs="CERT_REQUIRED",
            ca_cert_data=ca_pem,
            retries=urllib3.Retry(total=3, connect=3, read=1, status=0, backoff_factor=0.2, redirect=False),
            timeout=urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS),
        )

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        """Send one request; returns (HTTP status, body bytes)."""
        url = self._base + path + (f"?{urlencode(list(query))}" if query else "")
        sent = {**(headers or {}), "Authorization": f"Bearer {self._token()}"}
        response = self._pool.request(method, url, body=body, headers=sent, redirect=False)
        return int(response.status), bytes(response.data)


class KubernetesCluster:
    """Cluster port over the Kubernetes REST API (see the module doc)."""

    def __init__(self, api: ApiServer, clock: Callable[[], float] | None = None) -> None:
        self.api = api
        self._clock = clock or (lambda: datetime.now(UTC).timestamp())
        self._posted: dict[str, float] = {}  # event name -> when this process posted it

    @classmethod
    def from_eks(cls, cluster_name: str, eks: Any, token_source: Any) -> KubernetesCluster:
        """Endpoint and CA from eks:DescribeCluster; bearer tokens from `token_source.token()`."""
        cluster = eks.describe_cluster(name=cluster_name)["cluster"]
        ca_pem = base64.b64decode(cluster["certificateAuthority"]["data"]).decode()
        return cls(ApiServer(str(cluster["endpoint"]), ca_pem, token_source.token))

    # ---------------------------------------------------------------------------------------- REST

    def _call(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        headers = {"Accept": "application/json"}
        payload = None
        if body is not None:
            headers["Content-Type"] = content_type
            payload = json.dumps(body).encode()
        status, raw = self.api.request(method, path, query, payload, headers)
        data = raw.decode()
        if status >= 400:
            raise ApiError(status, method, path, data)
        parsed: dict[str, Any] = json.loads(data) if data else {}
        return parsed

    def _list(
        self, path: str, kind: str, api_version: str, query: Sequence[tuple[str, str]] = ()
    ) -> list[dict[str, Any]]:
        """Every item of a list, following `continue` tokens, with kind and apiVersion filled in."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            params = [*query, ("limit", "500")] + ([("continue", token)] if token else [])
            page = self._call("GET", path, params)
            items.extend(_strip(d, kind, api_version) for d in page.get("items", []))
            token = str((page.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    # ------------------------------------------------------------------------------------- read

    def _custom(self, group: str, version: str, plural: str) -> list[dict[str, Any]]:
        try:
            return self._list(f"/apis/{group}/{version}/{plural}", "", f"{group}/{version}")
        except ApiError as error:
            if error.status == 404:
                return []
            raise

    def read(self) -> ClusterView:
        documents: list[dict[str, Any]] = []
        for group, version, plural in (*NODEPOOLS, *NODECLASSES, NODECLAIMS):
            documents.extend(self._custom(group, version, plural))
        documents.extend(self._list("/api/v1/nodes", "Node", "v1"))
        unbound: dict[str, dict[str, Any]] = {}
        active = [("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")]
        for pod in self._list("/api/v1/pods", "Pod", "v1", active):
            metadata = pod.get("metadata") or {}
            if not (pod.get("spec") or {}).get("nodeName"):
                unbound[f"{metadata.get('namespace', 'default')}/{metadata.get('name', '')}"] = pod
                continue
            documents.append(pod)
        documents.extend(self._list("/apis/apps/v1/daemonsets", "DaemonSet", "apps/v1"))
        documents.extend(self._list("/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudget", "policy/v1"))
        documents.extend(self._list("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim", "v1"))
        documents.extend(self._list("/api/v1/persistentvolumes", "PersistentVolume", "v1"))
        documents.extend(self._list("/apis/storage.k8s.io/v1/storageclasses", "StorageClass", "storage.k8s.io/v1"))
        return ClusterView(documents, unbound)

    def read_fleet(self) -> FleetView:
        pools: list[dict[str, Any]] = []
        for group, version, plural in NODEPOOLS:
            pools.extend(self._custom(group, version, plural))
        return FleetView(pools, self._custom(*NODECLAIMS), self._list("/api/v1/nodes", "Node", "v1"))

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
        self._merge_status(self._nodeclaims(name), conditions, clear, {})

    def set_nodeclass_status(self, name: str, conditions: Sequence[Condition], fields: Mapping[str, Any]) -> None:
        group, version, plural = NODECLASSES[0]
        self._merge_status(f"/apis/{group}/{version}/{plural}/{name}", conditions, (), fields)

    def _merge_status(
        self, path: str, conditions: Sequence[Condition], clear: Sequence[str], fields: Mapping[str, Any]
    ) -> None:
        # A merge patch replaces the whole list, so it carries the resourceVersion it was merged from: a writer
        # that changed another condition in between makes it fail (409) and it merges again.
        for _ in range(_CONFLICT_RETRIES):
            try:
                current = self._call("GET", path)
            except ApiError as error:
                if error.status == 404:
                    return
                raise
            status = current.get("status") or {}
            merged = merge_conditions(status.get("conditions") or [], conditions, clear, self._clock())
            body = {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "status": {**fields, "conditions": merged},
            }
            try:
                self._patch_status(path, body)
                return
            except ApiError as error:
                if error.status == 404:
                    return
                if error.status != 409:
                    raise
        raise ApiError(409, "PATCH", f"{path}/status", "conditions kept changing under us")

    def _patch_status(self, path: str, body: Mapping[str, Any]) -> None:
        try:
            self._call("PATCH", f"{path}/status", body=dict(body), content_type=MERGE_PATCH)
        except ApiError as error:
            # A CRD without the status subresource keeps status in the main resource.
            if error.status != 404:
                raise
            self._call("PATCH", path, body=dict(body), content_type=MERGE_PATCH)

    def delete_nodeclaim(self, name: str) -> None:
        try:
            self._call("DELETE", self._nodeclaims(name))
        except ApiError as error:
            if error.status != 404:
                raise

    # -------------------------------------------------------------------------------- nodes, events

    def remove_node_taint(self, node: str, taint_key: str) -> None:
        current = self._call("GET", f"/api/v1/nodes/{node}")
        taints = (current.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != taint_key]
        if len(kept) == len(taints):
            return
        # A merge patch replaces the whole list; resourceVersion makes it fail rather than drop a taint
        # someone else added in between.
        body = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]}, "spec": {"taints": kept}}
        self._call("PATCH", f"/api/v1/nodes/{node}", body=body, content_type=MERGE_PATCH)

    def _node(self, node: str) -> dict[str, Any] | None:
        try:
            return self._call("GET", f"/api/v1/nodes/{node}")
        except ApiError as error:
            if error.status == 404:
                return None
            raise

    def add_node_taint(self, node: str, key: str, value: str, effect: str) -> bool:
        current = self._node(node)
        if current is None:
            return False
        taints = (current.get("spec") or {}).get("taints") or []
        if any(t.get("key") == key and t.get("effect") == effect for t in taints):
            return False
        taint = {"key": key, "effect": effect, **({"value": value} if value else {})}
        body = {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "spec": {"taints": [*taints, taint]},
        }
        self._call("PATCH", f"/api/v1/nodes/{node}", body=body, content_type=MERGE_PATCH)
        return True

    def set_unschedulable(self, node: str, unschedulable: bool) -> None:
        try:
            body = {"spec": {"unschedulable": unschedulable or None}}
            self._call("PATCH", f"/api/v1/nodes/{node}", body=body, content_type=MERGE_PATCH)
        except ApiError as error:
            if error.status != 404:
                raise

    def evict_pod(self, namespace: str, name: str) -> str:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        try:
            self._call("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body=body)
        except ApiError as error:
            if error.status == 429:
                return BLOCKED
            if error.status == 404:
                return GONE
            raise
        return EVICTED

    def delete_pod(self, namespace: str, name: str) -> None:
        try:
            self._call("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}")
        except ApiError as error:
            if error.status != 404:
                raise

    def delete_node(self, name: str) -> None:
        try:
            self._call("DELETE", f"/api/v1/nodes/{name}")
        except ApiError as error:
            if error.status != 404:
                raise

    def _event_body(
        self, kind: str, namespace: str, name: str, event: PodEvent | NodeEvent, now: str
    ) -> dict[str, Any]:
        scope = f"{kind}|" if kind == "NodeClaim" else ""  # a NodeClaim's events never share a node's name
        digest = hashlib.sha256(f"{scope}{event.reason}|{event.dedupe or event.message}".encode()).hexdigest()[:16]
        involved = {
            "apiVersion": f"{NODECLAIMS[0]}/{NODECLAIMS[1]}" if kind == "NodeClaim" else "v1",
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
        # Node and NodeClaim events live in the default namespace, as the kubelet's and Karpenter's do. The planner
        # repeats its events every tick; a warm process skips the ones it posted lately (the API server would
        # answer 409 for them anyway, since an event's name derives from its reason and dedupe key).
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
