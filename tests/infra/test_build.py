"""The locally built bundles: what goes into each layer, that bytecode is compiled for an immutable
filesystem, that the cache is keyed by the inputs, and that pruning left nothing dangling."""

from __future__ import annotations

import json
import shutil
import struct
import sys
import time
from pathlib import Path

import pytest

from infra import build
from nodewright.adapters import aws_sdk

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
    assert {"aws_lambda_powertools", "yaml", "boto3", "aws_xray_sdk"} <= modules
    assert "kubernetes" not in modules  # the forwarder's, not the Lambdas'
    assert "pydantic" not in modules  # the payload is checked by the core (Powertools' parser extra is off)
    extensions = list((site / "yaml").glob("*.so"))
    assert extensions and all("cpython-311-aarch64-linux-gnu" in e.name for e in extensions), extensions
    assert pyc_flags(next((site / "yaml" / "__pycache__").glob("__init__.cpython-311.pyc"))) == 1
    assert build.directory_size(core.path) + build.directory_size(dependencies.path) < LAMBDA_UNZIPPED_LIMIT


def test_the_dependencies_layer_carries_the_trimmed_aws_models_where_the_functions_look(
    dependencies: build.Bundle,
) -> None:
    models = dependencies.path / "python" / build.AWS_MODELS_DIR
    assert f"/opt/python/{build.AWS_MODELS_DIR}" == build.LAYER_AWS_MODELS
    assert {p.name for p in models.iterdir() if p.is_dir()} == set(aws_sdk.SERVICES)
    ec2 = json.loads(next((models / "ec2").glob("*/service-2.json")).read_text())
    assert set(ec2["operations"]) == aws_sdk.SERVICES["ec2"]


def test_everything_the_layers_import_is_in_them(core: build.Bundle, dependencies: build.Bundle) -> None:
    """Nothing in the core layer or the dependencies layer imports a module neither layer nor the standard
    library provides (for example the `kubernetes` package, left out of the dependencies layer)."""
    site = dependencies.path / "python"
    available = build.top_level_modules(site) | {"nodewright"} | set(sys.stdlib_module_names)
    imported = build.imported_top_level_names(core.path / "python")
    dangling = {name: sorted(files)[:3] for name, files in imported.items() if name not in available}
    assert dangling == {}
    pruned_importers = build.imported_top_level_names(site, among=["aiohttp"])
    assert not any(not f.startswith("aws_xray_sdk/ext/") for f in pruned_importers.get("aiohttp", ())), pruned_importers


def test_layer_requirements_come_from_the_project_pinned_to_the_tested_versions() -> None:
    requirements = build.runtime_requirements()
    names = {r.split("[")[0].split("=")[0].lower() for r in requirements}
    assert {"pyyaml", "aws-lambda-powertools", "boto3"} <= names
    assert "kubernetes" not in names
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
