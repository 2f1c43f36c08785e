"""The forwarder's Kubernetes I/O with the official client: listing and watching pods and nodes, the Lease, Events.

Objects stay raw JSON dicts (the API's camelCase), the form `projection` reads: the client's model
deserialization is skipped (`_preload_content=False`), which is also most of a watch's CPU cost.

Only unbound, Pending pods are listed and watched (field selector `spec.nodeName=,status.phase=Pending`),
so a busy cluster's running pods never reach the forwarder. A pod that gets bound leaves the selection and
arrives as a DELETED event, which is exactly when the forwarder should forget it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import socket
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from nodewright.forwarder.registration import NODE_LABEL_SELECTOR

# The client's typed signatures describe its model objects; here bodies and responses are raw JSON, so the
# API handles are used untyped.

POD_SELECTOR = "spec.nodeName=,status.phase=Pending"
BOUND_POD_SELECTOR = "spec.nodeName!="
NODECLAIMS = ("nodewright.io", "v1", "nodeclaims")
RELIST_MIN_SECONDS = 5.0  # a node not found is looked up again at most this often (nodes nodewright does not own)
LIST_PAGE = 500
WATCH_SECONDS = 300  # the server ends a watch after this; it is resumed from the last resourceVersion


class Gone(Exception):
    """The resourceVersion is too old (HTTP 410): list again."""


def api_client() -> client.ApiClient:
    """In a pod: the ServiceAccount's token; elsewhere: $KUBECONFIG (as the local world exports it)."""
    try:
        config.load_incluster_config()  # type: ignore[no-untyped-call]
    except config.ConfigException:
        config.load_kube_config()  # type: ignore[no-untyped-call]
    return client.ApiClient()


def _json(response: Any) -> Any:
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


@dataclass(slots=True)
class PodSource:
    """List, then watch pods from the list's resourceVersion."""

    api: client.ApiClient
    _response: Any = None

    def _list_call(self, **kwargs: Any) -> Any:
        core: Any = client.CoreV1Api(self.api)
        return core.list_pod_for_all_namespaces(field_selector=POD_SELECTOR, **kwargs)

    def list(self) -> tuple[list[dict[str, Any]], str]:
        """Every selected object (paged) and the resourceVersion to watch from."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": LIST_PAGE}
            if token:
                kwargs["_continue"] = token
            try:
                page = _json(self._list_call(_preload_content=False, **kwargs))
            except ApiException as exc:
                if exc.status == 410:  # the continue token expired mid-list: start over
                    items, token = [], None
                    continue
                raise
            items.extend(page.get("items") or [])
            metadata = page.get("metadata") or {}
            token = metadata.get("continue")
            if not token:
                return items, str(metadata.get("resourceVersion") or "")

    def watch(self, resource_version: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(type, object) events after `resource_version`; BOOKMARKs are yielded too (they carry a version).

        Ends normally when the server closes the watch; raises `Gone` on 410 and ApiException/urllib3
        errors on other failures.
        """
        try:
            response = self._list_call(
                watch=True,
                allow_watch_bookmarks=True,
                resource_version=resource_version,
                timeout_seconds=WATCH_SECONDS,
                _preload_content=False,
                _request_timeout=(10, WATCH_SECONDS + 30),
            )
        except ApiException as exc:
            if exc.status == 410:
                raise Gone(str(exc.reason)) from None
            raise
        self._response = response
        try:
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if not line or not line.strip():
                    continue
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise Gone(str(obj.get("message", "")))
                    raise ApiException(status=obj.get("code"), reason=f"{obj.get('reason')}: {obj.get('message')}")
                yield str(kind), obj
        finally:
            self._response = None
            response.close()
            response.release_conn()

    def close(self) -> None:
        """Interrupt a running watch from another thread (the watch generator then ends or raises).

        The socket is shut down rather than the response closed: closing waits for the reading thread's
        buffer lock, so it would block until the next event arrives; a shutdown wakes the reader at once.
        """
        response = self._response
        sock = getattr(getattr(response, "connection", None), "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed: the watch is ending anyway
                sock.shutdown(socket.SHUT_RDWR)


@dataclass(slots=True)
class NodeSource(PodSource):
    """List, then watch the nodes a Karpenter-style provisioner launched (label `karpenter.sh/nodepool`).

    The forwarder watches them to tell the provisioner when one has joined (see `forwarder.registration`);
    reading nodes is all it needs, so its ClusterRole grants only list and watch on them.
    """

    def _list_call(self, **kwargs: Any) -> Any:
        core: Any = client.CoreV1Api(self.api)
        return core.list_node(label_selector=NODE_LABEL_SELECTOR, **kwargs)


@dataclass(slots=True)
class LeaseStore:
    """Read and write one coordination.k8s.io/v1 Lease as raw JSON."""

    api: client.ApiClient
    namespace: str
    name: str

    def get(self) -> dict[str, Any] | None:
        coordination: Any = client.CoordinationV1Api(self.api)
        try:
            result: dict[str, Any] = _json(
                coordination.read_namespaced_lease(self.name, self.namespace, _preload_content=False)
            )
            return result
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def create(self, spec: Mapping[str, Any]) -> bool:
        """False when someone else created it first (HTTP 409)."""
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": dict(spec),
        }
        coordination: Any = client.CoordinationV1Api(self.api)
        try:
            _json(coordination.create_namespaced_lease(self.namespace, body, _preload_content=False))
            return True
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise

    def replace(self, lease: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
        """Write `spec` over the Lease as read; False when it changed since (HTTP 409, optimistic concurrency)."""
        metadata = dict(lease.get("metadata") or {})
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "spec": dict(spec),
        }
        coordination: Any = client.CoordinationV1Api(self.api)
        try:
            _json(coordination.replace_namespaced_lease(self.name, self.namespace, body, _preload_content=False))
            return True
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise


