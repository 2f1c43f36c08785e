"""What the static NodePool ports share: a static pool, its NodeClaims as `disruption.static` sees them, and the
`Drifted` allowance its budgets give (computed by `PoolBudgets`, as the planner's tick does)."""

from __future__ import annotations

from dataclasses import replace

from nodewright.disruption.budgets import PoolBudgets
from nodewright.disruption.decision import DRIFTED
from nodewright.disruption.static import StaticMember
from nodewright.model.nodepool import Budget, Disruption, NodeClassRef, NodePool

REF = NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "default")


def static_pool(
    replicas: int, nodes: int | None = None, budgets: tuple[str, ...] = ("10%",), name: str = "default"
) -> NodePool:
    """A static NodePool; `nodes`: limits.nodes; `budgets`: each a `nodes` value for the Drifted reason."""
    disruption = Disruption(budgets=tuple(Budget(nodes=b, reasons=(DRIFTED,)) for b in budgets))
    limits = {} if nodes is None else {"nodes": nodes}
    return NodePool(name=name, node_class_ref=REF, replicas=replicas, limits=limits, disruption=disruption)


def claims(count: int, prefix: str = "nc", **fields: object) -> list[StaticMember]:
    """`count` launched, initialized, empty NodeClaims created one second apart."""
    return [StaticMember(f"{prefix}-{i}", created_at=float(i), **fields) for i in range(count)]  # type: ignore[arg-type]


def drifted(members: list[StaticMember], count: int | None = None) -> list[StaticMember]:
    """The first `count` (all by default) marked Drifted, as the tests' SetTrue(ConditionTypeDrifted)."""
    n = len(members) if count is None else count
    return [replace(m, drifted="NodePoolDrifted") if i < n else m for i, m in enumerate(members)]


def drift_allowance(pool: NodePool, members: list[StaticMember]) -> int:
    """How many of the pool's nodes its budgets let be disrupted for Drifted now (initialized members counted)."""
    budgets = PoolBudgets({pool.name: pool}, [(pool.name, m.disrupting or m.deleting) for m in members], 0.0)
    return budgets.allowance(pool.name, DRIFTED).allowed
