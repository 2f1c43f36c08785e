"""`nodewright explain-event FILE [--json] [--rebalance MODE]`: what would nodewright do with this event?

FILE holds one EventBridge event as JSON (`-` reads standard input), e.g. a Spot interruption warning
copied from the console or from the interruption queue's dead-letter queue. The event is parsed by the same
code as the interruption Lambda and decided the same way, with one difference: without a cluster there is no
telling which instances are this cluster's, so every instance is assumed to be one (the reason says so).
Events nodewright does not act on (a state change to running, a Health event for RDS) say why.

Prints one line (`ACTION: instances - reason`), or with --json one object:
{"action": "interrupt" | "rebalance" | "ignore", "instances": [...], "reason": "...", "deadline": "..." | null},
the deadline counted from receipt, here the event's own time.
A malformed event exits 1 with an error naming the field (`detail.instance-id: missing`).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nodewright.interruption.decide import REBALANCE_MODES, REBALANCE_REPLACE, decide, ignored_reason
from nodewright.interruption.messages import SPOT_WARNING, EventError, parse_event
from nodewright.interruption.ownership import OwnedInstance
from nodewright.service.provision import UNAVAILABLE_TTL_SECONDS

ASSUMED = "assuming the instances belong to this cluster (explain-event reads no cluster)"


def add_parser(subparsers: Any) -> None:
    """Register the `explain-event` sub-command."""
    parser = subparsers.add_parser(
        "explain-event",
        help="explain what nodewright would do with one EventBridge event (assumes the instances are owned)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", metavar="FILE", help="a JSON file holding one EventBridge event, or - for stdin")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--rebalance",
        choices=REBALANCE_MODES,
        default=REBALANCE_REPLACE,
        help="the rebalance mode to explain with (NODEWRIGHT_REBALANCE of the deployed function; default replace)",
    )
    parser.set_defaults(func=run)


def explain(event: Any, rebalance_mode: str = REBALANCE_REPLACE) -> dict[str, Any]:
    """The explanation of one decoded event; raises EventError when it is malformed."""
    message = parse_event(event)
    # Every instance counts as owned; nodeclaim and node are unknown, so the reasons name the instance only.
    owned = {i: OwnedInstance(i, "") for i in message.instance_ids}
    # Decided as if received when it was sent, so the same file always gives the same answer (the deadline of a
    # drain counts from receipt).
    plan = decide(message, owned, rebalance_mode, message.time)
    reason = plan.reason
    if message.kind == SPOT_WARNING and plan.action != "ignore":
        reason += f"; its offering (instance type, zone, spot) is marked unavailable for {UNAVAILABLE_TTL_SECONDS} s"
    if message.instance_ids and ignored_reason(message) is None:
        reason += f"; {ASSUMED}"
    deadline = plan.commands[0].deadline if plan.commands else None
    return {
        "action": plan.action,
        "instances": list(message.instance_ids),
        "reason": reason,
        "deadline": _iso(deadline) if deadline is not None else None,
    }


def run(args: argparse.Namespace) -> int:
    """Explain the event in `args.file`; 0 when it could be read, 1 when it is unreadable or malformed."""
    name = "<stdin>" if args.file == "-" else args.file
    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    except OSError as error:
        print(f"{name}: cannot read: {error.strerror or error}", file=sys.stderr)
        return 1
    try:
        event = json.loads(text)
    except json.JSONDecodeError as error:
        print(f"{name}: not JSON: {error}", file=sys.stderr)
        return 1
    try:
        result = explain(event, args.rebalance)
    except EventError as error:
        print(f"{name}: {error}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        instances = ", ".join(result["instances"]) or "(no instances)"
        # The reason already says "by <deadline>" where there is one.
        print(f"{result['action'].upper()}: {instances} - {result['reason']}")
    return 0


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
