"""`make package` from the tests: the charts and the forwarder image, and when the image can be built here."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package(dist: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """`make package` (scripts/package.sh) into `dist`, with `env` on top of this process's environment."""
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "package.sh")],
        env={**os.environ, "NODEWRIGHT_DIST": str(dist), **env},
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )


def can_build_image() -> bool:
    """The default image builder runs mmdebstrap and the image's tests run its entrypoint under chroot: both as
    root (CI and the local world's machines are)."""
    return os.geteuid() == 0
