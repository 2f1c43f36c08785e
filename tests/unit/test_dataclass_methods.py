"""Dataclass methods compiled ahead: the classes they make behave as the ones Python compiles at definition."""

from __future__ import annotations

import dataclasses
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodewright import dataclass_methods

CORE = Path(dataclass_methods.__file__).resolve().parents[1]

CLASSES = """
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default=())


@dataclass
class Box:
    items: list[int] = field(default_factory=list)
"""


def _define(tmp_path: Path, name: str) -> object:
    path = tmp_path / f"{name}.py"
    path.write_text(CLASSES)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def builtin_exec_after() -> Iterator[None]:
    yield
    dataclasses.__dict__.pop("exec", None)


pytestmark = pytest.mark.skipif(not dataclass_methods._supported(), reason="Python 3.11's dataclasses only")


def test_recorded_methods_make_the_same_classes(tmp_path: Path, builtin_exec_after: None) -> None:
    with dataclass_methods.record() as compiled:
        _define(tmp_path, "recorded_one")
    assert len(compiled) >= 6 and all(text.startswith("def __create_fn__") for text in compiled)
    cache = tmp_path / "methods.bin"
    cache.write_bytes(importlib.util.MAGIC_NUMBER + __import__("marshal").dumps(compiled))

    assert dataclass_methods.install(cache)
    used: list[str] = []
    known = dataclasses.exec.compiled  # type: ignore[attr-defined]
    dataclasses.exec.compiled = {k: v for k, v in known.items()}  # type: ignore[attr-defined]
    original = dataclasses.exec.__call__  # type: ignore[attr-defined]

    def spy(source: object, globals: object = None, locals: object = None) -> None:
        if isinstance(source, str) and source in known:
            used.append(source)
        original(source, globals, locals)

    dataclasses.exec = spy  # type: ignore[attr-defined]
    cached = _define(tmp_path, "cached_one")
    assert sorted(used) == sorted(compiled)  # every method came from the file

    point = cached.Point(1, tags=("a",))  # type: ignore[attr-defined]
    assert repr(point) == "Point(x=1, y=0, tags=('a',))"
    assert point == cached.Point(1, 0, ("a",)) and hash(point) == hash(cached.Point(1, 0, ("a",)))  # type: ignore[attr-defined]
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    box = cached.Box()  # type: ignore[attr-defined]
    assert box.items == [] and box.items is not cached.Box().items  # type: ignore[attr-defined]


def test_an_unknown_text_compiles_as_before(tmp_path: Path, builtin_exec_after: None) -> None:
    cache = tmp_path / "methods.bin"
    cache.write_bytes(importlib.util.MAGIC_NUMBER + __import__("marshal").dumps({}))
    assert dataclass_methods.install(cache)
    module = _define(tmp_path, "uncached_one")
    assert module.Point(3).y == 0  # type: ignore[attr-defined]


def test_nothing_is_installed_without_a_file_of_this_interpreter(tmp_path: Path, builtin_exec_after: None) -> None:
    assert not dataclass_methods.install(tmp_path / "missing.bin")
    stale = tmp_path / "stale.bin"
    stale.write_bytes(b"\0\0\0\0" + __import__("marshal").dumps({}))
    assert not dataclass_methods.install(stale)
    assert "exec" not in dataclasses.__dict__


def test_the_layer_build_writes_methods_the_package_uses_on_import(tmp_path: Path) -> None:
    """`dataclass_methods.write_here()` (what infra.build runs on the copied package) writes the file;
    a fresh interpreter importing that package compiles none of the core's methods again."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(CORE / "nodewright", site / "nodewright", ignore=shutil.ignore_patterns("__pycache__", "*.bin"))
    env = {"PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "from nodewright import dataclass_methods; dataclass_methods.write_here()"],
        cwd=site,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (site / "nodewright" / "_dataclass_methods.bin").is_file()
    probe = (
        "import dataclasses, nodewright\n"
        "cached = dataclasses.exec\n"
        "missed = []\n"
        "def counting(source, globals=None, locals=None):\n"
        "    if isinstance(source, str) and source not in cached.compiled:\n"
        "        missed.append(source)\n"
        "    cached(source, globals, locals)\n"
        "dataclasses.exec = counting\n"
        "import nodewright.model.objects, nodewright.scheduling.results, nodewright.service.provision\n"
        "print(len(cached.compiled), len(missed))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    known, missed = map(int, done.stdout.split())
    assert known > 500 and missed == 0
