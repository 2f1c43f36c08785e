"""Lists kept in a warm container: each read once, then followed from its resourceVersion (an informer's cache).

A planner on ten thousand nodes lists some 200 MB of JSON a minute, almost all of it unchanged since the last
tick. An `Informer` holds one list's latest objects by key (`namespace/name`, or `name` for cluster-scoped
objects) and the resourceVersion they are current at. `sync` lists when it holds nothing (a cold container)
and otherwise asks for a watch from that resourceVersion: the API server answers with the events since (the
watch cache keeps a few minutes of them), closes the watch after its `timeoutSeconds`, and the events are
applied in order: ADDED and MODIFIED replace an object, DELETED removes it (a pod leaving the watch's field
selector, say by finishing, comes as DELETED too), BOOKMARK only moves the resourceVersion on. An ERROR event
(410 Gone: the resourceVersion left the watch cache's window; or any other), an error status, a broken
connection or a body that does not parse all end in a full list, as a cold start does. Events are applied one
by one with their own resourceVersion, so the store is always the list as it was at `resource_version`.

Why a stale store is safe: it is exactly as fresh as the `resourceVersion=0` lists it replaces. Both are the API
server's watch cache, and a watch delivers every event the cache holds past our resourceVersion, so the result
is the cache's state when the watch ran, never older than what the last tick saw (a list from a lagging API server
replica could even go back in time; a watch from a resourceVersion that replica has not reached waits or fails,
and fails into a list). What acts does not newly rely on it: the planner's `_start` takes its leases in the state
table (a consistent read) and starts a workflow that decides nothing from this store; the workflow's Lambda keeps
no informers (only the planner's and the provisioner's `from_eks` ask for them), so its validation re-reads the
cluster in full and its drain reads the node's pods, Nodes and NodeClaims consistently (`pods_on_node`,
`read_fleet`); the provisioner's lock is untouched and its NodeClaims are never staler than a consistent read (below);
and every write that merges is a read-modify-write at the resourceVersion it read
(`KubernetesCluster._read_modify_write`). The planner's own writes from its view (registrations, status,
reconciliation, instance collection past its grace period) were made from watch-cache lists before and are no
staler now. A store that lags by a watch may delay a decision a tick, never make a wrong one.

A store can also be made as fresh as a consistent read (`sync`'s `target` and `required`, the provisioner's
NodeClaims): the caller takes the resourceVersion a consistent read is at now (a one-object page from etcd), and
the watch is read until an event or a bookmark at or past it. Events come in resourceVersion order, so once one at
or past the target has been applied, every change of this list before the target has been too: the store is the
list at a version no older than the consistent read. A watch that ends without that proof (no such event, no
bookmark, a resourceVersion that is not a number) is followed by a full consistent list, which is what the caller
read before informers; so the proof can save a list, never make the result older. The watch stops at the proof (or
at its first bookmark), instead of being held for its `timeoutSeconds`: a bookmark comes only on a watch longer than
2 s (`PROOF_WATCH_SECONDS`).

Stores live as long as the process (`informers_for`, by API endpoint and CA), so a warm Lambda container keeps them
between invocations; `reset()` forgets them all (tests).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from nodewright.model.resource_version import reached

# The watch's timeoutSeconds: how long a sync waits for events. The informers of a read are synced side by side,
# so a read pays it once. The API server sends what its cache holds past our resourceVersion at once; waiting
# longer would only catch what happens during the wait.
WATCH_SECONDS = 1
# The timeoutSeconds of a watch read until it reaches a target resourceVersion (`Informer.sync`'s `target`). The
# watch cache sends a watcher a bookmark 2 s before its deadline and none at all on a watch shorter than 2 s
# (the cacher's `nextBookmarkTime`), so a list nothing changed in can prove itself only on a longer watch; the
# reader stops at the proof, about a second in, and does not wait for the end.
PROOF_WATCH_SECONDS = 3

Relist = Callable[[], tuple[list[dict[str, Any]], str]]  # every object, prepared, and the list's resourceVersion
# The watch's events after a resourceVersion, one JSON line each, as they arrive (a body's `splitlines()` will do);
# raises on an error status. An iterator with `close()` is closed when the reader stops early.
Watch = Callable[[str], Iterable[bytes]]
Prepare = Callable[[dict[str, Any]], dict[str, Any]]  # a watched object as the list would hold it (kind, slimmed)


class WatchEnded(Exception):
    """The watch cannot go on from the stored resourceVersion (an ERROR event, an unknown event type)."""


def object_key(document: Mapping[str, Any]) -> str:
    """`namespace/name`, or `name` for a cluster-scoped object: etcd's key order, which is a list's order."""
    metadata = document.get("metadata") or {}
    name = str(metadata.get("name") or "")
    namespace = metadata.get("namespace")
    return f"{namespace}/{name}" if namespace else name


class Informer:
    """One list's objects by key and the resourceVersion they are current at (module doc)."""

    def __init__(self, prepare: Prepare) -> None:
        self._prepare = prepare
        self._objects: dict[str, dict[str, Any]] = {}
        self._ordered: list[dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self.resource_version = ""
        self.lists = 0  # full lists made (cold starts and relists), for tests and benches
        self.watches = 0  # watches followed
        self.unproven = 0  # watches that did not prove a required target (a full list followed)

    def sync(
        self, relist: Relist, watch: Watch, target: str = "", required: bool = False, watch_from: int = 0
    ) -> list[dict[str, Any]]:
        """The list's objects now, in the list's order: a watch from the stored resourceVersion when there is
        one, a full list when there is none or the watch fails. An error of the full list is raised.

        `target`: a resourceVersion the store should reach (taken by the caller with a consistent read just before).
        The watch is read until an event at or past it, or the first bookmark, or its end, whichever comes first,
        so a reader need not wait out the watch's timeout. `required`: a store that did not provably reach `target`
        (no event or bookmark at or past it, or a resourceVersion that is not a number) is listed again with
        `relist`, which must then be a consistent list: the result is never older than `target` (and with
        `required` but no `target`, there is nothing to prove against: it lists). `watch_from`: a store holding
        fewer objects is listed again rather than watched (a small list costs less than waiting for a proof)."""
        with self._lock:
            if self.resource_version and len(self._objects) >= watch_from:
                try:
                    proven = self._follow(watch, target)
                    self.watches += 1
                    if not required or (target and proven):
                        return self._documents()
                    self.unproven += 1
                except Exception:  # 410 Gone, any error status, a broken stream: list again
                    pass
            self.resource_version = ""  # a list that fails is tried again next time, not followed from here
            items, resource_version = relist()
            self.lists += 1
            self._objects = {object_key(d): d for d in items}
            self._ordered = None
            self.resource_version = resource_version
            return self._documents()

    def _follow(self, watch: Watch, target: str) -> bool:
        """Apply the watch's events from the stored resourceVersion; True when the store provably reached
        `target` (always, without one)."""
        if target and reached(self.resource_version, target):
            return True  # already there (a list just made): nothing to wait for
        lines = watch(self.resource_version)
        try:
            for line in lines:
                if not line.strip():
                    continue
                bookmark = self._apply(json.loads(line))
                if bookmark or (target and reached(self.resource_version, target)):
                    break
        finally:
            close = getattr(lines, "close", None)
            if close is not None:
                close()  # a stream left early: its connection is dropped, not waited out
        return not target or reached(self.resource_version, target)

    def _apply(self, event: Mapping[str, Any]) -> bool:
        """Apply one watch event; True for a bookmark (the server has sent everything up to its resourceVersion)."""
        kind = event.get("type")
        document = event.get("object") or {}
        if kind == "ERROR" or not isinstance(document, dict):
            raise WatchEnded(f"watch ended: {json.dumps(document)[:300]}")
        version = str((document.get("metadata") or {}).get("resourceVersion") or "")
        if kind in ("ADDED", "MODIFIED"):
            self._objects[object_key(document)] = self._prepare(document)
        elif kind == "DELETED":
            self._objects.pop(object_key(document), None)
        elif kind != "BOOKMARK":
            raise WatchEnded(f"watch sent an event of type {kind!r}")
        if kind != "BOOKMARK":
            self._ordered = None
        if version:
            self.resource_version = version
        return bool(kind == "BOOKMARK")

    def _documents(self) -> list[dict[str, Any]]:
        if self._ordered is None:
            self._ordered = [self._objects[k] for k in sorted(self._objects)]
        return list(self._ordered)


class Informers:
    """The informers of one API server, one per list (path and query), made on first use."""

    def __init__(self) -> None:
        self._by_list: dict[Hashable, Informer] = {}
        self._lock = threading.Lock()

    def informer(self, key: Hashable, prepare: Prepare) -> Informer:
        """The informer of the list `key`, made with `prepare` the first time."""
        with self._lock:
            found = self._by_list.get(key)
            if found is None:
                found = self._by_list[key] = Informer(prepare)
            return found


_BY_ENDPOINT: dict[str, Informers] = {}
_REGISTRY_LOCK = threading.Lock()


def informers_for(endpoint: str) -> Informers:
    """The process's informers of the API server at `endpoint` (its URL, and whatever else tells a cluster made
    again at the same address apart): a warm container's next invocation, which makes a new `KubernetesCluster`,
    finds the lists the last one followed."""
    with _REGISTRY_LOCK:
        found = _BY_ENDPOINT.get(endpoint)
        if found is None:
            found = _BY_ENDPOINT[endpoint] = Informers()
        return found


def reset() -> None:
    """Forget every stored list (a test's fresh process)."""
    with _REGISTRY_LOCK:
        _BY_ENDPOINT.clear()
