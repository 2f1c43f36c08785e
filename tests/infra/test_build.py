"""The locally built bundles: what goes into each layer, that bytecode is compiled for an immutable
filesystem, that the cache is keyed by the inputs, and that pruning left nothing dangling."""

from __future__ import annotations

import shutil
import struct
import time
from pathlib import Path

import pytest

from infra import build

LAMBDA_UNZIPPED_LIMIT = 250 * 1024 * 1024


def pyc_flags(pyc: Path) -> int:
    """The PEP 552 flags word of a .pyc header: 0 timestamp, 1 unchecked hash, 3 checked hash."""
    flags: int = struct.unpack("<I", pyc.read_bytes()[4:8])[0]
    return flags


@pytest.fixture(scope="module")
def core() -> build.Bundle:
    return build.core_layer_bundle()


@pytest.fixture(scope="module")
def dependencies() -> build.Bundle:
    return build.dependencies_layer_bundle()


def test_the_core_layer_holds_the_package_without_developer_parts(core: build.Bundle) -> None:
    package = core.path / "python" / "nodewright"
    assert (package / "settings.py").is_file()
    assert (package / "scheduling").is_dir() and (package / "catalog").is_dir()
    for excluded in build.CORE_EXCLUDED:
        assert not (package / excluded).exists(), excluded
    pyc = package / "__pycache__" / "settings.cpython-311.pyc"
    # Unchecked-hash bytecode: valid whatever timestamps the zip gives the sources.
    assert pyc_flags(pyc) == 1


def test_the_dependencies_layer_is_arm64_python311_and_within_lambda_limits(
    core: build.Bundle, dependencies: build.Bundle
) -> None:
    site = dependencies.path / "python"
    modules = build.top_level_modules(site)
    assert {"kubernetes", "aws_lambda_powertools", "yaml", "pydantic", "boto3", "aws_xray_sdk"} <= modules
    extensions = list((site / "pydantic_core").glob("*.so"))
    assert extensions and all("cpython-311-aarch64-linux-gnu" in e.name for e in extensions), extensions
    assert not (site / "kubernetes" / "aio").exists()
    assert pyc_flags(next((site / "yaml" / "__pycache__").glob("__init__.cpython-311.pyc"))) == 1
    assert build.directory_size(core.path) + build.directory_size(dependencies.path) < LAMBDA_UNZIPPED_LIMIT


def test_nothing_left_in_the_dependencies_layer_imports_what_was_pruned(dependencies: build.Bundle) -> None:
    site = dependencies.path / "python"
    present = build.top_level_modules(site)
    pruned_names = {"aiohttp", "aiohttp_retry", "aiohappyeyeballs", "aiosignal", "attr", "attrs"}
    pruned_names |= {"frozenlist", "multidict", "propcache", "yarl"}
    assert not (pruned_names & present)
    importers = build.imported_top_level_names(site, among=pruned_names)
    dangling = {name: sorted(importers[name])[:3] for name in pruned_names if name in importers}
    assert dangling == {}


def test_layer_requirements_come_from_the_project_pinned_to_the_tested_versions() -> None:
    requirements = build.runtime_requirements()
    names = {r.split("[")[0].split("=")[0].lower() for r in requirements}
    assert {"pyyaml", "kubernetes", "aws-lambda-powertools", "boto3"} <= names
    assert "nodewright" not in names
    assert all("==" in r for r in requirements), requirements


def test_the_cache_is_reused_and_keyed_by_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODEWRIGHT_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "fn"
    source.mkdir()
    (source / "handler.py").write_text("def handler(event, context):\n    return 1\n")
    first = build.function_bundle(source, "probe")
    assert (first.path / "handler.py").is_file()
    assert pyc_flags(first.path / "__pycache__" / "handler.cpython-311.pyc") == 1
    built_at = (first.path / "handler.py").stat().st_mtime_ns
    time.sleep(0.01)
    again = build.function_bundle(source, "probe")
    assert again == first and (again.path / "handler.py").stat().st_mtime_ns == built_at
    (source / "handler.py").write_text("def handler(event, context):\n    return 2\n")
    changed = build.function_bundle(source, "probe")
    assert changed.key != first.key and changed.path != first.path
    assert "return 2" in (changed.path / "handler.py").read_text()
    # No half-built temporary directories are left behind.
    bundles = tmp_path / "cache" / "bundles"
    assert sorted(p.name for p in bundles.iterdir()) == sorted([first.path.name, changed.path.name])
    # Older bundles are evicted beyond the few most recently used.
    latest = []
    for value in (3, 4):
        time.sleep(0.01)
        (source / "handler.py").write_text(f"def handler(event, context):\n    return {value}\n")
        latest.append(build.function_bundle(source, "probe").path.name)
    assert sorted(p.name for p in bundles.iterdir()) == sorted([changed.path.name, *latest])
    assert len(latest) + 1 == build.KEEP_PER_BUNDLE
    shutil.rmtree(tmp_path / "cache")


def test_a_missing_function_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(build.BuildError, match="does not exist"):
        build.function_bundle(tmp_path / "nope", "nope")
