"""Replicas share a parse (model/replica_key.py): the parse reads nothing a replica key leaves out, and pods that
share a key load as each parsed alone."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.model import kube
from nodewright.model.errors import Collector
from nodewright.model.inputs import ClusterInputs
from nodewright.model.loader import load_documents
from nodewright.model.objects import Pod
from nodewright.model.replica_key import CONTAINER_READ, SPEC_READ, VOLUME_READ, replica_key
from tests.bench.simulate_cli import documents

ROOT = Path(__file__).resolve().parents[3]

# What the parse may read at each level whose key is a projection (the others are in the key whole).
ALLOWED = {
    "doc": {"apiVersion", "kind", "metadata", "spec"},
    "metadata": {"name", "namespace", "labels", "annotations", "ownerReferences"},
    "spec": {*SPEC_READ, "nodeName"},
    "container": set(CONTAINER_READ),
    "volume": {*VOLUME_READ, "name"},
}


class Recording(dict[str, Any]):
    """A dict that notes, under its level, every key read and whether it was iterated whole."""

    def __init__(self, level: str, data: dict[str, Any], reads: set[tuple[str, str]]) -> None:
        super().__init__(data)
        self.level, self.reads = level, reads

    def _note(self, key: object) -> None:
        self.reads.add((self.level, str(key)))

    def get(self, key: str, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self._note(key)
        return super().__contains__(key)

    def __iter__(self) -> Iterator[str]:
        self._note("*")
        return super().__iter__()

    def keys(self) -> Any:
        self._note("*")
        return super().keys()

    def items(self) -> Any:
        self._note("*")
        return super().items()

    def values(self) -> Any:
        self._note("*")
        return super().values()


def _recorded(doc: dict[str, Any], reads: set[tuple[str, str]]) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    spec = doc["spec"]
    for field in ("containers", "initContainers"):
        if isinstance(spec.get(field), list):
            spec[field] = [Recording("container", c, reads) if isinstance(c, dict) else c for c in spec[field]]
    if isinstance(spec.get("volumes"), list):
        spec["volumes"] = [Recording("volume", v, reads) if isinstance(v, dict) else v for v in spec["volumes"]]
    doc["spec"] = Recording("spec", spec, reads)
    doc["metadata"] = Recording("metadata", doc["metadata"], reads)
    return Recording("doc", doc, reads)


def _every_feature() -> dict[str, Any]:
    """A pod with every field the parse reads set, and fields it does not read beside them."""
    term = {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}
    selector = {"matchLabels": {"app": "web"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1",
            "namespace": "shop",
            "uid": "u-1",
            "resourceVersion": "9",
            "labels": {"app": "web"},
            "annotations": {"a": "b"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1a2b", "controller": True, "uid": "rs"}],
        },
        "spec": {
            "nodeName": "node-a",
            "hostNetwork": True,
            "priority": 10,
            "priorityClassName": "high",
            "overhead": {"cpu": "10m"},
            "nodeSelector": {"team": "a"},
            "serviceAccountName": "web",
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": term}],
                },
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": selector, "topologyKey": "topology.kubernetes.io/zone"}
                    ]
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 3,
                            "podAffinityTerm": {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"},
                        }
                    ]
                },
            },
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": selector,
                }
            ],
            "containers": [
                {
                    "name": "app",
                    "image": "web:1",
                    "env": [{"name": "X", "value": "1"}],
                    "volumeMounts": [{"name": "kube-api-access-abcde", "mountPath": "/var/run"}],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
                    "ports": [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}],
                }
            ],
            "initContainers": [
                {"name": "proxy", "image": "p", "restartPolicy": "Always", "resources": {"requests": {"cpu": "100m"}}}
            ],
            "volumes": [
                {"name": "kube-api-access-abcde", "projected": {"sources": []}},
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-web"}},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "gp3"}}}},
            ],
        },
        "status": {"phase": "Running"},
    }


SAMPLES = [
    pytest.param(_every_feature(), id="every-feature"),
    *(pytest.param(d, id=f"served-{d['metadata']['name']}") for d in documents("pods", 1)[3:7]),
    *(
        pytest.param(d, id=f"example-{d['metadata']['name']}")
        for path in sorted((ROOT / "examples").glob("*.yaml"))
        for d in yaml.safe_load_all(path.read_text())
        if isinstance(d, dict) and d.get("kind") == "Pod"
    ),
]


@pytest.mark.parametrize("doc", SAMPLES)
def test_the_parse_reads_nothing_the_key_leaves_out(doc: dict[str, Any]) -> None:
    reads: set[tuple[str, str]] = set()
    ctx = Collector("t", "Pod", "p")
    parsed = kube.parse_pod(ctx, _recorded(doc, reads))
    assert parsed is not None and ctx.ok, [str(e) for e in ctx.errors]
    outside = {(level, key) for level, key in reads if key not in ALLOWED[level]}
    assert not outside, f"the parse reads {sorted(outside)}, which replica_key leaves out: add them to the key"


def _replica(doc: dict[str, Any], n: int, node: str) -> dict[str, Any]:
    """Another replica of `doc` as an API server would serve it: every field the parse does not read changed."""
    other = copy.deepcopy(doc)
    metadata, spec = other["metadata"], other["spec"]
    metadata.update(name=f"web-{n}", uid=f"u-{n}", resourceVersion=str(100 + n), creationTimestamp=f"2026-01-0{n}")
    spec["nodeName"] = node
    token = f"kube-api-access-{n:05d}"
    spec["volumes"][0]["name"] = token
    spec["containers"][0]["volumeMounts"] = [{"name": token, "mountPath": "/var/run"}]
    spec["containers"][0]["image"] = f"web:{n}"
    other["status"] = {"phase": "Pending" if n % 2 else "Running", "podIP": f"10.0.0.{n}"}
    return other


def _node(name: str) -> dict[str, Any]:
    allocatable = {"cpu": "64", "memory": "256Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


def _pods(inputs: ClusterInputs) -> list[Pod]:
    return sorted((*inputs.pending_pods, *(p for n in inputs.nodes for p in n.pods)), key=repr)


def test_replicas_load_as_each_parsed_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Served replicas that differ in name, uid, version, node, token volume, image and status: one parse
    (counted), and the same pods as loading each document alone gives."""
    first = _every_feature()
    replicas = [first, *(_replica(first, n, f"node-{n % 2}") for n in range(2, 6))]
    pending = _replica(first, 6, "")
    del pending["spec"]["nodeName"]
    spec_differs = _replica(first, 7, "node-0")
    spec_differs["spec"]["priority"] = 11
    nodes = [_node(name) for name in ("node-a", "node-0", "node-1")]
    pods = [*replicas, pending, spec_differs]
    parsed: list[str] = []
    original = kube.parse_pod

    def counting(ctx: Collector, doc: Any) -> Any:
        parsed.append(doc["metadata"]["name"])
        return original(ctx, doc)

    monkeypatch.setattr(kube, "parse_pod", counting)
    together, errors = load_documents([*nodes, *pods], "cluster")
    assert parsed == ["web-1", "web-7"] and errors == []
    alone = [p for doc in pods for p in _pods(load_documents([*nodes, doc], "cluster")[0])]
    assert _pods(together) == sorted(alone, key=repr) and len(alone) == 7
    by_name = {p.name: p for p in _pods(together)}
    assert [by_name[name].node_name for name in ("web-3", "web-4", "web-6")] == ["node-1", "node-0", ""]
    assert by_name["web-3"].pvc_names == ("data-web", "web-3-scratch") and by_name["web-7"].priority == 11


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d["metadata"].update(name=""), id="no-name"),
        pytest.param(lambda d: d["spec"].update(nodeName=7), id="node-not-a-string"),
        pytest.param(lambda d: d.update(spec=[]), id="spec-not-a-map"),
    ],
)
def test_a_pod_without_a_plain_name_or_node_has_no_key(change: Any) -> None:
    doc = _every_feature()
    change(doc)
    assert replica_key(doc) is None


