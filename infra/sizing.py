"""Lambda memory from the cluster's size: the `clusterNodes` context value and the table it is looked up in.

The planner holds the whole cluster while it decides (every NodeClaim, Node and pod, parsed), so its memory
grows with the nodes; the provisioner reads Nodes, NodeClaims and the pending pods only, so it grows far less.
`clusterNodes` is the number of nodes the cluster may reach; each function gets the memory of the first row at
or above it (the last row's beyond it). Without the value both keep 1769 MB, where Lambda
gives one full vCPU (the simulation is single-threaded, so more memory buys no speed below ~1,000 nodes).

The planner's rows come from `python -m tests.bench.planner_scale --sizes 1000 2500 5000 10000` (clusters of
realistic API objects, about 19 pods a node): its peak resident memory per size (in the comments), with at least a
third more as headroom for larger objects and the Lambda runtime. Up to `d6cff09` that bench's peak was the process's
whole peak, which is the bench building the documents, not the planner's tick: the comments of 1,000, 5,000 and
10,000 nodes are such upper bounds (the planner's own peak at 2,500 nodes is two thirds of it).
Memory is not the only limit: at 10,000 nodes
the same bench's tick takes 78 s cold and 54 s warm, past the planner's 55 s timeout, so the largest cluster
served today is about 5,000 nodes (31.6 s cold, 12.5 s warm). The provisioner's rows are an estimate (it holds the
Nodes and NodeClaims, a fifth of the planner's objects), not measured.
"""

from __future__ import annotations

DEFAULT_MEMORY_MB = 1769
# (up to this many nodes, planner MB, provisioner MB)
MEMORY_BY_NODES: tuple[tuple[int, int, int], ...] = (
    (1000, 1769, 1769),  # planner peak 429 MB
    (2500, 1769, 1769),  # planner peak 653 MB (the 972 MB printed before was the bench's own build: module doc)
    (5000, 3008, 1769),  # planner peak 1,879 MB
    (10000, 6144, 3008),  # planner peak 3,701 MB (and a tick past the 55 s timeout: module doc)
)


def _row(nodes: int | None) -> tuple[int, int, int]:
    if nodes is None:
        return (0, DEFAULT_MEMORY_MB, DEFAULT_MEMORY_MB)
    return next((row for row in MEMORY_BY_NODES if nodes <= row[0]), MEMORY_BY_NODES[-1])


def planner_memory_mb(nodes: int | None) -> int:
    """The planner's memory (MB) for a cluster of up to `nodes` nodes (None: not given, the default)."""
    return _row(nodes)[1]


def provisioner_memory_mb(nodes: int | None) -> int:
    """The provisioner's memory (MB) for a cluster of up to `nodes` nodes (None: not given, the default)."""
    return _row(nodes)[2]
