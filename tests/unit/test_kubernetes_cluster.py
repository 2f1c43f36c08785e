"""The Cluster adapter's REST transport against a small HTTP server on 127.0.0.1 (the real API server's TLS
and authentication are covered by the end-to-end tests in the local world)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from nodewright.adapters.apiserver import ApiError, ApiServer
from nodewright.adapters.kubernetes_cluster import CONNECTIONS, MERGE_PATCH, KubernetesCluster
from nodewright.model.conditions import Condition
from nodewright.ports import BLOCKED, EVICTED
from nodewright.tags import CORDONED


class _Server:
    """Answers from `routes` ((method, path) -> (status, body)) and records every request."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], tuple[int, Any]] = {}
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.requests.append(
                    {
                        "method": self.command,
                        "path": url.path,
                        "query": parse_qs(url.query),
                        "headers": dict(self.headers),
                        "body": json.loads(body) if body else None,
                    }
                )
                continue_token = parse_qs(url.query).get("continue", [""])[0]
                status, answer = outer.routes.get(
                    (self.command, url.path + (f"?{continue_token}" if continue_token else "")), (404, {})
                )
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[_Server]:
    stub = _Server()
    yield stub
    stub.httpd.shutdown()


def _cluster(server: _Server, tokens: list[str]) -> KubernetesCluster:
    """A cluster whose token source hands out `tokens` in turn, then keeps the last."""
    issued = list(tokens)

    def token() -> str:
        return issued.pop(0) if len(issued) > 1 else issued[0]

    return KubernetesCluster(ApiServer(server.url + "/", None, token, CONNECTIONS), clock=lambda: 0.0)


def test_lists_follow_continue_tokens_and_fill_in_kind_and_drop_managed_fields(server: _Server) -> None:
    node = {"metadata": {"name": "a", "managedFields": [{"manager": "kubelet"}]}}
    server.routes[("GET", "/api/v1/nodes")] = (200, {"items": [node], "metadata": {"continue": "page2"}})
    server.routes[("GET", "/api/v1/nodes?page2")] = (200, {"items": [{"metadata": {"name": "b"}}], "metadata": {}})
    cluster = _cluster(server, ["t"])

    fleet = cluster.read_fleet()

    assert [n["metadata"]["name"] for n in fleet.nodes] == ["a", "b"]
    assert fleet.nodes[0] == {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "a"}}
    assert fleet.nodepools == [] and fleet.nodeclaims == []  # CRDs not installed: 404 means none
    node_pages = [r for r in server.requests if r["path"] == "/api/v1/nodes"]
    assert [r["query"].get("continue") for r in node_pages] == [None, ["page2"]]
    assert all(r["query"]["limit"] == ["500"] for r in node_pages)


def test_every_request_carries_the_current_token(server: _Server) -> None:
    server.routes[("PATCH", "/api/v1/nodes/a")] = (200, {})
    cluster = _cluster(server, ["first", "second"])

    cluster.label_node("a", {"x": "1"})
    cluster.label_node("a", {"x": "1"})

    assert [r["headers"]["Authorization"] for r in server.requests] == ["Bearer first", "Bearer second"]


def test_patches_are_merge_patches_with_json_bodies(server: _Server) -> None:
    server.routes[("PATCH", "/api/v1/nodes/a")] = (200, {})
    _cluster(server, ["t"]).label_node("a", {"x": "1"})

    (request,) = server.requests
    assert request["headers"]["Content-Type"] == MERGE_PATCH
    assert request["body"] == {"metadata": {"labels": {"x": "1"}}}


def _node(unschedulable: bool, annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": "a", "resourceVersion": "7", "annotations": annotations},
        "spec": {"unschedulable": unschedulable} if unschedulable else {},
    }


def test_a_cordon_marks_the_node_and_only_a_marked_cordon_is_lifted(server: _Server) -> None:
    cluster = _cluster(server, ["t"] * 8)
    server.routes[("PATCH", "/api/v1/nodes/a")] = (200, {})

    server.routes[("GET", "/api/v1/nodes/a")] = (200, _node(False, {}))
    cluster.set_unschedulable("a", True)
    assert server.requests[-1]["body"] == {
        "spec": {"unschedulable": True},
        "metadata": {"annotations": {CORDONED: "true"}, "resourceVersion": "7"},
    }

    server.routes[("GET", "/api/v1/nodes/a")] = (200, _node(True, {CORDONED: "true"}))
    cluster.set_unschedulable("a", False)
    assert server.requests[-1]["body"] == {
        "spec": {"unschedulable": None},
        "metadata": {"annotations": {CORDONED: None}, "resourceVersion": "7"},
    }

    # Cordoned by someone else: neither marked again nor lifted.
    server.routes[("GET", "/api/v1/nodes/a")] = (200, _node(True, {}))
    before = len(server.requests)
    cluster.set_unschedulable("a", True)
    cluster.set_unschedulable("a", False)
    assert [r["method"] for r in server.requests[before:]] == ["GET", "GET"]


