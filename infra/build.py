"""Build the Lambda code and layers locally with pip, without Docker, into a cache keyed by their inputs.

Every bundle is a directory in `<cache>/bundles/<name>-<key>` where the key hashes everything that
shapes it (source files, requirement pins, target platform, interpreter). A synth with unchanged inputs
finds the directory and does nothing; a changed input builds a new directory beside the old one, into a
temporary name first and renamed when complete, so an interrupted build is never mistaken for a finished
one. The CDK asset hash is the same key, which spares the CDK from fingerprinting large directories.

Python files are compiled ahead (`compileall`) with unchecked-hash invalidation: Lambda unpacks the zip
read-only and zip timestamps are only 2-second accurate, so timestamp-checked `.pyc` files would be
judged stale and every cold start would recompile in memory.
"""

from __future__ import annotations

import ast
import compileall
import hashlib
import os
import py_compile
import re
import shutil
import subprocess
import sys
import tomllib
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from nodewright.adapters import aws_sdk

REPO_ROOT = Path(__file__).resolve().parent.parent
CORE_SOURCE = REPO_ROOT / "layers" / "core" / "python" / "nodewright"

# The Lambda runtime and architecture the bundles are built for (the function uses the same).
PYTHON_VERSION = "3.11"
PIP_PLATFORM = "manylinux2014_aarch64"  # the python3.11 runtime runs on Amazon Linux 2 (glibc 2.26)

# Parts of the nodewright package the Lambdas never run: the command line and the local world (developer
# tools) and the forwarder (it runs in the cluster, from its own image, see cluster/Dockerfile). They import
# the `kubernetes` package, which the Lambdas do not, so they stay out of the core layer.
CORE_EXCLUDED = ("localworld", "commands", "forwarder", "cli.py", "__main__.py")

# Run-time requirements the Lambdas do not import: the official Kubernetes client is the forwarder's; the
# Lambdas speak to the API server over urllib3 (adapters.kubernetes_cluster). Leaving it out halves the
# dependencies layer (it was 60 of 124 MB with its own dependencies), which Lambda downloads and unpacks on
# every cold start.
LAMBDA_EXCLUDED_REQUIREMENTS = ("kubernetes",)

_IGNORED_NAMES = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

# The X-Ray SDK's aiohttp integration is only imported by code that traces aiohttp explicitly, and
# aiohttp is not in the layer.
PRUNED_PATHS = ("aws_xray_sdk/ext/aiohttp",)


KEEP_PER_BUNDLE = 3

# The trimmed AWS service models (`nodewright.adapters.aws_sdk`) live in the dependencies layer, written
# from that layer's own botocore; functions find them at /opt/python/<this> through NODEWRIGHT_AWS_MODELS.
AWS_MODELS_DIR = "nodewright-aws-models"
LAYER_AWS_MODELS = f"/opt/python/{AWS_MODELS_DIR}"


class BuildError(RuntimeError):
    """A bundle could not be built (pip failed, or a source folder is missing)."""


@dataclass(frozen=True, slots=True)
class Bundle:
    """A built directory and the key that identifies its inputs (used as the CDK asset hash)."""

    path: Path
    key: str


def cache_root() -> Path:
    """Where bundles are cached: `$NODEWRIGHT_CACHE/bundles` (default `~/.cache/nodewright/bundles`),
    outside cdk.out so `cdk synth` after a clean still finds them."""
    root = os.environ.get("NODEWRIGHT_CACHE") or str(Path.home() / ".cache" / "nodewright")
    return Path(root) / "bundles"


def _source_files(root: Path, excluded: Sequence[str] = ()) -> list[Path]:
    files = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in _IGNORED_NAMES or part.endswith(".pyc") for part in relative.parts):
            continue
        if relative.parts and relative.parts[0] in excluded:
            continue
        if path.is_file():
            files.append(path)
    return files


def _digest(parts: Iterable[bytes]) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:24]


def _builder_fingerprint() -> bytes:
    # Any change to how bundles are built (this file) must rebuild them, not reuse an old layout.
    return Path(__file__).read_bytes()


def _tree_key(root: Path, files: Sequence[Path], extra: Sequence[str] = ()) -> str:
    parts: list[bytes] = [_builder_fingerprint(), f"python{PYTHON_VERSION}".encode(), *(e.encode() for e in extra)]
    for file in files:
        parts.append(file.relative_to(root).as_posix().encode())
        parts.append(file.read_bytes())
    return _digest(parts)


