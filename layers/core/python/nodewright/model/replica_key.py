"""What a Pod document's parse reads, but its name and its node: the key under which replicas share one parse.

A cluster's pods are mostly replicas. A Deployment's pods, as an API server serves them, differ in their name, uid,
resourceVersion, timestamps, status, node, and the name of their service-account token volume (which their
containers' volumeMounts repeat); files list replicas as documents that differ only by name. The parse
(`kube.parse_pod`, `pod_spec.pod_from_template`) reads none of that but the name and `spec.nodeName`: it is a
function of this key, the name and the node. So the loader parses the first pod of a key and gives the next ones a
copy under their own name and node (`ParsedPod.renamed`), the pod parsing them would give.

The key holds, as they are, the document's apiVersion, its metadata's namespace, labels, annotations and owner
references, and the spec fields the parse reads (`SPEC_READ`); of each container only what the parse reads
(`CONTAINER_READ`), and of a volume that is neither a claim nor an ephemeral volume only that it has a name. A
test records every field the parse reads (tests/unit/model/test_replica_key.py): a new reader of a field left out
of the key fails it.

The key is those values written by `marshal` (format 0: dicts, lists, strings, numbers, booleans and None as YAML
and JSON load them, each with its type, in order), which tells apart any two that differ in content, key order or
type (1, 1.0, True, "1"), at C speed and in about half the time of their repr. Format 0 writes a string the same
whether or not it is interned, and shares nothing between equal objects, so equal contents give equal bytes. What
marshal does not write (a timestamp PyYAML read, a subclass of dict) is keyed by the repr instead, which is a `str`
and so never equal to a marshal key; there a structure that contains itself (a YAML alias to an ancestor) shows as
`{...}` or `[...]` (marshal refuses it as too deeply nested): such a pod has no key and is parsed on its own.
"""

from __future__ import annotations

import marshal
from collections.abc import Mapping
from typing import Any

# The spec fields `pod_spec.pod_from_template` reads, but `nodeName` (the node: a replica's own).
SPEC_READ = (
    "hostNetwork",
    "resources",
    "resourceClaims",
    "containers",
    "initContainers",
    "overhead",
    "nodeSelector",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "volumes",
    "priority",
    "priorityClassName",
)
# What it reads of a container or init container (requests and limits, host ports, a sidecar's policy).
CONTAINER_READ = ("resources", "ports", "restartPolicy")
# What it reads of a volume beyond its name (a claim it references or creates).
VOLUME_READ = ("persistentVolumeClaim", "ephemeral")


def replica_key(doc: Mapping[str, Any]) -> tuple[bytes | str, str, str] | None:
    """(the key, the pod's name, its node: "" when it has none) for a Pod document whose parse depends only on
    them (module doc); None when it has no plain name, a node that is not a string, or a part that contains
    itself. Two documents with the same key parse to the same pod but for its name, uid, node and the claim names
    that follow the name."""
    metadata, spec = doc.get("metadata"), doc.get("spec")
    if type(metadata) is not dict or type(spec) is not dict:
        return None
    name, node = metadata.get("name"), spec.get("nodeName", "")
    if type(name) is not str or not name or type(node) is not str:
        return None
    read = {field: spec[field] for field in SPEC_READ if field in spec}
    for field in ("containers", "initContainers"):
        if type(read.get(field)) is list:
            read[field] = [_container(c) for c in read[field]]
    if type(read.get("volumes")) is list:
        read["volumes"] = [_volume(v) for v in read["volumes"]]
    parts = (
        doc.get("apiVersion"),
        metadata.get("namespace"),
        metadata.get("labels"),
        metadata.get("annotations"),
        metadata.get("ownerReferences"),
        read,
    )
    try:
        return marshal.dumps(parts, 0), name, node
    except ValueError:  # a type marshal does not write, or a structure that contains itself (module doc)
        pass
    key = repr(parts)
    if "{...}" in key or "[...]" in key:
        return None
    return key, name, node


def _container(container: Any) -> Any:
    if type(container) is not dict:
        return container  # malformed: kept whole, so only an identical one shares its parse (and its errors)
    return {field: container[field] for field in CONTAINER_READ if field in container}


def _volume(volume: Any) -> Any:
    """A volume with a name that is neither a claim nor an ephemeral volume is read for its name alone, which
    must be a non-empty string: it is kept as the mark "named". Any other volume is kept whole."""
    if type(volume) is dict and not any(field in volume for field in VOLUME_READ):
        name = volume.get("name")
        if type(name) is str and name:
            return "named"
    return volume
