"""The pure scheduling simulation: `solve()` and its results."""

from nodewright.scheduling.results import LaunchOption, PlannedNodeClaim, Results, Unschedulable
from nodewright.scheduling.solver import solve, solve_inputs
from nodewright.scheduling.templates import TemplateCache

__all__ = ["LaunchOption", "PlannedNodeClaim", "Results", "TemplateCache", "Unschedulable", "solve", "solve_inputs"]