def test_eviction_answers_map_to_the_ports_outcomes(server: _Server) -> None:
    path = "/api/v1/namespaces/web/pods/{}/eviction"
    server.routes[("POST", path.format("ok"))] = (201, {})
    server.routes[("POST", path.format("held"))] = (429, {"reason": "TooManyRequests"})
    cluster = _cluster(server, ["t"])

    assert cluster.evict_pod("web", "ok") == EVICTED
    assert cluster.evict_pod("web", "held") == BLOCKED


def test_an_error_status_raises_with_the_method_path_and_body(server: _Server) -> None:
    server.routes[("GET", "/api/v1/nodes")] = (403, {"message": "nodes is forbidden"})
    with pytest.raises(ApiError, match=r"GET /api/v1/nodes: HTTP 403: .*nodes is forbidden") as raised:
        _cluster(server, ["t"]).read_fleet()
    assert raised.value.status == 403


def test_a_provisioning_read_is_served_from_the_watch_cache_and_lists_only_pending_pods(server: _Server) -> None:
    pending = {"metadata": {"name": "web-0", "namespace": "web"}, "spec": {}}
    server.routes[("GET", "/api/v1/pods")] = (200, {"items": [pending], "metadata": {}})
    server.routes[("GET", "/api/v1/nodes")] = (200, {"items": [{"metadata": {"name": "n1"}}], "metadata": {}})
    for path in ("/apis/apps/v1/daemonsets", "/apis/storage.k8s.io/v1/storageclasses"):
        server.routes[("GET", path)] = (200, {"items": [], "metadata": {}})
    cluster = _cluster(server, ["t"])

    view = cluster.read_for_provisioning()

    assert list(view.pending) == ["web/web-0"] and [n["metadata"]["name"] for n in view.nodes] == ["n1"]
    # Every list of the read, from the cache; pods only through the field selector for unbound, live pods.
    assert {tuple(r["query"].get("resourceVersion", [])) for r in server.requests} == {("0",)}
    [pods] = [r for r in server.requests if r["path"] == "/api/v1/pods"]
    assert pods["query"]["fieldSelector"] == ["spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"]
    assert not [r for r in server.requests if r["path"].endswith(("persistentvolumeclaims", "persistentvolumes"))]
    # The consistent read of the pending set: the same selector, not from the cache.
    server.requests.clear()
    assert list(cluster.pending_pods()) == ["web/web-0"]
    assert "resourceVersion" not in server.requests[0]["query"]


def test_the_consistent_pending_read_of_stale_hints_lists_only_their_namespaces(server: _Server) -> None:
    for namespace in ("web", "api"):
        pending = {"metadata": {"name": f"{namespace}-0", "namespace": namespace}, "spec": {}}
        server.routes[("GET", f"/api/v1/namespaces/{namespace}/pods")] = (200, {"items": [pending], "metadata": {}})
    cluster = _cluster(server, ["t"])
    assert sorted(cluster.pending_pods(["web", "api"])) == ["api/api-0", "web/web-0"]
    assert sorted(r["path"] for r in server.requests) == ["/api/v1/namespaces/api/pods", "/api/v1/namespaces/web/pods"]
    assert all("resourceVersion" not in r["query"] for r in server.requests)  # consistent, not the watch cache
    assert {r["query"]["fieldSelector"][0] for r in server.requests} == {
        "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed"
    }


def test_responses_are_asked_for_gzipped_as_client_go_does(server: _Server) -> None:
    server.routes[("GET", "/api/v1/nodes/n1")] = (200, {"metadata": {"name": "n1"}})
    _cluster(server, ["t"]).get_node("n1")
    assert server.requests[0]["headers"].get("Accept-Encoding") == "gzip"


def test_bound_pods_are_read_with_the_label_selector_of_a_topology_term(server: _Server) -> None:
    from nodewright.model.objects import LabelSelector
    from nodewright.model.requirements import Operator, Requirement

    server.routes[("GET", "/api/v1/namespaces/web/pods")] = (200, {"items": [], "metadata": {}})
    selector = LabelSelector(
        (("app", "web"),),
        (
            Requirement("tier", Operator.IN, ("b", "a")),
            Requirement("legacy", Operator.DOES_NOT_EXIST, ()),
            Requirement("track", Operator.EXISTS, ()),
        ),
    )
    _cluster(server, ["t"]).bound_pods("web", selector)
    [request] = server.requests
    assert request["query"]["labelSelector"] == ["app=web,tier in (a,b),!legacy,track"]
    assert request["query"]["fieldSelector"] == ["spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"]
    assert request["query"]["resourceVersion"] == ["0"]