def _compile(directory: Path) -> None:
    ok = compileall.compile_dir(
        str(directory),
        quiet=1,
        workers=0,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    if not ok:
        raise BuildError(f"compileall reported errors under {directory}")


def _materialize(name: str, key: str, fill: Callable[[Path], None]) -> Bundle:
    """Return the cached bundle `name-key`, building it with `fill(tmp_dir)` when it is missing."""
    root = cache_root()
    target = root / f"{name}-{key}"
    if target.is_dir():
        os.utime(target)  # marks it recently used, so eviction keeps it
        return Bundle(target, key)
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{name}-{key}.{uuid.uuid4().hex[:8]}"
    try:
        fill(tmp)
        _compile(tmp)
        try:
            tmp.rename(target)
        except OSError:
            # Another synth finished the same bundle first; its copy is identical.
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _evict(root, name, keep=target)
    return Bundle(target, key)


def _evict(root: Path, name: str, keep: Path) -> None:
    """Drop all but the most recently used bundles of `name`, so edits do not fill the disk (a
    dependencies layer is over 100 MB); a few are kept for switching between branches."""
    siblings = sorted(
        (p for p in root.glob(f"{name}-*") if p.is_dir() and p != keep and p.name[len(name) + 1 :].isalnum()),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    for stale in siblings[KEEP_PER_BUNDLE - 1 :]:
        shutil.rmtree(stale, ignore_errors=True)


def _copy_files(source_root: Path, files: Sequence[Path], destination: Path) -> None:
    for file in files:
        out = destination / file.relative_to(source_root)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, out)


def function_bundle(source: Path, name: str) -> Bundle:
    """A function's folder (e.g. functions/provisioner) copied and compiled; the handler stays at the root."""
    if not source.is_dir():
        raise BuildError(f"function source {source} does not exist")
    files = _source_files(source)
    if not files:
        raise BuildError(f"function source {source} is empty")
    key = _tree_key(source, files, extra=[name])
    return _materialize(f"function-{name}", key, lambda tmp: _copy_files(source, files, tmp))


def core_layer_bundle(source: Path = CORE_SOURCE) -> Bundle:
    """The nodewright package (minus the developer-only parts) under `python/`, as Lambda layers expect."""
    files = _source_files(source, CORE_EXCLUDED)
    key = _tree_key(source, files, extra=["core", *CORE_EXCLUDED])

    def fill(tmp: Path) -> None:
        _copy_files(source, files, tmp / "python" / source.name)
        _write_dataclass_methods(tmp / "python")

    return _materialize("layer-core", key, fill)


def _write_dataclass_methods(site: Path) -> None:
    """The core's dataclass methods compiled ahead into the layer (`nodewright.dataclass_methods`), by importing
    the copied package in a fresh interpreter of this build (the same Python as the `.pyc` files)."""
    done = subprocess.run(
        [sys.executable, "-c", "from nodewright import dataclass_methods; dataclass_methods.write_here()"],
        cwd=site,
        env={**os.environ, "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise BuildError(f"writing the core's dataclass methods failed:\n{done.stderr[-2000:]}")


def _requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    if match is None:
        raise BuildError(f"cannot read a distribution name from requirement {requirement!r}")
    return match.group(1)


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """What the Lambdas import besides nodewright: the project's dependencies plus its `aws` extra, minus
    LAMBDA_EXCLUDED_REQUIREMENTS.

    boto3 is included although the runtime has one: the runtime's copy lags releases, and the SDK the
    tests ran against keeps behaviour (and botocore's API models) reproducible.
    Each is pinned to the version installed in this environment when there is one, so the layer holds
    what the tests ran against (and its cache key changes when the environment is upgraded).
    """
    project = tomllib.loads(pyproject.read_text())["project"]
    own_name = str(project["name"])
    wanted = [*project.get("dependencies", []), *project.get("optional-dependencies", {}).get("aws", [])]
    pinned = []
    for requirement in wanted:
        name = _requirement_name(requirement)
        if name == own_name or name in LAMBDA_EXCLUDED_REQUIREMENTS:
            continue
        extras = re.match(r"\s*[A-Za-z0-9._-]+(\[[^\]]*\])?", requirement)
        extra = (extras.group(1) or "") if extras else ""
        try:
            pinned.append(f"{name}{extra}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            pinned.append(requirement)
    return sorted(pinned)


def dependencies_layer_bundle(requirements: Sequence[str] | None = None, platform: str = PIP_PLATFORM) -> Bundle:
    """Third-party packages for CPython 3.11 under `python/`, from binary wheels only.

    `platform` is a pip platform tag: the function's arm64 by default; the cold-start benchmark asks for this
    machine's, so the few compiled extensions (wrapt, PyYAML) load as they would in Lambda.
    """
    reqs = list(runtime_requirements() if requirements is None else requirements)
    key = _digest(
        [
            _builder_fingerprint(),
            f"python{PYTHON_VERSION}".encode(),
            platform.encode(),
            aws_sdk.models_digest().encode(),
            *(r.encode() for r in reqs),
        ]
    )

    def fill(tmp: Path) -> None:
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",  # compiled afterwards with unchecked-hash invalidation
            "--platform",
            platform,
            "--implementation",
            "cp",
            "--python-version",
            PYTHON_VERSION,
            "--only-binary=:all:",
            "--target",
            str(tmp / "python"),
            *reqs,
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise BuildError(f"pip could not build the dependencies layer:\n{result.stderr[-4000:]}")
        site = tmp / "python"
        # Console scripts are useless in a layer (and point at the build machine's interpreter).
        shutil.rmtree(site / "bin", ignore_errors=True)
        for relative in PRUNED_PATHS:
            shutil.rmtree(site / relative, ignore_errors=True)
        aws_sdk.write_models(site / AWS_MODELS_DIR, site / "botocore" / "data")

    return _materialize("layer-dependencies", key, fill)


def top_level_modules(site: Path) -> set[str]:
    """Importable top-level names in a site directory (packages and single-file modules)."""
    names = {p.name for p in site.iterdir() if p.is_dir() and not p.name.endswith((".dist-info", "__pycache__"))}
    names |= {p.stem for p in site.glob("*.py")}
    names |= {p.name.split(".", 1)[0] for p in site.glob("*.so")}
    return names


def imported_top_level_names(site: Path, among: Iterable[str] | None = None) -> dict[str, set[str]]:
    """For each top-level module imported by a source file under `site`, the files that import it.

    With `among`, only those module names are looked for, and only files mentioning one are parsed.
    """
    wanted = None if among is None else [name.encode() for name in among]
    found: dict[str, set[str]] = {}
    for file in site.rglob("*.py"):
        source = file.read_bytes()
        if wanted is not None and not any(name in source for name in wanted):
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.split(".", 1)[0], set()).add(file.relative_to(site).as_posix())
    return found


def directory_size(path: Path) -> int:
    """Total bytes of the files under `path` (what a layer costs against Lambda's 250 MB unzipped limit)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
