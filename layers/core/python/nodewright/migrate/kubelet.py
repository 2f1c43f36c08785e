"""Kubelet settings move from NodePools (v1alpha5 `kubeletConfiguration`, v1beta1 `kubelet`) to EC2NodeClasses.

Karpenter v1 moved `kubelet` to the EC2NodeClass and, since one class serves many NodePools, its guide asks for
one EC2NodeClass per distinct kubelet configuration. `place` does that across every converted object: the class a
NodePool names gets the NodePools' kubelet when they agree; each further distinct kubelet gets a copy of the class
named `<class>-<first NodePool with it>`, and those NodePools point at the copy.
"""

from __future__ import annotations

import copy
from typing import Any

from nodewright.migrate.common import Converted, MigrationError, describe, fail
from nodewright.model.parse_ec2nodeclass import KUBELET_FIELDS

# v1alpha5's and v1beta1's KubeletConfiguration fields that v1's EC2NodeClass kubelet kept: all of v1's.
FIELDS = KUBELET_FIELDS
DROPPED = "containerRuntime"


def read(doc: dict[str, Any], value: Any, path: str, notes: list[str]) -> dict[str, Any] | None:
    """An old kubelet block as v1's (None when empty); containerRuntime, gone in v1 (containerd only), is dropped."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(doc, path, "must be a map of kubelet settings")
    out: dict[str, Any] = {}
    for key, setting in value.items():
        if key == DROPPED:
            notes.append(f"{describe(doc)}: {path}.{DROPPED} dropped: nodes always run containerd")
        elif key in FIELDS:
            out[key] = copy.deepcopy(setting)
        else:
            raise fail(
                doc,
                f"{path}.{key}",
                f"is not a kubelet setting Karpenter carried to v1; remove it (known: {', '.join(FIELDS)})",
            )
    return out or None


def _key(kubelet: dict[str, Any] | None) -> str:
    return repr(sorted((kubelet or {}).items()))


def place(objects: list[Converted]) -> dict[str, list[Converted]]:
    """Put every NodePool's kubelet on an EC2NodeClass of `objects` (classes split per distinct kubelet).

    Returns the new classes by the name of the class each copies (write them after it). An error when a NodePool
    with kubelet settings names a class that is not among the objects: the settings would have nowhere to go.
    """
    classes = {c.name: c for c in objects if c.kind == "EC2NodeClass"}
    pools_by_class: dict[str, list[Converted]] = {}
    for pool in objects:
        if pool.kind == "NodePool":
            ref = pool.doc["spec"]["template"]["spec"]["nodeClassRef"]["name"]
            pools_by_class.setdefault(ref, []).append(pool)
    extra: dict[str, list[Converted]] = {}
    for class_name, pools in pools_by_class.items():
        if all(p.kubelet is None for p in pools):
            continue
        if class_name not in classes:
            first = next(p for p in pools if p.kubelet is not None)
            raise MigrationError(
                f"{describe(first.doc)}: kubelet settings move to the EC2NodeClass in v1, but EC2NodeClass/"
                f"{class_name} is not among the files given; migrate the AWSNodeTemplate / EC2NodeClass together "
                "with its Provisioners / NodePools"
            )
        original = classes[class_name]
        distinct: dict[str, dict[str, Any] | None] = {}
        for pool in pools:
            distinct.setdefault(_key(pool.kubelet), pool.kubelet)
        # The original class keeps the kubelet of the pools without one if there are any, else the first one.
        keep = _key(None) if _key(None) in distinct else next(iter(distinct))
        if distinct[keep] is not None:
            own = original.doc["spec"].get("kubelet")
            if own is not None and own != distinct[keep]:
                raise MigrationError(
                    f"{describe(original.doc)}: spec.kubelet is set and differs from its NodePools' kubelet "
                    f"{distinct[keep]}; make them agree, or give those NodePools their own EC2NodeClass"
                )
            original.doc["spec"]["kubelet"] = distinct[keep]
        copies: dict[str, str] = {}
        for pool in pools:
            pool_key = _key(pool.kubelet)
            if pool_key == keep:
                continue
            if pool_key not in copies:
                copies[pool_key] = f"{class_name}-{pool.name}"
                clone = Converted(copy.deepcopy(original.doc))
                clone.doc["metadata"] = {"name": copies[pool_key]}
                clone.doc["spec"].pop("kubelet", None)
                if pool.kubelet is not None:
                    clone.doc["spec"]["kubelet"] = pool.kubelet
                extra.setdefault(class_name, []).append(clone)
            pool.doc["spec"]["template"]["spec"]["nodeClassRef"]["name"] = copies[pool_key]
            pool.notes.append(
                f"{describe(pool.doc)}: its kubelet differs from the other NodePools of EC2NodeClass/{class_name}; "
                f"written to a copy, EC2NodeClass/{copies[pool_key]}"
            )
    return extra
