"""Run `migrate` on YAML text and check every output with nodewright's own loader."""

from __future__ import annotations

from typing import Any

import yaml

from nodewright.commands.migrate import migrate_text
from nodewright.migrate.common import Options
from nodewright.model.loader import load_text

TEMPLATE = """\
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: default}
spec:
  amiFamily: Bottlerocket
  subnetSelector: {karpenter.sh/discovery: demo}
  securityGroupSelector: {karpenter.sh/discovery: demo}
"""


def migrate(text: str, options: Options | None = None) -> list[dict[str, Any]]:
    """The migrated objects of `text`."""
    out, _ = migrate_text(text, "in.yaml", options)
    return [d for d in yaml.safe_load_all(out) if d]


def valid(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`docs`, asserted to load with nodewright's loader without an error."""
    _, errors = load_text("---\n".join(yaml.safe_dump(d) for d in docs), "migrated.yaml")
    problems = [str(e) for e in errors]
    assert problems == [], problems
    return docs


def doc(api_version: str, kind: str, spec: dict[str, Any], name: str = "default") -> str:
    return yaml.safe_dump({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec})


def kinds(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]
