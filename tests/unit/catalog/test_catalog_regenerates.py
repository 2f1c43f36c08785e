"""The committed catalog snapshot is what scripts/gen_catalog.py writes from files in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_snapshot_regenerates_byte_for_byte_from_the_repository(tmp_path: Path) -> None:
    out = tmp_path / "us-east-1.json.gz"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_catalog.py"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    committed = ROOT / "layers" / "core" / "python" / "nodewright" / "catalog" / "data" / "us-east-1.json.gz"
    assert out.read_bytes() == committed.read_bytes(), "run .venv/bin/python scripts/gen_catalog.py"
