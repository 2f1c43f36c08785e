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

from nodewright.adapters.kubernetes_cluster import MERGE_PATCH, ApiError, ApiServer, KubernetesCluster
from nodewright.model.conditions import Condition
from nodewright.ports import BLOCKED, EVICTED


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

    return KubernetesCluster(ApiServer(server.url + "/", None, token), clock=lambda: 0.0)


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
    server.routes[("DELETE", "/api/v1/nodes/a")] = (200, {})
    cluster = _cluster(server, ["first", "second"])

    cluster.delete_node("a")
    cluster.delete_node("a")

    assert [r["headers"]["Authorization"] for r in server.requests] == ["Bearer first", "Bearer second"]


def test_patches_are_merge_patches_with_json_bodies(server: _Server) -> None:
    server.routes[("PATCH", "/api/v1/nodes/a")] = (200, {})
    _cluster(server, ["t"]).set_unschedulable("a", True)

    (request,) = server.requests
    assert request["headers"]["Content-Type"] == MERGE_PATCH
    assert request["body"] == {"spec": {"unschedulable": True}}


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


def test_a_nodeclass_status_merges_conditions_and_sets_fields_on_the_status_subresource(server: _Server) -> None:
    path = "/apis/nodewright.io/v1/ec2nodeclasses/default"
    kept = {"type": "ValidationSucceeded", "status": "True", "reason": "x", "message": "", "lastTransitionTime": "t"}
    server.routes[("GET", path)] = (200, {"metadata": {"resourceVersion": "7"}, "status": {"conditions": [kept]}})
    server.routes[("PATCH", path + "/status")] = (200, {})
    _cluster(server, ["t"]).set_nodeclass_status(
        "default", [Condition("Ready", "False", "UnhealthyDependents", "role admin")], {"instanceProfile": "p"}
    )

    patch = server.requests[-1]
    assert (patch["method"], patch["path"]) == ("PATCH", path + "/status")
    assert patch["body"]["metadata"] == {"resourceVersion": "7"}
    assert patch["body"]["status"]["instanceProfile"] == "p"
    assert [(c["type"], c["status"], c["message"]) for c in patch["body"]["status"]["conditions"]] == [
        ("Ready", "False", "role admin"),
        ("ValidationSucceeded", "True", ""),
    ]