@dataclass(slots=True)
class BoundPodSource(PodSource):
    """List, then watch the pods bound to a node (for their pod events, see `forwarder.podevents`)."""

    def _list_call(self, **kwargs: Any) -> Any:
        core: Any = client.CoreV1Api(self.api)
        return core.list_pod_for_all_namespaces(field_selector=BOUND_POD_SELECTOR, **kwargs)


@dataclass
class NodeClaimIndex:
    """The NodeClaim of each node, by `status.nodeName`, from a list kept for `refresh_seconds` (listed again when a
    node is not in it: a NodeClaim registers after its pods are nominated, so a new node shows up soon after its
    first pods). Read-only: the provisioner writes `status.lastPodEventTime` (see `forwarder.podevents`)."""

    api: client.ApiClient
    refresh_seconds: float = 60.0
    _by_node: dict[str, str] = field(default_factory=dict)
    _listed_at: float = float("-inf")

    def nodeclaim_of(self, node: str, now: float) -> str | None:
        """The name of the node's NodeClaim; None for a node nodewright did not launch (or not yet known)."""
        stale = now - self._listed_at >= self.refresh_seconds
        if stale or (node not in self._by_node and now - self._listed_at >= RELIST_MIN_SECONDS):
            self._relist(now)
        return self._by_node.get(node)

    def _relist(self, now: float) -> None:
        custom: Any = client.CustomObjectsApi(self.api)
        listed = _json(custom.list_cluster_custom_object(*NODECLAIMS, _preload_content=False))
        self._by_node = {
            str((c.get("status") or {}).get("nodeName")): str((c.get("metadata") or {}).get("name"))
            for c in listed.get("items") or []
            if (c.get("status") or {}).get("nodeName")
        }
        self._listed_at = now


def record_event(
    api: client.ApiClient,
    namespace: str,
    involved: Mapping[str, str],
    reason: str,
    message: str,
    component: str = "nodewright-forwarder",
) -> None:
    """Create a core/v1 Event about `involved` (apiVersion, kind, name, namespace, uid if known)."""
    now = datetime.datetime.now(datetime.UTC)
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{involved.get('name', 'forwarder')}.{uuid.uuid4().hex[:12]}", "namespace": namespace},
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message,
        "type": "Normal",
        "source": {"component": component},
        "firstTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "count": 1,
    }
    core: Any = client.CoreV1Api(api)
    _json(core.create_namespaced_event(namespace, body, _preload_content=False))
