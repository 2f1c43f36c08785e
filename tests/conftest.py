"""Fixtures shared across the test directories."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# `tests.*` modules (the benches, the package build) import from the repository root, wherever pytest starts.
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.package_build import can_build_image, package


@pytest.fixture(scope="session")
def packaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`make package` once for the session: the two charts and, where `can_build_image()`, the forwarder image
    (about a minute: a Debian base from the package mirror, the wheels from PyPI)."""
    dist = tmp_path_factory.mktemp("dist")
    done = package(dist, **({} if can_build_image() else {"NODEWRIGHT_PACKAGE_IMAGE": "0"}))
    assert done.returncode == 0, done.stderr[-3000:]
    return dist