def test_a_pod_that_contains_itself_has_no_key() -> None:
    doc = _every_feature()
    doc["spec"]["nodeSelector"] = {}
    doc["spec"]["nodeSelector"]["self"] = doc["spec"]["nodeSelector"]
    assert replica_key(doc) is None


def test_each_field_the_parse_reads_is_in_the_key() -> None:
    """Changing any field the parse reads changes the key (else two different pods would share a parse)."""
    base = _every_feature()
    key = replica_key(base)
    assert key is not None
    changes = {
        "apiVersion": lambda d: d.update(apiVersion="v2"),
        "namespace": lambda d: d["metadata"].update(namespace="other"),
        "labels": lambda d: d["metadata"]["labels"].update(app="api"),
        "annotations": lambda d: d["metadata"]["annotations"].update(a="c"),
        "owner": lambda d: d["metadata"]["ownerReferences"][0].update(name="web-9z"),
        "container resources": lambda d: d["spec"]["containers"][0]["resources"]["requests"].update(cpu="2"),
        "container ports": lambda d: d["spec"]["containers"][0]["ports"][0].update(hostPort=9090),
        "sidecar policy": lambda d: d["spec"]["initContainers"][0].pop("restartPolicy"),
        "claim volume": lambda d: d["spec"]["volumes"][1]["persistentVolumeClaim"].update(claimName="x"),
        "ephemeral volume name": lambda d: d["spec"]["volumes"][2].update(name="tmp"),
        **{f"spec.{field}": (lambda d, f=field: d["spec"].update({f: "changed"})) for field in SPEC_READ},
    }
    for what, change in changes.items():
        doc = copy.deepcopy(base)
        change(doc)
        assert replica_key(doc) != key, what


