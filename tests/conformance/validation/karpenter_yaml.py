"""The YAML a Karpenter user writes, run through what `nodewright validate` runs.

Each conformance case starts from the object of the Karpenter suite's `BeforeEach`, written as YAML, changes
the fields the `It(...)` changes (each change a YAML fragment, as a user would type it), and loads the text
with `nodewright.model.loader` (the loader behind `nodewright validate` and the provisioner). A case that
Karpenter refuses must be refused here with an error at the field Karpenter refuses; an accepted one must load
without any error.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import yaml

from nodewright.model.loader import load_text

REQUIREMENTS = "spec.template.spec.requirements"
LABELS = "spec.template.metadata.labels"
TAINTS = "spec.template.spec.taints"

# pkg/apis/v1/nodepool_validation_cel_test.go BeforeEach, with the AWS provider's nodeClassRef
# (nodewright launches EC2NodeClass capacity only; the core suite's TestNodeClass is its test double).
NODEPOOL = """\
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      requirements:
        - key: karpenter.sh/capacity-type
          operator: Exists
"""

# pkg/apis/v1/nodeclaim_validation_cel_test.go BeforeEach (nodewright reads a NodeClaim's NodePool from its label).
NODECLAIM = """\
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default
  labels:
    karpenter.sh/nodepool: default
spec:
  nodeClassRef:
    group: karpenter.k8s.aws
    kind: EC2NodeClass
    name: default
  requirements:
    - key: karpenter.sh/capacity-type
      operator: Exists
"""

# aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass_validation_cel_test.go BeforeEach.
EC2NODECLASS = """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiFamily: AL2023
  amiSelectorTerms:
    - alias: al2023@latest
  role: role-1
  securityGroupSelectorTerms:
    - tags:
        "*": "*"
  subnetSelectorTerms:
    - tags:
        "*": "*"
"""


def document(base: str, changes: Mapping[str, str | None]) -> str:
    """`base` with each dotted path set to its YAML fragment (None removes the field), as YAML text."""
    doc = yaml.safe_load(base)
    for path, fragment in changes.items():
        parts = path.split(".")
        node = doc
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        if fragment is None:
            node.pop(parts[-1], None)
        else:
            node[parts[-1]] = yaml.safe_load(fragment)
    return str(yaml.safe_dump(doc, sort_keys=False))


def errors(text: str) -> list[str]:
    """Every error `nodewright validate` reports for the YAML text, as printed."""
    _, found = load_text(text, "karpenter.yaml")
    return [str(e) for e in found]


def nodepool(**changes: str | None) -> str:
    """The suite's NodePool with changes; keys are dotted paths with "__" for "." (requirements is a shortcut)."""
    return document(NODEPOOL, _paths(changes))


def nodeclaim(**changes: str | None) -> str:
    return document(NODECLAIM, _paths(changes))


def ec2nodeclass(**changes: str | None) -> str:
    return document(EC2NODECLASS, _paths(changes))


_SHORTCUTS = {"requirements": REQUIREMENTS, "labels": LABELS, "taints": TAINTS}


def _paths(changes: Mapping[str, str | None]) -> dict[str, str | None]:
    return {_SHORTCUTS.get(key, key.replace("__", ".")): value for key, value in changes.items()}


def requirement(key: str, operator: str, values: list[str] | None = None, min_values: int | None = None) -> str:
    """One requirement as a YAML list entry."""
    item = f"- key: {key}\n  operator: {operator}\n"
    if values is not None:
        item += "  values: [" + ", ".join(f'"{v}"' for v in values) + "]\n"
    if min_values is not None:
        item += f"  minValues: {min_values}\n"
    return item


def accepted(text: str) -> None:
    """The document loads without a single error."""
    found = errors(text)
    assert found == [], found


def refused(text: str, path: str, fragment: str = "") -> list[str]:
    """The document is refused with an error at the field `path` (exactly, or an entry under it) whose message
    contains `fragment`; returns all errors."""
    found = errors(text)
    assert found, "accepted, but Karpenter refuses it"
    kind_name = next(iter(found)).split(": ")[1]
    prefix = f"karpenter.yaml: {kind_name}: {path}"
    matching = [e for e in found if e.startswith(prefix) and fragment in e[len(prefix) :]]
    assert matching, f"no error at {path} containing {fragment!r}: {found}"
    return found


def loaded(text: str) -> Any:
    """The one object the document loads into (it must load without errors)."""
    inputs, found = load_text(text, "karpenter.yaml")
    assert found == [], [str(e) for e in found]
    values = [*inputs.nodepools, *inputs.nodeclasses, *inputs.nodeclaims]
    assert len(values) == 1, values
    return copy.copy(values[0])
