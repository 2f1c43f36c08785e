"""The Cluster port on the Kubernetes API, reached with an EKS token (the same path in AWS and locally).

`from_eks()` reads the API server endpoint and CA from eks:DescribeCluster and authenticates every request
with a bearer token from `adapters.eks_token.EksTokenSource` (minted every ~14 minutes through the client's
refresh hook). No kubeconfig is involved, so a Lambda needs nothing but its IAM role and the cluster's
access entry.

Lists are read as raw JSON (`_preload_content=False`): that is the camelCase document the API server sent,
exactly what `ApiClient.sanitize_for_serialization` would rebuild from the typed models, without building
thousands of model objects first. List items carry no kind/apiVersion, so they are added. managedFields
are dropped (large and never read).

Custom objects: NodePools from `nodewright.io/v1` and `karpenter.sh/v1`, EC2NodeClasses from
`nodewright.io/v1` and `karpenter.k8s.aws/v1`, NodeClaims from `nodewright.io/v1`. A group whose CRD is
not installed (HTTP 404) is simply empty.
"""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

from nodewright.ports import ClusterView, PodEvent

NODECLAIMS = ("nodewright.io", "v1", "nodeclaims")
NODEPOOLS = (("nodewright.io", "v1", "nodepools"), ("karpenter.sh", "v1", "nodepools"))
NODECLASSES = (("nodewright.io", "v1", "ec2nodeclasses"), ("karpenter.k8s.aws", "v1", "ec2nodeclasses"))
MERGE_PATCH = "application/merge-patch+json"
COMPONENT = "nodewright"
_EVENT_WORKERS = 8


def _status(error: Exception) -> int:
    return int(getattr(error, "status", 0) or 0)