def _rebuilt(value: Any, intern: bool) -> Any:
    """`value` with every string a fresh object, interned or not (JSON and YAML parsers differ in which they
    intern; equal contents must key alike either way)."""
    import sys

    if isinstance(value, dict):
        return {_rebuilt(k, intern): _rebuilt(v, intern) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuilt(v, intern) for v in value]
    if isinstance(value, str):
        fresh = "".join(list(value))  # a new object, not interned
        return sys.intern(fresh) if intern else fresh
    return value


def test_equal_contents_key_alike_whether_or_not_their_strings_are_interned() -> None:
    doc = _every_feature()
    interned, plain = replica_key(_rebuilt(doc, True)), replica_key(_rebuilt(doc, False))
    assert interned is not None and plain is not None
    assert interned[0] == plain[0]


def test_values_of_other_types_key_apart() -> None:
    keys = set()
    for other in [1, 1.0, True, "1", None, -0.0, 0.0, 10**30, [1], {"1": 1}]:
        doc = _every_feature()
        doc["spec"]["overhead"] = {"cpu": other}
        found = replica_key(doc)
        assert found is not None
        keys.add(found[0])
    assert len(keys) == 10


def test_a_timestamp_keys_by_its_repr() -> None:
    """PyYAML reads an unquoted date as a `date`, which marshal does not write: the key is the repr then, equal for
    equal contents and unlike any other pod's."""
    import datetime

    doc = _every_feature()
    doc["metadata"]["annotations"] = {"since": datetime.date(2001, 12, 14)}
    found, again = replica_key(doc), replica_key(copy.deepcopy(doc))
    assert found is not None and again is not None
    assert isinstance(found[0], str) and found[0] == again[0]
    doc["metadata"]["annotations"] = {"since": datetime.date(2001, 12, 15)}
    assert replica_key(doc)[0] != found[0]  # type: ignore[index]
