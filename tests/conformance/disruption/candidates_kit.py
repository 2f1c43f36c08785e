"""Builders and probes for the candidate, PDB and pod-helper ports (test_karpenter_pdb.py, test_karpenter_pod.py,
test_karpenter_disruption_suite.py).

Karpenter's helpers map to nodewright's pure core as follows:
- `pdb.Limits.CanEvictPods(pods)` -> `can_evict_pods`: every pod Karpenter would evict (`candidates.evictable`)
  asked of `PdbLimits.violations`, stopping at the first refusal, as Karpenter's loop does;
- `pdb.Limits.IsCurrentlyReschedulable(pod)` -> `simulate.currently_reschedulable`;
- `pod.IsDoNotDisruptActive` -> `model.do_not_disrupt.is_active` (`protected_until` for the "will elapse at" event,
  `invalid_reason` for the InvalidDoNotDisruptAnnotation event);
- `pod.IsDisruptable` -> `candidates.disruptable`;
- `disruption.NewCandidate(node, class)` -> `candidates.candidate(state, member, class)`, a Candidate or the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster_builder import T0, Cluster, iso

from nodewright.disruption.candidates import GRACEFUL, Candidate, candidate, evictable
from nodewright.disruption.state import ClusterState
from nodewright.model.objects import Pod

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
POD_LABELS = {"pdb-test": "value"}
# Karpenter's mostExpensiveInstance of the fake catalog: here the largest m5 of the shipped catalog.
MOST_EXPENSIVE = "m5.24xlarge"


def started(pod: dict[str, Any], ago: float, now: float = T0) -> dict[str, Any]:
    """Set the pod's status.startTime `ago` seconds before `now`."""
    pod["status"]["startTime"] = iso(now - ago)
    return pod


def not_ready(pod: dict[str, Any]) -> dict[str, Any]:
    """Give the pod the condition Ready=False (Karpenter's test.PodOptions Conditions)."""
    pod["status"].setdefault("conditions", []).append({"type": "Ready", "status": "False"})
    return pod


def terminating(pod: dict[str, Any], ago: float = 0.0) -> dict[str, Any]:
    """Set the pod's deletionTimestamp (ExpectDeletionTimestampSet)."""
    pod["metadata"]["deletionTimestamp"] = iso(T0 - ago)
    return pod


def phase(pod: dict[str, Any], value: str) -> dict[str, Any]:
    """Set status.phase (Succeeded / Failed make the pod terminal)."""
    pod["status"]["phase"] = value
    return pod


def pdb(
    cluster: Cluster,
    name: str,
    labels: dict[str, str] = POD_LABELS,
    namespace: str = "web",
    **spec: Any,
) -> dict[str, Any]:
    """A PodDisruptionBudget as Karpenter's test.PodDisruptionBudget writes it in an envtest, where no disruption
    controller runs: the status says 0 disruptions allowed."""
    return cluster.pdb(name, labels, namespace=namespace, allowed=0, **spec)


def pods_of(state: ClusterState, names: Sequence[str]) -> list[Pod]:
    """The loaded pods called `names` (namespace/name keys), in that order."""
    by_key = {p.key: p for n in state.inputs.nodes for p in n.pods}
    return [by_key[k] for k in names]


def can_evict_pods(state: ClusterState, pods: Sequence[Pod]) -> tuple[list[str], bool]:
    """Karpenter's Limits.CanEvictPods: the first refusing budgets (namespace/name) and False, or ([], True)."""
    for pod in pods:
        fact = state.facts(pod)
        if not evictable(pod, fact, state.now):
            continue
        refused = state.pdbs.violations(pod, fact.ready)
        if refused:
            return [f"{b.namespace}/{b.name}" for b in refused], False
    return [], True


def new_candidate(state: ClusterState, nodeclaim: str, disruption_class: str = GRACEFUL) -> Candidate | str:
    """Karpenter's NewCandidate for the NodeClaim called `nodeclaim`: the candidate, or why it is not one."""
    member = next(m for m in state.fleet if m.nodeclaim == nodeclaim)
    return candidate(state, member, disruption_class)
