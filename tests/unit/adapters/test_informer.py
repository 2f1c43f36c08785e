"""The planner's incremental read (`adapters.informer` under `KubernetesCluster.read`) against a small fake API
server that keeps a resourceVersion, an event log per resource, serves lists and watches (field selectors on pod
phase included: a pod leaving the selector is a DELETED event), and can be told to answer 410 or fail."""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nodewright.adapters.informer import Informer, Informers, informers_for, object_key, reset
from nodewright.adapters.kubernetes_cluster import CLUSTER_LISTS, KubernetesCluster
from nodewright.ports import ClusterView
from nodewright.settings import SettingsError, incremental_reads

PODS = "/api/v1/pods"
NODES = "/api/v1/nodes"
CUSTOM = "/apis/nodewright.io/"
NODEPOOLS = "/apis/nodewright.io/v1/nodepools"
PATHS = {"Pod": PODS, "Node": NODES}


def _matches(document: Mapping[str, Any], selector: str) -> bool:
    phase = str((document.get("status") or {}).get("phase") or "")
    return all(not term.startswith("status.phase!=") or phase != term.split("!=")[1] for term in selector.split(","))


class FakeApiServer:
    """One API server: objects by list path and key, a global resourceVersion, and every change as a watch event.
    `gone_before`: watches from an older resourceVersion are answered 410 (`gone_as` "status" or "event");
    `fail_watch`: watches raise (a broken connection). Counts lists and watches per path."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}
        self.events: list[tuple[int, str, str, dict[str, Any] | None, dict[str, Any]]] = []  # rv, path, type, old, new
        self.version = 100
        self.gone_before = 0
        self.gone_as = "status"
        self.fail_watch = False
        self.bookmark = False
        self.lists: dict[str, int] = {}
        self.watches: dict[str, int] = {}
        self.bytes = 0

    # ------------------------------------------------------------------ changes
    def put(self, path: str, document: dict[str, Any]) -> None:
        self.version += 1
        document = copy.deepcopy(document)
        document["metadata"]["resourceVersion"] = str(self.version)
        key = object_key(document)
        old = self.objects.setdefault(path, {}).get(key)
        self.objects[path][key] = document
        self.events.append((self.version, path, "MODIFIED" if old else "ADDED", old, document))

    def delete(self, path: str, key: str) -> None:
        old = self.objects.get(path, {}).pop(key, None)
        if old is None:
            return
        self.version += 1
        gone = copy.deepcopy(old)
        gone["metadata"]["resourceVersion"] = str(self.version)
        self.events.append((self.version, path, "DELETED", old, gone))

    # ---------------------------------------------------------------- transport
    def request(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes]:
        assert method == "GET", (method, path)
        params = dict(query)
        selector = params.get("fieldSelector", "")
        if params.get("watch") == "1":
            return self._watch(path, int(params["resourceVersion"]), selector)
        self.lists[path] = self.lists.get(path, 0) + 1
        if path.startswith("/apis/") and path not in self.objects and "nodewright" in path:
            return 404, b'{"kind":"Status","code":404}'
        items = [d for _, d in sorted(self.objects.get(path, {}).items()) if _matches(d, selector)]
        # A built-in list's items come without kind and apiVersion, as the API server sends them.
        listed = items if path.startswith(CUSTOM) else [_listed(d) for d in items]
        body_ = {"metadata": {"resourceVersion": str(self.version)}, "items": listed}
        return self._answer(200, json.dumps(body_).encode())

    def _watch(self, path: str, since: int, selector: str) -> tuple[int, bytes]:
        self.watches[path] = self.watches.get(path, 0) + 1
        if self.fail_watch:
            raise ConnectionError("connection reset by peer")
        if since < self.gone_before:
            status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410}
            if self.gone_as == "status":
                return self._answer(410, json.dumps(status).encode())
            return self._answer(200, json.dumps({"type": "ERROR", "object": status}).encode() + b"\n")
        lines = []
        for version, event_path, kind, old, new in self.events:
            if event_path != path or version <= since:
                continue
            was = old is not None and kind != "ADDED" and _matches(old, selector)
            now = kind != "DELETED" and _matches(new, selector)
            if was or now:
                seen = kind if was and now else ("ADDED" if now else "DELETED")
                lines.append(json.dumps({"type": seen, "object": new}))
        if self.bookmark:
            mark = {"kind": path.rsplit("/", 1)[1], "metadata": {"resourceVersion": str(self.version)}}
            lines.append(json.dumps({"type": "BOOKMARK", "object": mark}))
        return self._answer(200, "".join(line + "\n" for line in lines).encode())

    def _answer(self, status: int, raw: bytes) -> tuple[int, bytes]:
        self.bytes += len(raw)
        return status, raw


def _listed(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k not in ("kind", "apiVersion")}


def pod(name: str, node: str = "", phase: str = "Running", namespace: str = "web", label: str = "a") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "app:1", "resources": {}}]}
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"v": label}, "managedFields": [{"m": 1}]},
        "spec": spec,
        "status": {"phase": phase, "podIP": "10.0.0.1"},
    }


def node(name: str, label: str = "a") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"v": label}}, "status": {}}


def _full(server: FakeApiServer) -> ClusterView:
    return KubernetesCluster(server).read()  # type: ignore[arg-type]


def _incremental(server: FakeApiServer, informers: Informers | None = None) -> KubernetesCluster:
    return KubernetesCluster(server, informers=informers or Informers())  # type: ignore[arg-type]


def _same(a: ClusterView, b: ClusterView) -> None:
    assert json.dumps(list(a.documents), sort_keys=True) == json.dumps(list(b.documents), sort_keys=True)
    assert json.dumps(dict(a.unbound_pods), sort_keys=True) == json.dumps(dict(b.unbound_pods), sort_keys=True)


@pytest.fixture
def server() -> FakeApiServer:
    fake = FakeApiServer()
    fake.put(NODES, node("n1"))
    fake.put(NODES, node("n2"))
    fake.put(PODS, pod("a", "n1"))
    fake.put(PODS, pod("b", "n2"))
    fake.put(PODS, pod("pending"))
    fake.put(NODEPOOLS, {"apiVersion": "nodewright.io/v1", "kind": "NodePool", "metadata": {"name": "default"}})
    return fake


def test_the_first_read_lists_and_the_next_reads_follow_with_watches(server: FakeApiServer) -> None:
    cluster = _incremental(server)
    first = cluster.read()
    assert server.lists[PODS] == 1 and server.watches == {}
    _same(first, _full(server))
    assert server.lists[PODS] == 2  # the full read above

    server.put(PODS, pod("c", "n1"))  # added
    server.put(PODS, pod("a", "n1", label="b"))  # modified
    server.delete(PODS, "web/b")  # deleted
    server.put(PODS, pod("b2", "n1", phase="Succeeded"))  # never matches the active selector
    server.put(PODS, pod("pending", "n2"))  # bound: leaves the unbound pods
    server.delete(NODES, "n2")
    second = cluster.read()

    assert server.lists[PODS] == 2 and server.watches[PODS] == 1  # no list: a watch
    assert server.watches[NODES] == 1 and server.watches[NODEPOOLS] == 1
    assert len(server.watches) == 1 + len(CLUSTER_LISTS)  # each list but the CRDs not installed (404: empty)
    assert server.lists["/apis/nodewright.io/v1/nodeclaims"] == 3  # listed again each read, to see it installed
    names = sorted(d["metadata"]["name"] for d in second.documents if d.get("kind") == "Pod")
    assert names == ["a", "c", "pending"] and not second.unbound_pods
    relabeled = next(d for d in second.documents if d["metadata"]["name"] == "a")
    assert relabeled["metadata"]["labels"] == {"v": "b"}
    assert "managedFields" not in relabeled["metadata"] and "podIP" not in relabeled["status"]  # slimmed as listed
    assert [d["metadata"]["name"] for d in second.documents if d.get("kind") == "Node"] == ["n1"]
    assert [d["kind"] for d in second.documents][:2] == ["NodePool", "Node"]
    _same(second, _full(server))


def test_a_pod_that_finishes_leaves_the_read_as_the_watch_deletes_it(server: FakeApiServer) -> None:
    cluster = _incremental(server)
    cluster.read()
    server.put(PODS, pod("a", "n1", phase="Succeeded"))
    assert "a" not in {d["metadata"]["name"] for d in cluster.read().documents}
    assert server.lists[PODS] == 1


def test_a_bookmark_moves_the_resource_version_on_without_changing_objects(server: FakeApiServer) -> None:
    informers = Informers()
    cluster = _incremental(server, informers)
    cluster.read()
    server.put("/apis/policy/v1/poddisruptionbudgets", {"metadata": {"name": "x", "namespace": "web"}})
    server.bookmark = True
    before = cluster.read()
    informer = informers.informer((NODES, ()), lambda d: d)
    assert informer.resource_version == str(server.version)  # nodes did not change; the bookmark said where we are
    _same(before, _full(server))


@pytest.mark.parametrize("gone_as", ["status", "event"])
def test_410_gone_as_a_status_or_an_error_event_lists_again(server: FakeApiServer, gone_as: str) -> None:
    cluster = _incremental(server)
    cluster.read()
    server.put(PODS, pod("c", "n1"))
    server.gone_before = server.version + 1  # the watch cache no longer holds our resourceVersion
    server.gone_as = gone_as
    view = cluster.read()
    assert server.watches[PODS] == 1 and server.lists[PODS] == 2
    assert "c" in {d["metadata"]["name"] for d in view.documents}
    _same(view, _full(server))
    server.gone_before = 0
    cluster.read()
    assert server.lists[PODS] == 3 and server.watches[PODS] == 2  # following again from the new list


def test_a_broken_watch_lists_again(server: FakeApiServer) -> None:
    cluster = _incremental(server)
    cluster.read()
    server.delete(PODS, "web/a")
    server.fail_watch = True
    view = cluster.read()
    assert server.lists[PODS] == 2
    _same(view, _full(server))


def test_a_list_that_fails_is_not_followed_from_a_half_state() -> None:
    informer = Informer(lambda d: d)

    def failing() -> tuple[list[dict[str, Any]], str]:
        raise ConnectionError("down")

    informer.sync(lambda: ([{"metadata": {"name": "x"}}], "5"), lambda rv: b"not json")
    with pytest.raises(ConnectionError):
        informer.sync(failing, lambda rv: b"not json")
    assert informer.resource_version == ""  # the next sync lists, whatever the watch would say
    assert informer.sync(lambda: ([], "9"), lambda rv: b"") == []


def test_the_incremental_read_is_off_without_informers_and_the_switch_defaults_on(server: FakeApiServer) -> None:
    cluster = KubernetesCluster(server)  # type: ignore[arg-type]
    cluster.read()
    cluster.read()
    assert server.watches == {} and server.lists[PODS] == 2
    assert incremental_reads({}) is True
    assert incremental_reads({"NODEWRIGHT_INCREMENTAL_READS": "false"}) is False
    with pytest.raises(SettingsError):
        incremental_reads({"NODEWRIGHT_INCREMENTAL_READS": "sometimes"})


def test_a_process_keeps_its_informers_by_endpoint_until_reset() -> None:
    reset()
    kept = informers_for("https://api.one")
    assert informers_for("https://api.one") is kept and informers_for("https://api.two") is not kept
    reset()
    assert informers_for("https://api.one") is not kept


# A change: (op, resource, index, node, phase, label)
CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["put", "put", "delete"]),
        st.sampled_from(["Pod", "Pod", "Node"]),
        st.integers(0, 7),
        st.sampled_from(["", "n1", "n2"]),
        st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]),
        st.sampled_from(["a", "b", "c"]),
    ),
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(rounds=st.lists(st.tuples(CHANGES, st.booleans()), min_size=1, max_size=4))
def test_after_any_changes_the_incremental_read_equals_a_full_list(rounds: list[tuple[list[Any], bool]]) -> None:
    server = FakeApiServer()
    cluster = _incremental(server)
    cluster.read()
    for changes, expire in rounds:
        for op, kind, index, on, phase, label in changes:
            path = PATHS[kind]
            name = f"{kind.lower()}{index}"
            if op == "delete":
                server.delete(path, f"web/{name}" if kind == "Pod" else name)
            elif kind == "Pod":
                server.put(path, pod(name, on, phase, label=label))
            else:
                server.put(path, node(name, label))
        if expire:
            server.gone_before = server.version  # some rounds outlive the watch cache's window
        _same(cluster.read(), _full(server))
        server.gone_before = 0


def test_realistic_objects_changed_as_the_bench_changes_them_read_the_same_as_a_full_list() -> None:
    # The planner bench's server (EKS-shaped objects, gzip pages, watches of the changes it makes).
    root = str(Path(__file__).resolve().parents[3])
    if root not in sys.path:
        sys.path.insert(0, root)
    from tests.bench import planner_scale as bench

    server = bench.ListServer(bench.documents(bench.fleet(12)))
    cluster = _incremental(server)  # type: ignore[arg-type]
    cluster.read()
    rng = random.Random(3)
    for _ in range(3):
        assert server.change_pods(0.2, rng) > 0
        read = server.bytes
        incremental = cluster.read()
        watched = server.bytes - read
        _same(incremental, _full(server))  # type: ignore[arg-type]
        assert watched < (server.bytes - read - watched) / 2  # the watch read less than the full list beside it


def test_clusters_made_from_eks_in_one_process_share_their_informers_only_when_incremental() -> None:
    class Eks:
        def __init__(self, ca: str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==") -> None:
            self.ca = ca

        def describe_cluster(self, name: str) -> dict[str, Any]:
            return {"cluster": {"endpoint": f"https://{name}.eks", "certificateAuthority": {"data": self.ca}}}

    class Tokens:
        def token(self) -> str:
            return "t"

    reset()
    first = KubernetesCluster.from_eks("one", Eks(), Tokens(), incremental=True)
    again = KubernetesCluster.from_eks("one", Eks(), Tokens(), incremental=True)
    other = KubernetesCluster.from_eks("two", Eks(), Tokens(), incremental=True)
    off = KubernetesCluster.from_eks("one", Eks(), Tokens())
    remade = KubernetesCluster.from_eks("one", Eks("LS0tLS1CRUdJTiBPVEhFUi0tLS0tCg=="), Tokens(), incremental=True)
    assert first._informers is not None and first._informers is again._informers  # the next invocation's
    assert other._informers is not first._informers and off._informers is None
    assert remade._informers is not first._informers  # a cluster made again at the same address (a new CA)
    reset()


class _Killed(BaseException):
    """A container killed mid-watch (the local world's InvocationKilled): not an Exception, so nothing retries it."""


def test_a_watch_killed_mid_stream_leaves_the_store_at_the_last_event_applied_and_the_next_sync_resumes() -> None:
    informer = Informer(lambda d: d)

    def doc(name: str, version: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "resourceVersion": version}}

    informer.sync(lambda: ([doc("a", "5"), doc("b", "5")], "5"), lambda rv: iter(()))
    asked: list[str] = []

    def dying(rv: str) -> Iterator[bytes]:
        asked.append(rv)
        yield json.dumps({"type": "MODIFIED", "object": doc("a", "6")}).encode()
        raise _Killed

    with pytest.raises(_Killed):
        informer.sync(lambda: pytest.fail("a killed container lists nothing more"), dying)
    assert informer.resource_version == "6" and informer.lists == 1

    def resumed(rv: str) -> Iterator[bytes]:
        asked.append(rv)
        yield json.dumps({"type": "DELETED", "object": doc("b", "7")}).encode()

    assert informer.sync(lambda: pytest.fail("resumes from its store"), resumed) == [doc("a", "6")]
    assert asked == ["5", "6"] and informer.lists == 1
