"""Preferences and their relaxation: the forms of a class's constraints, strictest first.

A class is placed first with its preferences treated as required; the pods that do not fit are tried
again with one preference fewer, in Karpenter's order (preferences.go). A PreferNoSchedule taint counts
as a NoSchedule one until the last relaxation tolerates it, as Karpenter's does when a NodePool has one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nodewright.model.requirements import Requirements
from nodewright.model.taints import Taint, Toleration
from nodewright.scheduling.classes import PodClass, TopologyTerm

PREFER_NO_SCHEDULE = "PreferNoSchedule"
# What the last relaxation adds (Karpenter's toleratePreferNoScheduleTaints).
TOLERATE_PREFER_NO_SCHEDULE = Toleration(operator="Exists", effect=PREFER_NO_SCHEDULE)


@dataclass(frozen=True, slots=True)
class Variant:
    """One form of a class's constraints: node requirements (with the preference tried), the topology
    terms in force, `base`, the pod's required node requirements alone (no preference, no volume: what a
    spread counts domains over), and the tolerations in force."""

    requirements: Requirements
    terms: tuple[TopologyTerm, ...]
    base: Requirements
    tolerations: tuple[Toleration, ...]


def variants(cls: PodClass, prefer_no_schedule: bool) -> list[Variant]:
    """The class's constraints, strictest first, each later one relaxing one more preference.

    Karpenter's order (preferences.go): while the pod has more than one ORed required node affinity term,
    the first is dropped (each term is tried with every preference in force); then preferred pod affinity
    terms, then preferred anti-affinity terms, heaviest first; then the preferred node affinity terms, of
    which only the heaviest left is required at a time; then ScheduleAnyway spreads; last, when a NodePool
    has a PreferNoSchedule taint (`prefer_no_schedule`), a toleration of every PreferNoSchedule taint. Each
    variant keeps its required node requirements (`base`) apart: spread domains are counted over those,
    not over a preference. Each of these steps is tried with every combination of the volumes' ORed terms
    in turn, as Karpenter tries each volume alternative on every NodeClaim.
    """
    if len(cls.requirement_options) == 1 and not (
        cls.preferred_terms or cls.preferred_node_terms or prefer_no_schedule
    ):
        return [Variant(cls.requirement_options[0], cls.terms, cls.topology_options[0], cls.tolerations)]
    affinity = [t for t in cls.preferred_terms if t.kind == "affinity"]
    anti = [t for t in cls.preferred_terms if t.kind == "anti"]
    spread = [t for t in cls.preferred_terms if t.kind == "spread"]
    node_prefs = [r for _, r in cls.preferred_node_terms]  # heaviest first
    options = list(zip(cls.requirement_options, cls.topology_options, strict=True))
    # The pod's last ORed term, with each combination of its volumes' terms: what the relaxations keep trying.
    split = len(options) - cls.volume_alternatives
    earlier, last = options[:split], options[split:]
    preference = node_prefs[0] if node_prefs else None
    steps: list[tuple[tuple[Requirements, Requirements], Requirements | None, list[TopologyTerm]]] = []
    for option in earlier:
        steps.append((option, preference, affinity + anti + spread))
    relaxed: list[tuple[Requirements | None, list[TopologyTerm]]] = [(preference, affinity + anti + spread)]
    while affinity:
        affinity.pop(0)
        relaxed.append((node_prefs[0] if node_prefs else None, affinity + anti + spread))
    while anti:
        anti.pop(0)
        relaxed.append((node_prefs[0] if node_prefs else None, anti + spread))
    while node_prefs:
        node_prefs.pop(0)
        relaxed.append((node_prefs[0] if node_prefs else None, list(spread)))
    while spread:
        spread.pop(0)
        relaxed.append((None, list(spread)))
    steps += [(option, pref, terms) for pref, terms in relaxed for option in last]
    found: list[Variant] = []
    for (placement, base), pref, extra_terms in steps:
        requirements = placement if pref is None else placement.intersect(pref)
        variant = Variant(requirements, cls.terms + tuple(extra_terms), base, cls.tolerations)
        if variant not in found:
            found.append(variant)
    if prefer_no_schedule and not any(_tolerates_all_prefer_no_schedule(t) for t in cls.tolerations):
        for placement, base in last:
            found.append(Variant(placement, cls.terms, base, (*cls.tolerations, TOLERATE_PREFER_NO_SCHEDULE)))
    return found


def _tolerates_all_prefer_no_schedule(toleration: Toleration) -> bool:
    return toleration.operator == "Exists" and not toleration.key and toleration.effect in ("", PREFER_NO_SCHEDULE)


def untolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint]) -> Taint | None:
    """The first taint no toleration tolerates, or None (Karpenter's Taints.Tolerates): a PreferNoSchedule
    taint blocks too, until the relaxation tolerates it (TOLERATE_PREFER_NO_SCHEDULE)."""
    tolerations = tuple(tolerations)
    for taint in taints:
        if not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None
