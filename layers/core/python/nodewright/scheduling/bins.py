"""A place pods can go (`Bin`): an existing node, a NodeClaim in flight or a new NodeClaim, with the room its pods
leave. The solver's claims (`claims.py`), the topology counts (`topology.py`) and the registration of existing nodes
(`existing.py`) all read and fill bins, so the type lives here, apart from each of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nodewright.model.objects import HOSTNAME_LABEL, Pod
from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint
from nodewright.scheduling.candidates import Candidate
from nodewright.scheduling.pools import PoolContext, ReqKey


@dataclass(slots=True, eq=False)
class Bin:
    """Somewhere pods can go: an existing node, a NodeClaim in flight, or a new NodeClaim."""

    name: str
    kind: str  # node | inflight | new
    labels: dict[str, str]
    requirements: Requirements
    rkey: ReqKey
    taints: tuple[Taint, ...]
    remaining: dict[str, int]
    pods: list[Pod] = field(default_factory=list)
    ports: set[tuple[str, int]] = field(default_factory=set)
    volumes: set[str] = field(default_factory=set)  # the EBS claims its pods attach (namespace/name)
    pool: PoolContext | None = None
    chosen: Candidate | None = None
    used: dict[str, int] = field(default_factory=dict)
    limit_budget: dict[str, int] | None = None
    order: int = 0
    grown: bool = False
    bound: int = 0  # the pods it held when registered (existing nodes and claims in flight); placed pods follow
    shape: ReqKey = -1  # an existing node's labels but its hostname, numbered (see `Claims.labels_meet`)

    def run_copy(self, pool_of: Mapping[int, PoolContext]) -> Bin:
        """A copy for another run of the same solve (runs fill, and so change, their bins); `pool_of`: that
        run's NodePool contexts by the id of this run's. Only existing nodes and claims in flight are copied
        (`Claims.fork`), whose labels and requirements no run changes (`bin_compat` keeps theirs), so the
        labels are shared."""
        assert self.kind != "new", "new claims are not copied"
        return Bin(
            self.name,
            self.kind,
            self.labels,
            self.requirements,
            self.rkey,
            self.taints,
            dict(self.remaining),
            list(self.pods),
            set(self.ports),
            set(self.volumes),
            pool_of[id(self.pool)] if self.pool is not None else None,
            self.chosen,
            dict(self.used),
            dict(self.limit_budget) if self.limit_budget is not None else None,
            self.order,
            self.grown,
            self.bound,
            self.shape,
        )

    def domain(self, key: str) -> str | None:
        """The bin's value of a topology key: its name for the hostname, else its label or the one value its
        requirements allow; None while the value is not decided."""
        if key == HOSTNAME_LABEL:
            return self.name
        value = self.labels.get(key)
        if value is None:
            value = self.requirements.get(key).single_value()
        return value
