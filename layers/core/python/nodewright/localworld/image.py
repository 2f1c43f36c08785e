"""The forwarder image's contents without a container engine: what cluster/forwarder/Dockerfile installs, laid out
the same way in a directory and run by a fresh interpreter.

`install_package_set(python, target)` runs the Dockerfile's own pip command (hash-checked wheels from
requirements.txt, `--no-deps --target`) with `python` (a fresh virtual environment's, so nothing of the project's
environment is importable) and copies the modules the Dockerfile's COPY lines name. Run `python -m
nodewright.forwarder` with PYTHONPATH=`target`, as the image's ENV does, and it is the image's forwarder.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

from nodewright.localworld import world

DOCKERFILE = Path("cluster") / "forwarder" / "Dockerfile"
REQUIREMENTS = Path("cluster") / "forwarder" / "requirements.txt"
IMAGE_ROOT = "/opt/forwarder"


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
