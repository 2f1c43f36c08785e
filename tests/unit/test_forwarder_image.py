"""cluster/forwarder/Dockerfile ships the forwarder's modules only, installs pinned, hashed packages, and pins its
base image by digest."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from nodewright.localworld.image import DOCKERFILE, REQUIREMENTS, copied_files, pip_command

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "layers" / "core" / "python"

# What `python -m nodewright.forwarder` imports, in a fresh interpreter (every forwarder module loaded).
_CLOSURE = """
import importlib, json, pkgutil, sys
import nodewright.forwarder as forwarder
for module in pkgutil.iter_modules(forwarder.__path__):
    importlib.import_module("nodewright.forwarder." + module.name)
ours = [m for name, m in sys.modules.items() if name.startswith("nodewright")]
print(json.dumps(sorted(getattr(m, "__file__", "") or "" for m in ours)))
"""


def test_the_image_holds_exactly_the_modules_the_forwarder_imports() -> None:
    done = subprocess.run([sys.executable, "-c", _CLOSURE], capture_output=True, text=True, check=True)
    imported = {Path(f).resolve() for f in json.loads(done.stdout) if f}
    copied = {source.resolve() for source, _ in copied_files()}
    assert copied == imported, (sorted(map(str, imported - copied)), sorted(map(str, copied - imported)))
    # Laid out as the package is: nodewright/<same path>.
    for source, relative in copied_files():
        assert relative == source.relative_to(PACKAGE).as_posix(), relative
    assert not [s for s, _ in copied_files() if "localworld" in str(s) or "commands" in str(s) or s.name == "cli.py"]


def test_packages_are_pinned_and_hashed_and_cover_what_the_forwarder_imports() -> None:
    text = (ROOT / REQUIREMENTS).read_text()
    pinned = dict(re.findall(r"^([a-z0-9_.-]+)==(\S+) \\$", text, re.MULTILINE))
    blocks = re.split(r"^(?=[a-z0-9_.-]+==)", text, flags=re.MULTILINE)[1:]
    assert len(blocks) == len(pinned) and all("--hash=sha256:" in b for b in blocks)
    wanted = dict(re.findall(r"^([a-z0-9_.-]+)==(\S+)$", (ROOT / REQUIREMENTS).with_suffix(".in").read_text(), re.M))
    assert wanted and all(pinned[name] == version for name, version in wanted.items())
    assert {"kubernetes", "boto3", "botocore"} <= set(pinned)
    # Wheels only, hash-checked, nothing beyond the list.
    assert {"--require-hashes", "--only-binary=:all:", "--no-deps"} <= set(pip_command())


def test_the_base_image_is_pinned_by_digest_in_every_stage() -> None:
    text = (ROOT / DOCKERFILE).read_text()
    base = re.search(r"^ARG BASE=(\S+)$", text, re.MULTILINE)
    assert base and re.fullmatch(r"python:3\.11-slim-bookworm@sha256:[0-9a-f]{64}", base.group(1))
    assert re.findall(r"^FROM (\S+)", text, re.MULTILINE) == ["${BASE}", "${BASE}"]
    assert "USER 65532:65532" in text
