"""Memory sized from the cluster: `clusterNodes` picks the planner's and provisioner's memory from the table."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from conftest import CLUSTER, Synth, synth

from infra.config import ContextError, Settings
from infra.sizing import DEFAULT_MEMORY_MB, MEMORY_BY_NODES, planner_memory_mb, provisioner_memory_mb


def memory(s: Synth, handler_description: str) -> int:
    """The MemorySize of the one function whose description starts with `handler_description`."""
    found = [
        r["Properties"]["MemorySize"]
        for r in s.resources("AWS::Lambda::Function").values()
        if str(r["Properties"].get("Description", "")).startswith(handler_description)
    ]
    assert len(found) == 1, found
    return int(found[0])


def test_without_the_context_value_both_functions_keep_the_default(default_synth: Synth) -> None:
    assert memory(default_synth, "nodewright planner") == DEFAULT_MEMORY_MB
    assert memory(default_synth, "nodewright provisioner") == DEFAULT_MEMORY_MB


def test_a_large_cluster_gets_the_memory_of_its_row(synth_root: Path) -> None:
    large = synth(synth_root, clusterName=CLUSTER, clusterNodes="3000")
    assert memory(large, "nodewright planner") == 3008
    assert memory(large, "nodewright provisioner") == 1769
    huge = synth(synth_root, clusterName=CLUSTER, clusterNodes="9000")
    assert memory(huge, "nodewright planner") == 6144
    assert memory(huge, "nodewright provisioner") == 3008


def test_the_table_is_looked_up_at_or_above_the_nodes_and_capped_at_its_last_row() -> None:
    assert planner_memory_mb(None) == DEFAULT_MEMORY_MB
    assert planner_memory_mb(1) == MEMORY_BY_NODES[0][1]
    assert planner_memory_mb(1000) == MEMORY_BY_NODES[0][1]
    assert planner_memory_mb(1001) == MEMORY_BY_NODES[1][1]
    assert planner_memory_mb(50_000) == MEMORY_BY_NODES[-1][1]
    assert provisioner_memory_mb(10_000) == MEMORY_BY_NODES[-1][2]
    # Rows grow with the cluster, and never past Lambda's largest size.
    for smaller, larger in pairwise(MEMORY_BY_NODES):
        assert smaller[0] < larger[0] and smaller[1] <= larger[1] and smaller[2] <= larger[2]
    assert all(row[1] <= 10240 and row[2] <= 10240 for row in MEMORY_BY_NODES)


@pytest.mark.parametrize("value", ["0", "-5", "many", "2.5"])
def test_a_malformed_node_count_is_refused_by_name(value: str) -> None:
    with pytest.raises(ContextError, match="clusterNodes"):
        Settings.from_context({"clusterName": "prod", "clusterNodes": value}.get)


def test_the_node_count_is_read() -> None:
    assert Settings.from_context({"clusterName": "prod", "clusterNodes": 4000}.get).cluster_nodes == 4000
