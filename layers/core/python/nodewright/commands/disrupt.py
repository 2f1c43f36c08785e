"""`nodewright disrupt [--json] [--now RFC3339] FILE...`: what would the planner take away, and why?

FILEs hold a cluster snapshot as multi-document YAML or `kubectl get -o yaml` List output: NodePools,
EC2NodeClasses, NodeClaims, Nodes, the Pods bound to them (and pending ones), PodDisruptionBudgets and DaemonSets.
For example:

    kubectl get nodepools.nodewright.io,ec2nodeclasses.nodewright.io,nodeclaims.nodewright.io,nodes,pods,\\
        poddisruptionbudgets,daemonsets -A -o yaml > cluster.yaml
    nodewright disrupt cluster.yaml

The decision is the planner's own (`disruption.plan`: expiration, emptiness, drift, multi-node and single-node
consolidation, under the NodePools' budgets), with prices from the shipped catalog. Drift is told from the hashes
stamped on the NodeClaims and from the NodePools' requirements; AMI, subnet and security group drift need the
cloud, so for those the NodeClaims' `Drifted` condition (written by the planner) stands. Workloads (Deployments,
ReplicaSets, ...) are refused: the snapshot holds the pods that run, not the ones a controller would create.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from typing import Any

from nodewright.catalog.snapshot import SnapshotSource
from nodewright.disruption.drift import drift_reason
from nodewright.disruption.plan import Plan, plan
from nodewright.disruption.state import ClusterState, DisruptionSettings, cluster_state
from nodewright.model.errors import ValidationError
from nodewright.model.loader import WORKLOAD_KINDS, load_sources, read_files


def add_parser(subparsers: Any) -> None:
    """Register the `disrupt` sub-command."""
    parser = subparsers.add_parser(
        "disrupt",
        help="print what the planner would disrupt in a cluster snapshot, and why",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="multi-document YAML or List files")
    parser.add_argument("--json", action="store_true", help="print the decisions as one JSON document")
    parser.add_argument(
        "--now", metavar="RFC3339", help="decide as at this time, e.g. 2027-01-15T08:00:00Z (default: now)"
    )
    parser.add_argument(
        "--no-node-repair",
        dest="node_repair",
        action="store_false",
        help="decide as a planner with node repair turned off (the stack's nodeRepair=false)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the snapshot and decide; 0 on success (even when nothing is disrupted), 1 on invalid input."""
    now = _now(args.now)
    if now is None:
        print(f"--now: {args.now!r} is not an RFC 3339 time such as 2027-01-15T08:00:00Z", file=sys.stderr)
        return 1
    loaded = _load(args.files, now, DisruptionSettings(node_repair=args.node_repair))
    if isinstance(loaded, list):
        for error in loaded:
            print(error, file=sys.stderr)
        print(f"{len(loaded)} error{'s' if len(loaded) != 1 else ''} found", file=sys.stderr)
        return 1
    state = loaded
    decided = plan(state, _drift(state))
    shown = decided.to_json(state)
    print(json.dumps(shown, indent=2) if args.json else render_table(shown, decided))
    return 0


def _now(text: str | None) -> float | None:
    if not text:
        return datetime.now().timestamp()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _load(files: list[str], now: float, settings: DisruptionSettings) -> ClusterState | list[ValidationError]:
    """The snapshot as the planner would see it, or every error (the same ones `validate` prints)."""
    sources, errors = read_files(files)
    for docs, source in sources:
        for doc in docs:
            kind = doc.get("kind") if isinstance(doc, dict) else None
            if kind in WORKLOAD_KINDS:
                name = str((doc.get("metadata") or {}).get("name", ""))
                errors.append(
                    ValidationError(
                        source,
                        str(kind),
                        name,
                        "kind",
                        f"disrupt reads the pods that run, not workloads: leave {kind} out of the snapshot "
                        "(kubectl get pods -A -o yaml lists the pods)",
                    )
                )
    loaded = load_sources(sources)
    errors.extend(loaded[1])
    if errors:
        return errors
    documents = [doc for docs, _ in sources for doc in docs if isinstance(doc, dict)]
    state, _ = cluster_state(documents, SnapshotSource().instance_types(), now, settings=settings, loaded=loaded)
    return state


def _drift(state: ClusterState) -> dict[str, str]:
    """Drift as the snapshot tells it: hashes and requirements now, the cloud's reasons as last recorded."""
    out: dict[str, str] = {}
    catalog = frozenset(it.name for it in state.catalog)
    for member in state.fleet:
        pool = state.pools.get(member.nodepool)
        if pool is not None:
            node_class = state.inputs.nodeclass(pool.node_class_ref.name)
            it = state.listed_type(member)
            out[member.nodeclaim] = drift_reason(member, pool, node_class, it, catalog=catalog, now=state.now)
    return out


def render_table(shown: dict[str, Any], decided: Plan) -> str:
    """The human-readable report: each node to disrupt, every node left alone with why, the cost before/after."""
    lines = [f"{'NODECLAIM':<28} {'NODE':<28} {'METHOD':<12} {'REASON':<14} {'PODS':>4} {'SAVES $/H':>9}  REPLACEMENT"]
    for c in shown["commands"]:
        replacement = c["replacement"]
        what = "-"
        if replacement is not None:
            types = replacement["instance_types"]
            more = f" (+{len(types) - 3} more)" if len(types) > 3 else ""
            capacity = "/".join(replacement["capacity_types"])
            what = f"{', '.join(types[:3])}{more} {capacity} from ${replacement['price_per_hour']:.4f}/h"
            if len(c["replacements"]) > 1:
                what += f" (+{len(c['replacements']) - 1} more nodeclaim(s))"
        if c.get("condition"):  # a repair says why the node is unhealthy
            what = c["condition"] if what == "-" else f"{c['condition']}; {what}"
        lines.append(
            f"{c['nodeclaim']:<28} {c['node']:<28} {c['method']:<12} {c['reason']:<14} {len(c['pods']):>4} "
            f"{c['savings_per_hour']:>9.4f}  {what}"
        )
    if not shown["commands"]:
        lines.append("(nothing to disrupt)")
    if shown["skipped"]:
        lines.append("")
        lines.append("LEFT ALONE")
        lines.extend(f"  {s['nodeclaim']}: {s['reason']}" for s in shown["skipped"])
    lines.append("")
    figures = ", ".join(f"{m.method} {m.eligible} eligible" for m in decided.methods)
    lines.append(f"COST ${shown['cost_per_hour_before']:.4f}/hour now, ${shown['cost_per_hour_after']:.4f}/hour after")
    lines.append(f"({figures})")
    return "\n".join(lines)
