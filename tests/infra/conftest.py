"""Fixtures for the CDK app's tests: one in-process synth per distinct context, shared by the session.

The synth is the app's own (`infra.app.build_app`, cdk-nag included) into a temporary directory, so
the template tests, the cdk-nag report and cfn-lint all look at what `cdk synth` would produce.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")

CLUSTER = "demo"


@dataclass
class Synth:
    """An in-process synth: the App, the stack object, its template and the output directory."""

    app: Any
    stack: Any
    template: dict[str, Any]
    outdir: Path

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.template["Resources"].items() if v["Type"] == kind}

    def report(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads((self.outdir / "validation-report.json").read_text())
        return result


_CACHE: dict[str, Synth] = {}


def synth(tmp_root: Path, **context: str) -> Synth:
    """Synthesize the app with `context` (cached per distinct context for the session)."""
    from aws_cdk import App

    from infra.app import build_app

    key = json.dumps(context, sort_keys=True)
    if key not in _CACHE:
        outdir = tmp_root / f"synth-{len(_CACHE)}"
        app = App(outdir=str(outdir), context=context)
        stack = build_app(app)
        assembly = app.synth()
        template = assembly.get_stack_by_name(stack.stack_name).template
        _CACHE[key] = Synth(app=app, stack=stack, template=template, outdir=outdir)
    return _CACHE[key]


@pytest.fixture(scope="session")
def synth_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cdk")


@pytest.fixture(scope="session")
def default_synth(synth_root: Path) -> Synth:
    """The app as `cdk deploy -c clusterName=demo` would synthesize it."""
    return synth(synth_root, clusterName=CLUSTER)
