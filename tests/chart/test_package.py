"""`make package` (scripts/package.sh): the charts as `helm package` archives a registry takes with `helm push`,
installable from the archive, and the forwarder image only where a Docker daemon runs (said plainly otherwise)."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest
import yaml
from conftest import REQUIRED, ROOT, run_helm

from nodewright import __version__


def _package(dist: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "package.sh")],
        env={**os.environ, "NODEWRIGHT_DIST": str(dist), **env},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = _package(out, NODEWRIGHT_PACKAGE_IMAGE="0")
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def test_both_charts_are_packaged_as_name_version_archives(dist: Path) -> None:
    # `helm push <chart>-<version>.tgz oci://...` takes exactly this layout: the name and version in the file name.
    assert sorted(p.name for p in dist.iterdir()) == [
        f"nodewright-{__version__}.tgz",
        f"nodewright-crd-{__version__}.tgz",
    ]
    with tarfile.open(dist / f"nodewright-{__version__}.tgz") as archive:
        names = set(archive.getnames())
        chart = yaml.safe_load(archive.extractfile("nodewright/Chart.yaml").read())  # type: ignore[union-attr]
    assert chart["version"] == chart["appVersion"] == __version__
    assert {"nodewright/values.schema.json", "nodewright/templates/deployment.yaml"} <= names
    assert {f"nodewright/crds/nodewright.io_{p}.yaml" for p in ("nodepools", "ec2nodeclasses", "nodeclaims")} <= names
    with tarfile.open(dist / f"nodewright-crd-{__version__}.tgz") as archive:
        assert "nodewright-crd/templates/nodewright.io_nodepools.yaml" in archive.getnames()


def test_the_archive_installs_as_the_chart_directory_does(helm: Path, dist: Path) -> None:
    args = ["template", "nodewright", str(dist / f"nodewright-{__version__}.tgz"), "-n", "kube-system"]
    for value in REQUIRED:
        args += ["--set", value]
    done = run_helm(helm, *args)
    assert done.returncode == 0, done.stderr
    kinds = {d["kind"] for d in yaml.safe_load_all(done.stdout) if d}
    assert {"Deployment", "ServiceAccount", "PodDisruptionBudget", "Role", "ClusterRole"} <= kinds
    # The schema travels with the archive: a misspelled setting is refused from it too.
    done = run_helm(helm, *args, "--set", "settings.NODEWRIGHT_FORWARDER_IDEL_SECONDS=1")
    assert done.returncode != 0 and "NODEWRIGHT_FORWARDER_IDEL_SECONDS" in done.stderr


def test_without_a_docker_daemon_the_charts_are_written_and_the_missing_image_is_an_error(tmp_path: Path) -> None:
    done = _package(tmp_path, DOCKER_HOST="unix:///nonexistent/docker.sock")
    assert done.returncode == 1
    assert "no Docker daemon reachable" in done.stderr and "NODEWRIGHT_PACKAGE_IMAGE=0" in done.stderr
    assert (tmp_path / f"nodewright-{__version__}.tgz").exists()
    assert not list(tmp_path.glob("nodewright-forwarder-*.tar"))
