"""The forwarder image's contents without a container engine: what cluster/forwarder/Dockerfile installs, laid out
the same way in a directory and run by a fresh interpreter.

`install_package_set(python, target)` runs the Dockerfile's own pip command (hash-checked wheels from
requirements.txt, `--no-deps --target`) with `python` (a fresh virtual environment's, so nothing of the project's
environment is importable) and copies the modules the Dockerfile's COPY lines name. Run `python -m
nodewright.forwarder` with PYTHONPATH=`target`, as the image's ENV does, and it is the image's forwarder.

`build_image(out, version, workdir)` (`python -m nodewright.localworld.image`, what `make package` runs where no
Docker daemon is) writes the image itself as an archive `docker load` and `crane push` read, with no container
engine: a base layer of Debian bookworm's own Python 3.11 (`mmdebstrap --variant=essential`, with the security
and updates suites) and a layer of that same /opt/forwarder plus the `python` command the ENTRYPOINT names, under
the config the Dockerfile's last stage declares (ENV, USER, EXPOSE, ENTRYPOINT). It differs from the Dockerfile's
build in one way, its base: Debian's python3.11 package rather than the python:3.11-slim-bookworm image, for the
host's architecture only (buildx builds both).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from nodewright.localworld import world
from nodewright.localworld.oci_archive import ImageConfig, Layer, TreeEntry, write_image, write_layer

DOCKERFILE = Path("cluster") / "forwarder" / "Dockerfile"
REQUIREMENTS = Path("cluster") / "forwarder" / "requirements.txt"
IMAGE_ROOT = "/opt/forwarder"
IMAGE_NAME = "nodewright-forwarder"
DEBIAN_SUITE = "bookworm"
DEBIAN_SOURCES = (
    "deb http://deb.debian.org/debian bookworm main",
    "deb http://deb.debian.org/debian bookworm-updates main",
    "deb http://deb.debian.org/debian-security bookworm-security main",
)
# Python 3.11 and its standard library (ssl, ctypes, sqlite3 included) and the system's CA bundle for a proxy
# that re-signs TLS; everything else comes from requirements.txt.
BASE_PACKAGES = ("python3.11-minimal", "libpython3.11-stdlib", "ca-certificates")
# Documentation, manual pages and translations: nothing in the image reads them.
EXCLUDED_PATHS = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*")
BASE_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PYTHON_LINK = ("usr/local/bin/python", "/usr/bin/python3.11")


def copied_files(dockerfile: Path | None = None) -> list[tuple[Path, str]]:
    """(repository file, path under the image's /opt/forwarder) for every file the Dockerfile's COPY lines take
    from the repository's nodewright package (directories expanded to their .py files)."""
    root = world.repo_root()
    text = (dockerfile or root / DOCKERFILE).read_text()
    out: list[tuple[Path, str]] = []
    for line in text.splitlines():
        if not line.startswith("COPY layers/"):
            continue
        *sources, destination = shlex.split(line)[1:]
        for source in sources:
            path = root / source
            files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
            for file in files:
                relative = file.relative_to(path).as_posix() if path.is_dir() else file.name
                out.append((file, destination.removeprefix(IMAGE_ROOT + "/") + relative))
    return out


def pip_command(dockerfile: Path | None = None) -> list[str]:
    """The arguments of the Dockerfile's `pip install` (after `pip`), with its paths."""
    text = (dockerfile or world.repo_root() / DOCKERFILE).read_text()
    match = re.search(r"^RUN pip (install .+)$", text, re.MULTILINE)
    if match is None:
        raise ValueError("the Dockerfile has no `RUN pip install` line")
    return shlex.split(match.group(1))


def install_package_set(python: str, target: Path) -> None:
    """Lay out the image's /opt/forwarder under `target` with `python`'s pip (see the module doc)."""
    args = pip_command()
    args[args.index("/tmp/requirements.txt")] = str(world.repo_root() / REQUIREMENTS)
    args[args.index(IMAGE_ROOT)] = str(target)
    done = subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pip install of the forwarder's package set failed:\n{done.stdout[-2000:]}{done.stderr}")
    for source, relative in copied_files():
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)


# --------------------------------------------------------------------------------- the image archive


def image_config(architecture: str, version: str, dockerfile: Path | None = None) -> ImageConfig:
    """The config of the Dockerfile's last stage (its ENV, USER, EXPOSE and ENTRYPOINT lines), over a base whose
    PATH finds `python` in /usr/local/bin as python:3.11-slim's does."""
    text = (dockerfile or world.repo_root() / DOCKERFILE).read_text()
    final = text.rsplit("\nFROM ", 1)[-1]
    env, user, entrypoint, ports = [BASE_PATH], "", list[str](), list[str]()
    for line in final.splitlines():
        instruction, _, rest = line.partition(" ")
        if instruction == "ENV":
            env.extend(shlex.split(rest))
        elif instruction == "USER":
            user = rest.strip()
        elif instruction == "EXPOSE":
            ports.extend(p if "/" in p else f"{p}/tcp" for p in rest.split())
        elif instruction == "ENTRYPOINT":
            entrypoint = json.loads(rest)
    if not user or not entrypoint:
        raise ValueError(f"{DOCKERFILE}: the last stage needs a USER and an exec-form ENTRYPOINT")
    labels = {"org.opencontainers.image.title": IMAGE_NAME, "org.opencontainers.image.version": version}
    return ImageConfig(architecture, env, user, entrypoint, ports, labels)


