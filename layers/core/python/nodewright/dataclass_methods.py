"""Dataclass methods compiled ahead, like the rest of the layer's code: half of a Lambda's import time, saved.

Python 3.11 writes each dataclass's `__init__`, `__repr__`, `__eq__`, `__hash__`, and a frozen one's `__setattr__`
and `__delattr__`, as source text and compiles it when the class is defined (`dataclasses._create_fn`, one
`exec(text)` per method). The core defines about 110 dataclasses on the provisioner's path, and compiling their
600 methods was 45-60 ms of the 85 ms its modules take to import: the largest part of nodewright's share of a cold
start. A `.pyc` cannot hold them, since they do not exist until the class statement runs.

So the core layer's build (`infra.build`) imports every core module once with `record()` and writes the compiled
code of each method, keyed by its exact source text, to `_dataclass_methods.bin` beside this file (a marshal dump,
stamped with the interpreter's bytecode magic number). In Lambda, `nodewright/__init__.py` calls `install()`,
which loads that file (about 3 ms) and gives the `dataclasses` module an `exec` that runs the compiled code for a
text it knows and compiles any other text as before. The same text compiles to the same code, so each method is
exactly what it would have been; a class whose text changed, or any other package's dataclass, is compiled as
usual. Nothing happens without the file (a checkout, the tests), on another interpreter (the magic number
differs), or on a Python whose `dataclasses` does not compile through `exec` this way (any version but 3.11).
"""

from __future__ import annotations

import builtins
import dataclasses
import importlib
import importlib.util
import marshal
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import CodeType
from typing import Any

CACHE_FILE = Path(__file__).with_name("_dataclass_methods.bin")
_MAGIC = importlib.util.MAGIC_NUMBER


def _supported() -> bool:
    """Python 3.11's dataclasses, which compiles each method with `exec(text, globals, namespace)`."""
    return sys.version_info[:2] == (3, 11) and hasattr(dataclasses, "_create_fn")


class _CompiledExec:
    """`exec` for the dataclasses module: the compiled code for a known text, the builtin for anything else."""

    def __init__(self, compiled: Mapping[str, CodeType]) -> None:
        self.compiled = compiled

    def __call__(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        code = self.compiled.get(source) if isinstance(source, str) else None
        builtins.exec(source if code is None else code, globals, locals)


def install(path: Path = CACHE_FILE) -> bool:
    """Use the methods compiled in `path` from now on (see the module doc); False when there is nothing to use."""
    if not _supported() or not path.is_file():
        return False
    data = path.read_bytes()
    if data[: len(_MAGIC)] != _MAGIC:
        return False
    compiled = marshal.loads(data[len(_MAGIC) :])
    if not isinstance(compiled, dict):
        return False
    dataclasses.exec = _CompiledExec(compiled)  # type: ignore[attr-defined]  # shadows the builtin there only
    return True


@contextmanager
def record() -> Iterator[dict[str, CodeType]]:
    """Within the block, every dataclass method's text and compiled code, as the block defines classes."""
    compiled: dict[str, CodeType] = {}

    def recording(source: Any, globals: Any = None, locals: Any = None) -> None:
        if isinstance(source, str):
            source = compiled.setdefault(source, compile(source, "<string>", "exec"))
        builtins.exec(source, globals, locals)

    previous = dataclasses.__dict__.get("exec")
    dataclasses.exec = recording  # type: ignore[attr-defined]
    try:
        yield compiled
    finally:
        if previous is None:
            del dataclasses.exec  # type: ignore[attr-defined]
        else:
            dataclasses.exec = previous  # type: ignore[attr-defined]


def write(package_dir: Path) -> int:
    """Import every module of the nodewright package at `package_dir` (which must be the one on sys.path) and write
    its dataclass methods to the cache file there; returns how many. Modules that cannot be imported here (a
    dependency the build does not have) are skipped: their classes compile at run time as before."""
    import pkgutil

    if not _supported():
        return 0
    with record() as compiled:
        for module in pkgutil.walk_packages([str(package_dir)], prefix="nodewright."):
            if module.name.endswith(".__main__"):
                continue  # runs a command line when imported
            try:
                importlib.import_module(module.name)
            except Exception:  # a module that needs what the build lacks keeps compiling its methods at run time
                continue
    (package_dir / CACHE_FILE.name).write_bytes(_MAGIC + marshal.dumps(compiled))
    return len(compiled)


def write_here() -> int:
    """`write` for the package this module was imported from (what the layer build runs)."""
    return write(Path(__file__).parent)
