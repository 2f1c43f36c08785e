"""The pure scheduling simulation: `solve()` and its results."""

from nodewright.scheduling.results import LaunchOption, PlannedNodeClaim, Results, Unschedulable
from nodewright.scheduling.solver import solve, solve_inputs

__all__ = ["LaunchOption", "PlannedNodeClaim", "Results", "Unschedulable", "solve", "solve_inputs"]
