"""One version everywhere: the package, the chart and the CHANGELOG; and nothing a user reads links outside the
repository."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from nodewright import __version__

ROOT = Path(__file__).resolve().parents[2]
READ_BY_USERS = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "cluster" / "README.md",
    *(ROOT / "docs").rglob("*.md"),
    *(ROOT / "functions").glob("*/README.md"),
    ROOT / "layers" / "core" / "python" / "nodewright" / "catalog" / "README.md",
]


def test_the_chart_and_the_changelog_carry_the_package_version() -> None:
    chart = yaml.safe_load((ROOT / "charts" / "nodewright" / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == __version__
    first = re.search(r"^## (\S+)", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert first and first.group(1) == __version__


def test_the_license_is_apache_2() -> None:
    assert "Apache License" in (ROOT / "LICENSE").read_text() and "Version 2.0" in (ROOT / "LICENSE").read_text()


def test_links_stay_inside_the_repository() -> None:
    for page in READ_BY_USERS:
        for target in re.findall(r"\]\(([^)#]+)", page.read_text()):
            assert not target.startswith(("http:", "https:")), (page, target)
            resolved = (page.parent / target).resolve()
            assert resolved.is_relative_to(ROOT) and resolved.exists(), (page, target)