def ensure_mmdebstrap() -> str:
    """mmdebstrap's path, installed with apt-get when missing and this process is root. Raises RuntimeError
    saying what to install otherwise."""
    found = shutil.which("mmdebstrap")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        install = ["apt-get", "install", "-y", "--no-install-recommends", "mmdebstrap"]
        if subprocess.run(install, capture_output=True, check=False).returncode != 0:
            subprocess.run(["apt-get", "update"], capture_output=True, check=True)
            subprocess.run(install, capture_output=True, check=True)
        found = shutil.which("mmdebstrap")
    if not found:
        raise RuntimeError("building the image without Docker needs mmdebstrap: apt-get install mmdebstrap (as root)")
    return found


def base_layer(out: Path, epoch: int) -> Layer:
    """Debian bookworm's essential packages and Python 3.11 as a layer tar (see the module doc)."""
    command = [
        ensure_mmdebstrap(),
        "--variant=essential",
        "--include=" + ",".join(BASE_PACKAGES),
        *(f"--dpkgopt=path-exclude={path}" for path in EXCLUDED_PATHS),
        DEBIAN_SUITE,
        str(out),
        *DEBIAN_SOURCES,
    ]
    done = subprocess.run(
        command, env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)}, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"mmdebstrap failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return Layer.of(out, f"mmdebstrap --variant=essential --include={','.join(BASE_PACKAGES)} {DEBIAN_SUITE}")


def forwarder_layer(out: Path, opt: Path, epoch: int) -> Layer:
    """/opt/forwarder as the Dockerfile lays it out (pip's hash-checked wheels, the forwarder's modules, compiled)
    and the `python` command, as a layer tar."""
    install_package_set(sys.executable, opt)
    # Compiled as the image's /opt/forwarder (tracebacks name that path, not this build's directory), forced over
    # pip's timestamped files, unchecked-hash: the bytecode does not depend on when or where it was built.
    compile_all = [sys.executable, "-m", "compileall", "-q", "-f", "--invalidation-mode", "unchecked-hash"]
    compile_all += ["-s", str(opt), "-p", IMAGE_ROOT, str(opt)]
    subprocess.run(compile_all, check=True)
    entries = [
        TreeEntry("opt", mode=0o755),
        *_tree(opt, IMAGE_ROOT.lstrip("/")),
        TreeEntry(PYTHON_LINK[0], link=PYTHON_LINK[1]),
    ]
    write_layer(out, entries, epoch)
    return Layer.of(out, "pip install --require-hashes --only-binary=:all: --no-deps; COPY the forwarder's modules")


def _tree(directory: Path, name: str) -> Iterator[TreeEntry]:
    yield TreeEntry(name, mode=0o755)
    for path in sorted(directory.rglob("*")):
        relative = f"{name}/{path.relative_to(directory).as_posix()}"
        if path.is_symlink():
            yield TreeEntry(relative, link=os.readlink(path))
        elif path.is_dir():
            yield TreeEntry(relative, mode=0o755)
        else:
            yield TreeEntry(relative, source=path, mode=path.stat().st_mode & 0o755 | 0o644)


def build_image(out: Path, version: str, workdir: Path, epoch: int) -> str:
    """Write the forwarder image `nodewright-forwarder:<version>` to `out` (see the module doc), using `workdir`
    for its layers; `epoch` (SOURCE_DATE_EPOCH) stamps every file and the image's creation time. Returns the
    manifest digest."""
    architecture = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True)
    layers = [
        base_layer(workdir / "base.tar", epoch),
        forwarder_layer(workdir / "forwarder.tar", workdir / "opt", epoch),
    ]
    config = image_config(architecture.stdout.strip(), version)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    return write_image(out, f"{IMAGE_NAME}:{version}", layers, config, created)


def _source_date_epoch() -> int:
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return int(os.environ["SOURCE_DATE_EPOCH"])
    done = subprocess.run(
        ["git", "-C", str(world.repo_root()), "log", "-1", "--format=%ct"], capture_output=True, text=True, check=False
    )
    return int(done.stdout.strip() or 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nodewright.localworld.image", description=build_image.__doc__)
    parser.add_argument("--out", type=Path, required=True, help="the archive to write")
    parser.add_argument("--version", required=True, help="the image's tag")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nodewright-image-") as workdir:
        try:
            digest = build_image(args.out, args.version, Path(workdir), _source_date_epoch())
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
    print(f"{IMAGE_NAME}:{args.version} {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
