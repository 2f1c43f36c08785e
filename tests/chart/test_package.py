"""`make package` (scripts/package.sh): the charts as `helm package` archives a registry takes with `helm push`,
installable from the archive, and the forwarder image as an archive `docker load` and registries read, built
without a container engine; the Docker builder says plainly when no daemon runs."""

from __future__ import annotations

import json
import marshal
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REQUIRED, run_helm

from nodewright import __version__
from nodewright.localworld.image import REQUIREMENTS, copied_files
from nodewright.localworld.oci_archive import unpack
from tests.package_build import can_build_image, package

ROOT = Path(__file__).resolve().parents[2]
CHROOT = "/usr/sbin/chroot"


@pytest.fixture(scope="module")
def dist(packaged: Path) -> Path:
    return packaged


def test_both_charts_are_packaged_as_name_version_archives(dist: Path) -> None:
    # `helm push <chart>-<version>.tgz oci://...` takes exactly this layout: the name and version in the file name.
    image = [f"nodewright-forwarder-{__version__}.tar"] if can_build_image() else []
    assert sorted(p.name for p in dist.iterdir()) == sorted(
        [f"nodewright-{__version__}.tgz", f"nodewright-crd-{__version__}.tgz", *image]
    )
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
    done = package(tmp_path, NODEWRIGHT_IMAGE_BUILDER="docker", DOCKER_HOST="unix:///nonexistent/docker.sock")
    assert done.returncode == 1
    assert "no Docker daemon reachable" in done.stderr and "NODEWRIGHT_PACKAGE_IMAGE=0" in done.stderr
    assert (tmp_path / f"nodewright-{__version__}.tgz").exists()
    assert not list(tmp_path.glob("nodewright-forwarder-*.tar"))


@pytest.fixture(scope="module")
def archive(dist: Path) -> Path:
    """The forwarder image's archive; where this process is not root, `make package` could not build it."""
    if not can_build_image():
        pytest.skip("building and running the image needs root (mmdebstrap, chroot)")
    return dist / f"nodewright-forwarder-{__version__}.tar"


@pytest.fixture(scope="module")
def image(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The forwarder image's filesystem, unpacked from the archive as a container runtime lays it out (every blob
    checked against its digest), and its config."""
    root = tmp_path_factory.mktemp("rootfs")
    return root, unpack(archive, root)


def _run(root: Path, config: dict[str, Any], *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`argv` (default: the entrypoint) in the image as a runtime runs it: its user, its environment only."""
    settings = dict(e.split("=", 1) for e in config["config"]["Env"])
    command = [CHROOT, f"--userspec={config['config']['User']}", str(root), *(argv or config["config"]["Entrypoint"])]
    return subprocess.run(command, env={**settings, **env}, capture_output=True, text=True, timeout=120, check=False)


def test_the_image_archive_is_what_docker_load_and_registries_read(archive: Path) -> None:
    with tarfile.open(archive) as tar:

        def read(name: str) -> Any:
            stream = tar.extractfile(name)
            assert stream is not None, name
            return json.loads(stream.read())

        # Docker's `docker save` manifest and the OCI layout's index name the same image.
        [docker] = read("manifest.json")
        assert docker["RepoTags"] == [f"nodewright-forwarder:{__version__}"]
        assert read("oci-layout") == {"imageLayoutVersion": "1.0.0"}
        [entry] = read("index.json")["manifests"]
        assert entry["annotations"]["io.containerd.image.name"] == f"nodewright-forwarder:{__version__}"
        manifest = read("blobs/sha256/" + entry["digest"].removeprefix("sha256:"))
        assert "blobs/sha256/" + manifest["config"]["digest"].removeprefix("sha256:") == docker["Config"]
        assert [f"blobs/sha256/{la['digest'].removeprefix('sha256:')}" for la in manifest["layers"]] == docker["Layers"]
        assert len(docker["Layers"]) == 2  # Debian with Python, then the forwarder


def test_the_image_has_the_dockerfiles_config_and_exactly_its_files(image: tuple[Path, dict[str, Any]]) -> None:
    root, config = image
    assert config["architecture"] == subprocess.check_output(["dpkg", "--print-architecture"], text=True).strip()
    assert config["config"] == {
        **config["config"],
        "User": "65532:65532",
        "Entrypoint": ["python", "-m", "nodewright.forwarder"],
        "ExposedPorts": {"8080/tcp": {}},
    }
    assert {"PYTHONPATH=/opt/forwarder", "PYTHONDONTWRITEBYTECODE=1"} <= set(config["config"]["Env"])
    # The forwarder's modules, byte for byte, and no other part of nodewright.
    for source, relative in copied_files():
        assert (root / "opt" / "forwarder" / relative).read_bytes() == source.read_bytes(), relative
    shipped = {p.relative_to(root / "opt" / "forwarder").as_posix() for p in (root / "opt/forwarder").rglob("*.py")}
    assert {r for r in shipped if r.startswith("nodewright/")} == {r for _, r in copied_files()}
    # Compiled for where they are: a traceback names /opt/forwarder, not the build's directory.
    compiled = root / "opt/forwarder/nodewright/forwarder/__pycache__/app.cpython-311.pyc"
    assert marshal.loads(compiled.read_bytes()[16:]).co_filename == "/opt/forwarder/nodewright/forwarder/app.py"
    # Every pinned package at its pinned version, and no pip, compiler or package manager to run.
    pinned = re.findall(r"^([a-z0-9_.-]+)==(\S+) \\$", (ROOT / REQUIREMENTS).read_text(), re.MULTILINE)
    installed = {p.name.lower() for p in (root / "opt/forwarder").glob("*.dist-info")}
    for name, version in pinned:
        assert f"{re.sub(r'[-.]+', '_', name)}-{version}.dist-info".lower() in installed, name
    assert not [p for p in ("usr/bin/pip3", "usr/bin/gcc", "usr/bin/apt-get") if (root / p).exists()]


def test_the_images_entrypoint_runs_the_forwarder_as_an_unprivileged_user(image: tuple[Path, dict[str, Any]]) -> None:
    root, config = image
    # Every module of the forwarder and its clients import under the image's Python, as user 65532.
    imports = "import nodewright.forwarder.__main__, nodewright.forwarder.app, nodewright.forwarder.kube"
    done = _run(root, config, "python", "-c", f"{imports}, kubernetes, boto3, aiohttp, os; print(os.getuid())")
    assert done.returncode == 0 and done.stdout.strip() == "65532", done.stderr[-2000:]
    # The entrypoint starts the forwarder, which reads its settings and names the one missing (exit 2 by design).
    done = _run(root, config)
    assert done.returncode == 2 and "NODEWRIGHT_CLUSTER" in done.stdout + done.stderr, done.stderr[-2000:]
