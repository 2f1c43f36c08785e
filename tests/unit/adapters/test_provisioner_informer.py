"""The provisioner's reads through informers (`KubernetesCluster.read_for_provisioning` and `nodeclaims` with
informers) against the planner informer tests' fake API server: Nodes followed from the last batch, NodeClaims
followed too but never older than a consistent read taken just before (a NodeClaim another holder of the planner
lock created must be seen, or its pods could be launched for twice)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from nodewright.adapters import kubernetes_cluster
from nodewright.adapters.informer import Informer, Informers
from nodewright.adapters.kubernetes_cluster import KubernetesCluster
from nodewright.model.resource_version import reached
from tests.unit.adapters.test_informer import NODEPOOLS, NODES, FakeApiServer, node

NODECLAIMS = "/apis/nodewright.io/v1/nodeclaims"


def claim(name: str, pods: str = "") -> dict[str, Any]:
    annotations = {"nodewright.io/pods": json.dumps([pods])} if pods else {}
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"}},
    }


class Server(FakeApiServer):
    """The fake API server, recording each request's query, with a watch cache that may lag: `cache_at` (when
    set) is the newest resourceVersion its watches serve, bookmarks included."""

    def __init__(self) -> None:
        super().__init__()
        self.cache_at: int | None = None
        self.queries: list[tuple[str, dict[str, str]]] = []

    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        self.queries.append((path, dict(query)))
        return super().request(method, path, query, body, headers)

    def _watch(self, path: str, since: int, selector: str) -> tuple[int, bytes]:
        if self.cache_at is None:
            return super()._watch(path, since, selector)
        events, version = self.events, self.version
        self.events, self.version = [e for e in events if e[0] <= self.cache_at], self.cache_at
        try:
            return super()._watch(path, since, selector)
        finally:
            self.events, self.version = events, version

    def full_lists(self, path: str) -> list[dict[str, str]]:
        """The queries of the full lists of `path` (not watches, not the one-object reads of a resourceVersion)."""
        return [q for p, q in self.queries if p == path and q.get("watch") != "1" and q.get("limit") != "1"]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Server:
    monkeypatch.setattr(kubernetes_cluster, "WATCH_FROM_OBJECTS", 0)  # the fake's lists are small
    fake = Server()
    fake.put(NODES, node("n1"))
    fake.put(NODES, node("n2"))
    fake.put(NODECLAIMS, claim("default-a"))
    fake.put(NODEPOOLS, {"apiVersion": "nodewright.io/v1", "kind": "NodePool", "metadata": {"name": "default"}})
    return fake


def _names(documents: Sequence[Mapping[str, Any]]) -> list[str]:
    return [str(d["metadata"]["name"]) for d in documents]


def _cluster(server: Server, informers: Informers | None = None) -> KubernetesCluster:
    return KubernetesCluster(server, informers=informers or Informers())  # type: ignore[arg-type]


def test_a_nodeclaim_another_holder_created_between_two_batches_is_seen_through_the_watch(server: Server) -> None:
    cluster = _cluster(server)
    assert _names(cluster.nodeclaims()) == ["default-a"]
    assert [q.get("resourceVersion") for q in server.full_lists(NODECLAIMS)] == [None]  # consistent, not rv=0
    server.put(NODECLAIMS, claim("default-b", pods="web/p"))  # the last holder of the planner lock launched it
    server.bookmark = True
    assert _names(cluster.nodeclaims()) == ["default-a", "default-b"]
    assert len(server.full_lists(NODECLAIMS)) == 1 and server.watches[NODECLAIMS] == 1  # read from the watch


def test_a_watch_cache_behind_the_consistent_read_falls_back_to_a_consistent_list(server: Server) -> None:
    cluster = _cluster(server)
    cluster.nodeclaims()
    server.bookmark = True
    server.cache_at = server.version  # the watch cache has not seen what follows yet
    server.put(NODECLAIMS, claim("default-b", pods="web/p"))
    server.put(NODES, node("n3"))  # the resourceVersion moves on elsewhere too
    assert _names(cluster.nodeclaims()) == ["default-a", "default-b"]  # never the stale store
    assert server.watches[NODECLAIMS] == 1
    consistent = server.full_lists(NODECLAIMS)
    assert len(consistent) == 2 and all("resourceVersion" not in q for q in consistent)


def test_a_watch_that_proves_nothing_is_not_trusted_for_nodeclaims(server: Server) -> None:
    # No bookmark and no NodeClaim event at or past the consistent read's resourceVersion: nothing proves the
    # store current, so it is listed again, even though nothing changed.
    cluster = _cluster(server)
    cluster.nodeclaims()
    server.put(NODES, node("n3"))
    assert _names(cluster.nodeclaims()) == ["default-a"]
    assert len(server.full_lists(NODECLAIMS)) == 2


def test_a_bookmark_at_the_consistent_read_proves_an_unchanged_list(server: Server) -> None:
    cluster = _cluster(server)
    cluster.nodeclaims()
    server.put(NODES, node("n3"))
    server.bookmark = True
    assert _names(cluster.nodeclaims()) == ["default-a"]
    assert len(server.full_lists(NODECLAIMS)) == 1
    watch = [q for p, q in server.queries if p == NODECLAIMS and q.get("watch") == "1"]
    assert watch[0]["timeoutSeconds"] == "3" and watch[0]["allowWatchBookmarks"] == "true"


def test_deleted_and_modified_nodeclaims_are_followed(server: Server) -> None:
    cluster = _cluster(server)
    cluster.nodeclaims()
    server.bookmark = True
    server.put(NODECLAIMS, claim("default-b"))
    server.put(NODECLAIMS, claim("default-a", pods="web/q"))
    server.delete(NODECLAIMS, "default-b")
    got = cluster.nodeclaims()
    assert _names(got) == ["default-a"] and "web/q" in got[0]["metadata"]["annotations"]["nodewright.io/pods"]
    assert len(server.full_lists(NODECLAIMS)) == 1


def test_the_provisioning_read_follows_nodes_and_leaves_nodeclaims_to_the_consistent_read(server: Server) -> None:
    cluster = _cluster(server)
    first = cluster.read_for_provisioning()
    assert _names(first.nodes) == ["n1", "n2"] and not first.nodeclaims
    assert server.full_lists(NODECLAIMS) == []  # not listed from the watch cache beside the consistent read
    server.put(NODES, node("n3"))
    server.delete(NODES, "n1")
    server.put(NODES, node("n2", label="b"))
    second = cluster.read_for_provisioning()
    assert _names(second.nodes) == ["n2", "n3"] and second.nodes[0]["metadata"]["labels"] == {"v": "b"}
    assert len(server.full_lists(NODES)) == 1 and server.watches[NODES] == 1
    assert second.nodes == KubernetesCluster(server).read_for_provisioning().nodes  # type: ignore[arg-type]


def test_without_informers_the_provisioning_reads_are_full_lists(server: Server) -> None:
    cluster = KubernetesCluster(server)  # type: ignore[arg-type]
    for _ in range(2):
        assert _names(cluster.read_for_provisioning().nodeclaims) == ["default-a"]
        cluster.nodeclaims()
    assert server.watches == {} and len(server.full_lists(NODES)) == 2


def test_small_lists_are_listed_again_instead_of_watched(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kubernetes_cluster, "WATCH_FROM_OBJECTS", 3)
    cluster = _cluster(server)
    cluster.read_for_provisioning()
    cluster.read_for_provisioning()
    assert NODES not in server.watches and len(server.full_lists(NODES)) == 2  # two nodes: listed again
    server.put(NODES, node("n3"))
    cluster.read_for_provisioning()  # still two held: listed again, and three are held
    server.put(NODES, node("n4"))
    assert _names(cluster.read_for_provisioning().nodes) == ["n1", "n2", "n3", "n4"]
    assert server.watches[NODES] == 1 and len(server.full_lists(NODES)) == 3  # three held: watched


def test_a_watch_is_read_only_until_it_reaches_the_target() -> None:
    informer = Informer(lambda d: d)
    informer.sync(lambda: ([{"metadata": {"name": "a", "resourceVersion": "5"}}], "5"), lambda rv: [])
    read: list[str] = []
    closed: list[bool] = []

    def lines(since: str) -> Iterator[bytes]:
        try:
            for version in (6, 7, 8, 9):
                read.append(str(version))
                event = {"type": "ADDED", "object": {"metadata": {"name": f"o{version}", "resourceVersion": version}}}
                yield json.dumps(event).encode()
            raise AssertionError("read past the target")  # a real watch would wait here for its timeout
        finally:
            closed.append(True)

    got = informer.sync(lambda: ([], "0"), lines, target="7", required=True)
    assert _names(got) == ["a", "o6", "o7"] and read == ["6", "7"] and closed == [True]
    assert informer.resource_version == "7" and informer.lists == 1


def test_resource_versions_compare_as_numbers_and_anything_else_proves_nothing() -> None:
    assert reached("100", "99") and reached("7", "7") and not reached("99", "100")
    assert not reached("", "5") and not reached("5", "") and not reached("a1", "1")


def test_the_transport_streams_a_watch_line_by_line_across_chunks_and_raises_an_error_status() -> None:
    import gzip
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from nodewright.adapters.apiserver import ApiError, ApiServer

    events = [json.dumps({"type": "ADDED", "object": {"metadata": {"name": f"o{i}"}}}).encode() for i in range(3)]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            if "fail" in self.path:
                body = b'{"kind":"Status","code":410}'
                self.send_response(410)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Content-Encoding", "gzip")
            self.end_headers()
            raw = gzip.compress(b"\n".join(events) + b"\n")
            for start in range(0, len(raw), 7):  # lines split across many chunks
                piece = raw[start : start + 7]
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        api = ApiServer(f"http://127.0.0.1:{server.server_address[1]}", None, lambda: "t", 1)
        assert list(api.stream("/api/v1/nodes", [("watch", "1")], {"Accept-Encoding": "gzip"})) == events
        early = api.stream("/api/v1/nodes", [("watch", "1")], {})
        assert next(early) == events[0]
        early.close()  # a reader that stopped early: the connection is dropped
        with pytest.raises(ApiError, match="410"):
            list(api.stream("/api/v1/nodes/fail", [], {}))
    finally:
        server.shutdown()


def test_a_cold_read_lists_at_once_and_asks_where_a_consistent_read_is_only_to_follow(server: Server) -> None:
    # The one-object consistent read says how far a watch must go; a store that holds nothing has no watch to make,
    # and that read (0.2-0.45 s in the local world at 3,000 nodes) only delayed the Node list.
    cluster = _cluster(server)
    cluster.read_for_provisioning()
    cluster.nodeclaims()
    versions = [p for p, q in server.queries if q.get("limit") == "1"]
    assert versions == [] and len(server.full_lists(NODES)) == 1 and len(server.full_lists(NODECLAIMS)) == 1
    server.put(NODES, node("n3"))
    server.put(NODECLAIMS, claim("default-b"))
    assert _names(cluster.read_for_provisioning().nodes) == ["n1", "n2", "n3"]
    assert _names(cluster.nodeclaims()) == ["default-a", "default-b"]
    versions = [p for p, q in server.queries if q.get("limit") == "1"]
    assert sorted(versions) == [NODES, NODECLAIMS] and server.watches == {NODES: 1, NODECLAIMS: 1}
    assert len(server.full_lists(NODES)) == 1 and len(server.full_lists(NODECLAIMS)) == 1