def _strip(doc: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    doc.setdefault("kind", kind)
    doc.setdefault("apiVersion", api_version)
    (doc.get("metadata") or {}).pop("managedFields", None)
    return doc


class KubernetesCluster:
    """Cluster port over a `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: Any, clock: Callable[[], float] | None = None) -> None:
        from kubernetes import client

        self.api_client = api_client
        # Typed as Any: the generated signatures want model objects where the API also takes plain dicts.
        self.core: Any = client.CoreV1Api(api_client)
        self.apps: Any = client.AppsV1Api(api_client)
        self.storage: Any = client.StorageV1Api(api_client)
        self.custom: Any = client.CustomObjectsApi(api_client)
        self._clock = clock or (lambda: datetime.now(UTC).timestamp())

    @classmethod
    def from_eks(cls, cluster_name: str, eks: Any, token_source: Any) -> KubernetesCluster:
        """Endpoint and CA from eks:DescribeCluster; bearer tokens from `token_source.token()`."""
        from kubernetes import client

        cluster = eks.describe_cluster(name=cluster_name)["cluster"]
        ca_pem = base64.b64decode(cluster["certificateAuthority"]["data"])
        # The client wants a file path; the name is the CA's hash, so warm containers reuse one file.
        path = f"{tempfile.gettempdir()}/nodewright-ca-{hashlib.sha256(ca_pem).hexdigest()[:16]}.pem"
        with open(path, "wb") as handle:
            handle.write(ca_pem)
        configuration: Any = client.Configuration(host=str(cluster["endpoint"]))
        configuration.ssl_ca_cert = path
        configuration.api_key_prefix = {"authorization": "Bearer"}
        configuration.api_key = {"authorization": token_source.token()}

        def refresh(config: Any) -> None:
            config.api_key["authorization"] = token_source.token()

        configuration.refresh_api_key_hook = refresh
        return cls(client.ApiClient(configuration))

    # ------------------------------------------------------------------------------------- read

    def _raw(self, call: Callable[..., Any], **kwargs: Any) -> dict[str, Any]:
        response = call(_preload_content=False, **kwargs)
        data = response.data if hasattr(response, "data") else response.read()
        parsed: dict[str, Any] = json.loads(data)
        return parsed

    def _custom(self, group: str, version: str, plural: str) -> list[dict[str, Any]]:
        try:
            items = self._raw(self.custom.list_cluster_custom_object, group=group, version=version, plural=plural)
        except Exception as error:
            if _status(error) == 404:
                return []
            raise
        return [_strip(d, "", f"{group}/{version}") for d in items.get("items", [])]

    def read(self) -> ClusterView:
        documents: list[dict[str, Any]] = []
        for group, version, plural in (*NODEPOOLS, *NODECLASSES, NODECLAIMS):
            documents.extend(self._custom(group, version, plural))
        for node in self._raw(self.core.list_node).get("items", []):
            documents.append(_strip(node, "Node", "v1"))
        unbound: dict[str, dict[str, Any]] = {}
        pods = self._raw(
            self.core.list_pod_for_all_namespaces, field_selector="status.phase!=Succeeded,status.phase!=Failed"
        )
        for pod in pods.get("items", []):
            metadata = pod.get("metadata") or {}
            if not (pod.get("spec") or {}).get("nodeName"):
                unbound[f"{metadata.get('namespace', 'default')}/{metadata.get('name', '')}"] = _strip(pod, "Pod", "v1")
                continue
            documents.append(_strip(pod, "Pod", "v1"))
        for ds in self._raw(self.apps.list_daemon_set_for_all_namespaces).get("items", []):
            documents.append(_strip(ds, "DaemonSet", "apps/v1"))
        for pvc in self._raw(self.core.list_persistent_volume_claim_for_all_namespaces).get("items", []):
            documents.append(_strip(pvc, "PersistentVolumeClaim", "v1"))
        for pv in self._raw(self.core.list_persistent_volume).get("items", []):
            documents.append(_strip(pv, "PersistentVolume", "v1"))
        for sc in self._raw(self.storage.list_storage_class).get("items", []):
            documents.append(_strip(sc, "StorageClass", "storage.k8s.io/v1"))
        return ClusterView(documents, unbound)

    # ---------------------------------------------------------------------------------- NodeClaims

    def create_nodeclaim(self, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
        group, version, plural = NODECLAIMS
        try:
            self.custom.create_cluster_custom_object(group, version, plural, dict(document))
        except Exception as error:
            if _status(error) != 409:
                raise
            name = str((document.get("metadata") or {}).get("name", ""))
            existing: Mapping[str, Any] = self.custom.get_cluster_custom_object(group, version, plural, name)
            return existing
        return None

    def update_nodeclaim(
        self, name: str, labels: Mapping[str, str], annotations: Mapping[str, str], status: Mapping[str, Any]
    ) -> None:
        group, version, plural = NODECLAIMS
        if labels or annotations:
            metadata: dict[str, Any] = {}
            if labels:
                metadata["labels"] = dict(labels)
            if annotations:
                metadata["annotations"] = dict(annotations)
            self.custom.patch_cluster_custom_object(
                group, version, plural, name, {"metadata": metadata}, _content_type=MERGE_PATCH
            )
        if status:
            try:
                self.custom.patch_cluster_custom_object_status(
                    group, version, plural, name, {"status": dict(status)}, _content_type=MERGE_PATCH
                )
            except Exception as error:
                # A CRD without the status subresource keeps status in the main resource.
                if _status(error) != 404:
                    raise
                self.custom.patch_cluster_custom_object(
                    group, version, plural, name, {"status": dict(status)}, _content_type=MERGE_PATCH
                )

    def delete_nodeclaim(self, name: str) -> None:
        group, version, plural = NODECLAIMS
        try:
            self.custom.delete_cluster_custom_object(group, version, plural, name)
        except Exception as error:
            if _status(error) != 404:
                raise

    # -------------------------------------------------------------------------------- nodes, events

    def remove_node_taint(self, node: str, taint_key: str) -> None:
        current = self._raw(self.core.read_node, name=node)
        taints = (current.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != taint_key]
        if len(kept) == len(taints):
            return
        # A merge patch replaces the whole list; resourceVersion makes it fail rather than drop a taint
        # someone else added in between.
        body = {"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]}, "spec": {"taints": kept}}
        self.core.patch_node(node, body, _content_type=MERGE_PATCH)

    def _event(self, event: PodEvent, now: str) -> None:
        namespace, _, name = event.pod.partition("/")
        digest = hashlib.sha256(f"{event.reason}|{event.dedupe or event.message}".encode()).hexdigest()[:16]
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{name[:200]}.{digest}", "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name},
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
        try:
            self.core.create_namespaced_event(namespace, body)
        except Exception as error:
            # 409: the same event was recorded by an earlier run of this batch; 404: the namespace is gone.
            if _status(error) not in (404, 409):
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
