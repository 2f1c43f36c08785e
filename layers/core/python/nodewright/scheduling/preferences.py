"""Preferences and their relaxation: the forms of a class's constraints, strictest first.

A class is placed first with its preferences treated as required; the pods that do not fit are tried
again with one preference fewer, in Karpenter's order (preferences.go).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodewright.model.requirements import Requirements
from nodewright.scheduling.classes import PodClass, TopologyTerm


@dataclass(frozen=True, slots=True)
class Variant:
    """One form of a class's constraints: node requirements (with the preference tried), the topology
    terms in force, and `base`, the required node requirements alone."""

    requirements: Requirements
    terms: tuple[TopologyTerm, ...]
    base: Requirements


def variants(cls: PodClass) -> list[Variant]:
    """The class's constraints, strictest first, each later one relaxing one more preference.

    Karpenter's order (preferences.go): preferred pod affinity terms, then preferred anti-affinity
    terms, heaviest first; then the preferred node affinity terms, of which only the heaviest left is
    required at a time; then ScheduleAnyway spreads. Each variant keeps its required node requirements
    (`base`) apart: spread domains are counted over those, not over a preference.
    """
    found: list[Variant] = []
    affinity0 = [t for t in cls.preferred_terms if t.kind == "affinity"]
    anti0 = [t for t in cls.preferred_terms if t.kind == "anti"]
    spread0 = [t for t in cls.preferred_terms if t.kind == "spread"]
    for base in cls.requirement_options:
        node_prefs = [r for _, r in cls.preferred_node_terms]  # heaviest first
        affinity, anti, spread = list(affinity0), list(anti0), list(spread0)
        steps: list[tuple[Requirements | None, list[TopologyTerm]]] = []
        steps.append((node_prefs[0] if node_prefs else None, affinity + anti + spread))
        while affinity:
            affinity.pop(0)
            steps.append((node_prefs[0] if node_prefs else None, affinity + anti + spread))
        while anti:
            anti.pop(0)
            steps.append((node_prefs[0] if node_prefs else None, anti + spread))
        while node_prefs:
            node_prefs.pop(0)
            steps.append((node_prefs[0] if node_prefs else None, list(spread)))
        while spread:
            spread.pop(0)
            steps.append((None, list(spread)))
        for preference, extra_terms in steps:
            requirements = base if preference is None else base.intersect(preference)
            variant = Variant(requirements, cls.terms + tuple(extra_terms), base)
            if variant not in found:
                found.append(variant)
    return found
