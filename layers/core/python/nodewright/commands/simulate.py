"""`nodewright simulate FILE... [--json]`: what would nodewright launch for these pending pods?

FILEs hold multi-document YAML: NodePools, EC2NodeClasses, existing Nodes (with the pods bound to them),
workloads and NodeOverlays. The simulation runs against the offline instance catalog (prices from the shipped
snapshot, changed by the NodeOverlays) and prints each NodeClaim with its cheapest option, the pods on existing
capacity, the pods that cannot be scheduled with the reason, and the total price per hour. A NodeClaim whose
chosen offering an overlay priced names it (`price_overlay`), and each overlay refused (a conflict, or a
requirement the shared catalog cannot honour) is listed with why.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from nodewright.catalog.catalog import Catalog
from nodewright.catalog.overlay import OverlayResult, apply_overlays, price_overlay
from nodewright.catalog.snapshot import SnapshotSource
from nodewright.commands.validate import load_or_report
from nodewright.gcpause import paused_cycle_collector
from nodewright.scheduling import Results, solve_inputs


def add_parser(subparsers: Any) -> None:
    """Register the `simulate` sub-command."""
    parser = subparsers.add_parser(
        "simulate",
        help="simulate scheduling of the pending pods in YAML files",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML files")
    parser.add_argument("--json", action="store_true", help="print the decisions as one JSON document")
    # `python -m nodewright simulate` ends its process once the output is written (cli.program)
    parser.set_defaults(func=run, exit_at_once=True)


def run(args: argparse.Namespace) -> int:
    """Load, validate and simulate; 0 on success (even with unschedulable pods), 1 on invalid input."""
    # The documents, pods, catalog and plan all live until the command ends: the collector's passes over them
    # (the loader's and the solver's own pauses each end in one over all they made) free nothing. Reference
    # counting frees the rest as usual; the few cycles made meanwhile wait for the next pass after the command.
    with paused_cycle_collector():
        return _simulate(args)


def _simulate(args: argparse.Namespace) -> int:
    inputs = load_or_report(args.files, summaries=False)  # the objects' summaries are for `validate`
    if inputs is None:
        return 1
    overlaid = apply_overlays(Catalog(SnapshotSource().instance_types()), inputs.nodeoverlays)
    results = solve_inputs(inputs, overlaid.catalog.instance_types)
    if args.json:
        print(json.dumps(to_json(results, overlaid), indent=2))
    else:
        print(render_table(results, overlaid))
    return 0


def to_json(results: Results, overlaid: OverlayResult) -> dict[str, Any]:
    """`Results.to_json()` with each NodeClaim's `price_overlay` (the NodeOverlay that priced its chosen offering,
    or null) and `nodeoverlays`: the overlays applied and those refused, with the reason."""
    shown = results.to_json()
    for claim, entry in zip(results.nodeclaims, shown["nodeclaims"], strict=True):
        entry["price_overlay"] = _overlay_of(claim.cheapest, overlaid)
    shown["nodeoverlays"] = overlaid.to_json()
    return shown


def _overlay_of(option: Any, overlaid: OverlayResult) -> str | None:
    return price_overlay(
        overlaid.catalog, option.instance_type, option.zone, option.capacity_type, option.reservation_id
    )


def render_table(results: Results, overlaid: OverlayResult | None = None) -> str:
    """The human-readable report: NodeClaims, existing capacity, unschedulable pods, total price; with `overlaid`,
    the NodeOverlay behind each overlaid price and the overlays refused."""
    lines: list[str] = []
    header = (
        f"{'NODECLAIM':<22} {'NODEPOOL':<14} {'INSTANCE TYPE':<16} {'CAPACITY':<10} {'ZONE':<12} {'$/HOUR':>8}  PODS"
    )
    lines.append(header)
    for claim in results.nodeclaims:
        cheapest = claim.cheapest
        lines.append(
            f"{claim.name:<22} {claim.nodepool:<14} {cheapest.instance_type:<16} {cheapest.capacity_type:<10} "
            f"{cheapest.zone:<12} {cheapest.price:>8.4f}  {len(claim.pods)}"
        )
        lines.append(f"    pods: {', '.join(claim.pods)}")
        overlay = _overlay_of(cheapest, overlaid) if overlaid is not None else None
        if overlay:
            lines.append(f"    price set by NodeOverlay {overlay}")
        alternatives = ", ".join(claim.instance_types[1:6])
        if alternatives:
            more = len(claim.instance_types) - 6
            lines.append(f"    fallbacks: {alternatives}{f' (+{more} more)' if more > 0 else ''}")
    if not results.nodeclaims:
        lines.append("(no new NodeClaims)")
    if results.existing:
        lines.append("")
        lines.append("ON EXISTING CAPACITY")
        for name, pods in sorted(results.existing.items()):
            lines.append(f"  {name}: {', '.join(pods)}")
    if results.unschedulable:
        lines.append("")
        lines.append("UNSCHEDULABLE")
        for item in results.unschedulable:
            lines.append(f"  {item.pod}: {item.reason}")
    if overlaid is not None and overlaid.refused:
        lines.append("")
        lines.append("NODEOVERLAYS REFUSED")
        for r in sorted(overlaid.refused.values(), key=lambda r: r.overlay):
            lines.append(f"  {r.overlay}: {r.reason}: {r.message}")
    placed = sum(len(c.pods) for c in results.nodeclaims) + sum(len(p) for p in results.existing.values())
    lines.append("")
    lines.append(
        f"TOTAL ${results.cost_per_hour:.4f}/hour for {len(results.nodeclaims)} new NodeClaims; "
        f"{placed} pods placed, {len(results.unschedulable)} unschedulable"
    )
    return "\n".join(lines)
