"""Count the disruption conformance ports by the Karpenter file each mirrors: cases, passing, skipped (with reasons).

Usage: .venv/bin/python scripts/conformance_counts.py [tests/conformance/disruption]
Runs pytest on the directory (junit XML in a temporary file) and prints a Markdown table, then the skip reasons
grouped; the "Karpenter's disruption tests" section of docs/reference/conformance.md is this output.
"""

from __future__ import annotations

import collections
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path


def _karpenter_file(module: Path) -> str:
    """The Karpenter file a test module names (`FILE = "..."`)."""
    found = re.search(r'^FILE = "([^"]+)"', module.read_text(), re.M)
    return found.group(1) if found else module.name


def _row(name: str, c: collections.Counter[str]) -> str:
    return f"| {name} | {sum(c.values())} | {c['passed']} | {c['skipped']} | {c['xfail']} | {c['failed']} |"


def main(directory: str = "tests/conformance/disruption") -> int:
    with tempfile.NamedTemporaryFile(suffix=".xml") as report:
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", directory, f"--junitxml={report.name}"],
            check=False,
            capture_output=True,
        )
        tree = ET.parse(report.name)
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    reasons: collections.Counter[str] = collections.Counter()
    for case in tree.iter("testcase"):
        module = Path(*str(case.get("classname", "")).split(".")).with_suffix(".py")
        target = _karpenter_file(module)
        skipped = case.find("skipped")
        failed = case.find("failure") is not None or case.find("error") is not None
        outcome = "failed" if failed else "passed"
        if skipped is not None:
            outcome = "xfail" if skipped.get("type") == "pytest.xfail" else "skipped"
            if outcome == "skipped":
                reasons[str(skipped.get("message", "")).removeprefix("Skipped: ")] += 1
        counts[target][outcome] += 1
    print("| Karpenter v1.14.1 file | cases | pass | skipped | xfail | failed |")
    print("|---|---|---|---|---|---|")
    total: collections.Counter[str] = collections.Counter()
    for target, c in sorted(counts.items()):
        total.update(c)
        print(_row(f"`{target}`", c))
    print(_row("all", total))
    print()
    for reason, n in reasons.most_common():
        print(f"- {n} x {reason}")
    return 1 if total["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
