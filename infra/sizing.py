"""Lambda memory from the cluster's size: the `clusterNodes` context value and the table it is looked up in.

The planner holds the whole cluster while it decides (every NodeClaim, Node and pod, parsed), so its memory
grows with the nodes; the provisioner reads Nodes, NodeClaims and the pending pods only, so it grows far less.
`clusterNodes` is the number of nodes the cluster may reach; each function gets the memory of the first row at
or above it (the last row's beyond it). Without the value both keep 1769 MB, where Lambda
gives one full vCPU (the simulation is single-threaded, so more memory buys no speed below ~1,000 nodes).

The planner's rows come from `python -m tests.bench.planner_scale --sizes 1000 2500 5000 10000` (clusters of
realistic API objects, about 19 pods a node): its peak resident memory per size (in the comments), with at least a
third more as headroom for larger objects and the Lambda runtime. Up to `d6cff09` that bench printed the process's
whole peak, which is the bench building the documents, not the planner's tick; the comments give the planner's own
peak since then (the 1,000-node one is still such an upper bound). The rows were set from the higher figures and
are kept: they leave room for objects larger than the bench's. Time is the other limit. At 10,000 nodes the
bench's warm planner tick takes about 10 s and its cold tick 39-49 s, against the planner's 55 s timeout; the
provisioner, which follows its Nodes and NodeClaims in a warm container, plans a batch of 100 pods in 0.16 s at
2,500 nodes, 0.11 s at 5,000 and 0.27 s at 10,000 (a cold container: 1.4, 2.8 and 3.5 s;
`python -m tests.bench.planner_scale --sizes 2500 5000 10000 --runs 3 --batch-only`; docs/reference/performance.md,
"The planner at scale"). The provisioner's rows are an estimate (it holds the
Nodes and NodeClaims, a fifth of the planner's objects), not measured.
"""

from __future__ import annotations

DEFAULT_MEMORY_MB = 1769
# (up to this many nodes, planner MB, provisioner MB)
MEMORY_BY_NODES: tuple[tuple[int, int, int], ...] = (
    (1000, 1769, 1769),  # planner peak 429 MB
    (2500, 1769, 1769),  # planner peak 656 MB
    (5000, 3008, 1769),  # planner peak 1,228 MB
    (10000, 6144, 3008),  # planner peak 2,413 MB
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
