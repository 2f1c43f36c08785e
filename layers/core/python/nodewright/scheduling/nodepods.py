"""The pods bound to an existing node, summed up once: what every solve reads of them.

A solve against a running cluster reads every bound pod several times (the node's room, the DaemonSets'
running requests, the label keys selectors use, topology counts, host ports, pods it already holds). A node's
pods are mostly the same from one solve to the next (a warm provisioner's batches reuse the parsed pod
objects of unchanged pods; the disruption planner's simulations share one cluster), so the sums are kept per
node name in the `TemplateCache` while the node's pods are equal, and the solver reads a thousand summaries
instead of ten thousand pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodewright.model import resources as res
from nodewright.model.objects import Pod
from nodewright.scheduling.classes import selector_keys

# A pod's (namespace, labels as a sorted tuple): what decides which topology groups select it.
SelectionKey = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True)
class NodePods:
    """Sums over a node's bound pods (or a NodeClaim's nominated pods), each a pure function of `pods`.

    `used`: summed requests; `daemon_used`: those of the DaemonSet pods; `daemon_requests`: per DaemonSet
    (namespace, name), the largest request of each resource among its pods here; `selected`: per selection
    key, its labels and how many pods have them; `carriers`: the pods with required pod anti-affinity (their
    terms count against others); `ports`: the host ports taken; `selector_keys`: the label keys the pods'
    spread and (anti-)affinity selectors read; `keys`: the pods' namespace/name; `with_volumes`: the pods
    that mount PersistentVolumeClaims.
    """

    pods: tuple[Pod, ...]
    used: Mapping[str, int]
    daemon_used: Mapping[str, int]
    daemon_requests: Mapping[tuple[str, str], Mapping[str, int]]
    selected: tuple[tuple[SelectionKey, Mapping[str, str], int], ...]
    carriers: tuple[Pod, ...]
    ports: frozenset[tuple[str, int]]
    selector_keys: frozenset[str]
    keys: frozenset[str]
    with_volumes: tuple[Pod, ...]


def selection_key(pod: Pod) -> SelectionKey:
    """The pod's namespace and labels as a dictionary key (see `topology.Topology.selecting`)."""
    return (pod.namespace, tuple(sorted(pod.labels.items())))


def node_pods(pods: Sequence[Pod]) -> NodePods:
    """The sums over `pods` (see `NodePods`)."""
    used: dict[str, int] = {}
    daemon_used: dict[str, int] = {}
    daemon_requests: dict[tuple[str, str], dict[str, int]] = {}
    selected: dict[SelectionKey, tuple[Mapping[str, str], int]] = {}
    ports: set[tuple[str, int]] = set()
    for pod in pods:
        for name, value in pod.requests.items():
            used[name] = used.get(name, 0) + value
        if pod.is_daemonset_pod:
            for name, value in pod.requests.items():
                daemon_used[name] = daemon_used.get(name, 0) + value
            owner = (pod.namespace, pod.owner_name)
            daemon_requests[owner] = res.elementwise_max(daemon_requests.get(owner, {}), pod.requests)
        key = selection_key(pod)
        labels, count = selected.get(key, (pod.labels, 0))
        selected[key] = (labels, count + 1)
        ports.update((p.protocol, p.port) for p in pod.host_ports)
    return NodePods(
        pods=tuple(pods),
        used=used,
        daemon_used=daemon_used,
        daemon_requests=daemon_requests,
        selected=tuple((key, labels, count) for key, (labels, count) in selected.items()),
        carriers=tuple(p for p in pods if p.pod_anti_affinity),
        ports=frozenset(ports),
        selector_keys=selector_keys(pods),
        keys=frozenset(p.key for p in pods),
        with_volumes=tuple(p for p in pods if p.pvc_names),
    )