def test_status_writes_merge_conditions_by_type_with_the_version_they_read(server: _Server) -> None:
    from nodewright.model.conditions import TRUE

    path = "/apis/nodewright.io/v1/nodepools/general"
    current = {
        "metadata": {"name": "general", "resourceVersion": "41"},
        "status": {
            "conditions": [
                {"type": "Other", "status": "True", "reason": "Theirs", "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ]
        },
    }
    server.routes[("GET", path)] = (200, current)
    server.routes[("PATCH", path + "/status")] = (200, {})
    _cluster(server, ["t"]).set_status("NodePool", "general", {"nodes": 2}, [Condition("Ready", TRUE, "Ready")])
    patch = server.requests[-1]
    assert patch["body"]["metadata"] == {"resourceVersion": "41"}
    assert patch["body"]["status"]["nodes"] == 2
    assert [c["type"] for c in patch["body"]["status"]["conditions"]] == ["Other", "Ready"]
    with pytest.raises(ValueError, match="NodeClaim"):
        _cluster(server, ["t"]).set_status("NodeClaim", "x", {})


def test_a_taint_change_that_meets_a_newer_node_reads_it_again_and_keeps_the_other_taints(server: _Server) -> None:
    path = "/api/v1/nodes/n1"
    taints = [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}, {"key": "other", "effect": "NoSchedule"}]
    server.routes[("GET", path)] = (
        200,
        {"metadata": {"name": "n1", "resourceVersion": "7"}, "spec": {"taints": taints}},
    )
    server.routes[("PATCH", path)] = (409, {"reason": "Conflict"})
    cluster = _cluster(server, ["t"])
    with pytest.raises(ApiError, match="kept changing"):
        cluster.remove_node_taint("n1", "karpenter.sh/unregistered")
    patches = [r for r in server.requests if r["method"] == "PATCH"]
    gets = [r for r in server.requests if r["method"] == "GET"]
    assert len(patches) == len(gets) == 5  # read again before every attempt
    assert patches[0]["body"] == {
        "metadata": {"resourceVersion": "7"},
        "spec": {"taints": [{"key": "other", "effect": "NoSchedule"}]},
    }
    server.requests.clear()
    server.routes[("PATCH", path)] = (200, {})
    cluster.remove_node_taint("n1", "karpenter.sh/unregistered")
    assert [r["method"] for r in server.requests] == ["GET", "PATCH"]


def test_nodewrights_own_delete_takes_its_finalizer_off_first_and_keeps_the_others(server: _Server) -> None:
    path = "/apis/nodewright.io/v1/nodeclaims/c1"
    finalizers = ["example.com/keep", "nodewright.io/termination"]
    server.routes[("GET", path)] = (200, {"metadata": {"name": "c1", "resourceVersion": "3", "finalizers": finalizers}})
    server.routes[("PATCH", path)] = (200, {})
    server.routes[("DELETE", path)] = (200, {})
    _cluster(server, ["t"]).delete_nodeclaim("c1")
    assert [r["method"] for r in server.requests] == ["GET", "PATCH", "DELETE"]
    assert server.requests[1]["body"] == {"metadata": {"resourceVersion": "3", "finalizers": ["example.com/keep"]}}


def test_a_registered_node_gets_the_finalizer_once_and_a_deleting_one_none(server: _Server) -> None:
    path = "/api/v1/nodes/n1"
    server.routes[("GET", path)] = (200, {"metadata": {"name": "n1", "resourceVersion": "9"}})
    server.routes[("PATCH", path)] = (200, {})
    cluster = _cluster(server, ["t"])
    cluster.add_node_finalizer("n1")
    assert server.requests[-1]["body"] == {
        "metadata": {"resourceVersion": "9", "finalizers": ["nodewright.io/termination"]}
    }
    server.requests.clear()
    deleting = {"name": "n1", "resourceVersion": "9", "deletionTimestamp": "2026-01-01T00:00:00Z"}
    server.routes[("GET", path)] = (200, {"metadata": deleting})
    cluster.add_node_finalizer("n1")
    assert [r["method"] for r in server.requests] == ["GET"]


def test_only_nodewrights_own_objects_are_read_never_karpenters(server: _Server) -> None:
    pool = {"metadata": {"name": "ours"}, "spec": {}}
    karpenter_pool = {"metadata": {"name": "theirs"}, "spec": {}}
    server.routes[("GET", "/apis/nodewright.io/v1/nodepools")] = (200, {"items": [pool]})
    server.routes[("GET", "/apis/karpenter.sh/v1/nodepools")] = (200, {"items": [karpenter_pool]})
    server.routes[("GET", "/apis/karpenter.k8s.aws/v1/ec2nodeclasses")] = (200, {"items": [karpenter_pool]})
    for path in (
        "/api/v1/nodes",
        "/api/v1/pods",
        "/apis/apps/v1/daemonsets",
        "/apis/policy/v1/poddisruptionbudgets",
        "/api/v1/persistentvolumeclaims",
        "/api/v1/persistentvolumes",
        "/apis/storage.k8s.io/v1/storageclasses",
    ):
        server.routes[("GET", path)] = (200, {"items": []})
    cluster = _cluster(server, ["t"])
    documents = cluster.read().documents
    assert [d["metadata"]["name"] for d in documents if d["metadata"]["name"] in ("ours", "theirs")] == ["ours"]
    assert [p["metadata"]["name"] for p in cluster.read_fleet().nodepools] == ["ours"]
    asked = {r["path"] for r in server.requests}
    assert not {p for p in asked if "/apis/karpenter." in p}, asked


def test_nodeclaims_are_read_consistently_not_from_the_watch_cache(server: _Server) -> None:
    claim = {"metadata": {"name": "default-abc"}}
    server.routes[("GET", "/apis/nodewright.io/v1/nodeclaims")] = (200, {"items": [claim], "metadata": {}})
    cluster = _cluster(server, ["t"])
    assert [c["metadata"]["name"] for c in cluster.nodeclaims()] == ["default-abc"]
    [request] = server.requests
    # resourceVersion=0 would let a planner that just took the lock miss the NodeClaims its predecessor created.
    assert "resourceVersion" not in request["query"]


def test_capacity_buffers_are_read_with_what_they_name_from_the_first_version_served(server: _Server) -> None:
    """v1beta1 is not served here (404): the v1alpha1 list is read, then each named PodTemplate or workload is got;
    a missing one is left out, a group nodewright does not read is not asked for."""

    def buffer(name: str, **spec: Any) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "shop"}, "spec": spec}

    items = [
        buffer("a", podTemplateRef={"name": "web"}, replicas=2),
        buffer("b", scalableRef={"apiGroup": "apps", "kind": "Deployment", "name": "api"}, percentage=10),
        buffer("c", scalableRef={"kind": "StatefulSet", "name": "gone"}, replicas=1),
        buffer("d", scalableRef={"apiGroup": "batch", "kind": "Job", "name": "j"}, replicas=1),
    ]
    server.routes[("GET", "/apis/autoscaling.x-k8s.io/v1alpha1/capacitybuffers")] = (200, {"items": items})
    server.routes[("GET", "/api/v1/namespaces/shop/podtemplates/web")] = (200, {"metadata": {"name": "web"}})
    server.routes[("GET", "/apis/apps/v1/namespaces/shop/deployments/api")] = (200, {"metadata": {"name": "api"}})

    found = _cluster(server, ["t"]).capacity_buffers()

    assert [(d["kind"], d["apiVersion"], d["metadata"]["name"]) for d in found] == [
        ("CapacityBuffer", "autoscaling.x-k8s.io/v1alpha1", "a"),
        ("CapacityBuffer", "autoscaling.x-k8s.io/v1alpha1", "b"),
        ("CapacityBuffer", "autoscaling.x-k8s.io/v1alpha1", "c"),
        ("CapacityBuffer", "autoscaling.x-k8s.io/v1alpha1", "d"),
        ("PodTemplate", "v1", "web"),
        ("Deployment", "apps/v1", "api"),
    ]
    asked = {r["path"] for r in server.requests}
    assert "/apis/apps/v1/namespaces/shop/statefulsets/gone" in asked
    assert not any("jobs" in path for path in asked)


def test_a_capacity_buffers_status_is_merge_patched_under_its_own_version(server: _Server) -> None:
    path = "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/shop/capacitybuffers/a"
    server.routes[("GET", path)] = (200, {"metadata": {"name": "a", "resourceVersion": "3"}, "status": {}})
    server.routes[("PATCH", path + "/status")] = (200, {})
    buffer = {"apiVersion": "autoscaling.x-k8s.io/v1beta1", "metadata": {"name": "a", "namespace": "shop"}}

    _cluster(server, ["t"] * 3).set_capacity_buffer_status(
        buffer, {"replicas": 2}, [Condition("ReadyForProvisioning", "True", "Resolved", "ok")]
    )

    [patch] = [r for r in server.requests if r["method"] == "PATCH"]
    assert patch["path"] == path + "/status"
    assert patch["body"]["status"]["replicas"] == 2
    assert patch["body"]["status"]["conditions"][0]["reason"] == "Resolved"
    assert patch["body"]["metadata"] == {"resourceVersion": "3"}
