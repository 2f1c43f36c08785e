"""Loading multi-document YAML files into ClusterInputs, with errors across documents and files."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from nodewright.model.loader import ParsedPods, _parse_yaml, load_documents, load_files, load_text

from .helpers import NODECLASS, NODEPOOL, container, pod, with_field

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def dump(*docs: object) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False)


def test_examples_load_cleanly() -> None:
    inputs, errors = load_files(sorted(EXAMPLES.glob("*.yaml")))
    assert errors == [], [str(e) for e in errors]
    assert [p.name for p in inputs.nodepools] == ["default", "gpu"]
    assert [c.name for c in inputs.nodeclasses] == ["default", "gpu"]
    assert {c.ami_family for c in inputs.nodeclasses} == {"al2023", "bottlerocket"}
    (node,) = inputs.nodes
    assert sorted(p.name for p in node.pods) == ["billing-7d9f-abcde", "cache-0"]
    pending = {p.key for p in inputs.pending_pods}
    assert len(pending) == 12 + 4 + 3 + 2 + 2
    assert "data/postgres-1" in pending and "ml/train-1" in pending
    assert [d.name for d in inputs.daemonsets] == ["node-agent"]
    assert {(c.name, c.storage_class_name) for c in inputs.pvcs} == {
        ("data-postgres-0", "gp3"),
        ("data-postgres-1", "gp3"),
    }
    assert inputs.storage_classes[0].volume_binding_mode == "WaitForFirstConsumer"
    assert inputs.pdbs[0].max_unavailable == "1"


def test_karpenter_v1_docs_yaml_loads_unchanged() -> None:
    inputs, errors = load_files(sorted((EXAMPLES / "karpenter-v1").glob("*.yaml")))
    assert errors == [], [str(e) for e in errors]
    (pool,) = inputs.nodepools
    (node_class,) = inputs.nodeclasses
    assert pool.api_version == "karpenter.sh/v1" and node_class.api_version == "karpenter.k8s.aws/v1"
    assert pool.requirements[0].min_values == 2
    assert node_class.kubelet.max_pods == 20


def test_empty_documents_and_lists() -> None:
    text = "---\n---\n" + dump(
        {"apiVersion": "v1", "kind": "List", "items": [NODEPOOL, NODECLASS]},
        None,
        pod({"containers": [container({"cpu": "1"})]}),
    )
    inputs, errors = load_text(text, "all.yaml")
    assert errors == []
    assert len(inputs.nodepools) == 1 and len(inputs.nodeclasses) == 1
    assert [p.name for p in inputs.pending_pods] == ["p"]


def test_unknown_kind_is_named() -> None:
    _, errors = load_documents([{"apiVersion": "v1", "kind": "Servce", "metadata": {"name": "x"}}], "a.yaml")
    assert len(errors) == 1
    message = str(errors[0])
    assert message.startswith('a.yaml: Servce/x: kind: "Servce" is not a kind nodewright reads')
    assert "did you mean Service" not in message  # Service is not read either; no misleading hint
    _, errors = load_documents([{"apiVersion": "v1", "kind": "Nodepool", "metadata": {"name": "x"}}], "a.yaml")
    assert "did you mean NodePool?" in str(errors[0])


def test_missing_kind_and_non_map_documents() -> None:
    _, errors = load_documents([{"metadata": {"name": "x"}}, ["not", "a", "map"]], "a.yaml")
    messages = [str(e) for e in errors]
    assert messages[0] == "a.yaml: document 2: must be a map, not a list"
    assert messages[1].startswith("a.yaml: <no kind>/x: kind: is missing")


def test_duplicates_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(dump(NODEPOOL))
    (tmp_path / "b.yaml").write_text(dump(NODEPOOL))
    inputs, errors = load_files([tmp_path / "a.yaml", tmp_path / "b.yaml"])
    assert len(inputs.nodepools) == 1
    assert [str(e) for e in errors] == [
        f"{tmp_path / 'b.yaml'}: NodePool/default: metadata.name: duplicate NodePool 'default'; "
        f"the first one is in {tmp_path / 'a.yaml'}"
    ]


def test_expanded_pods_collide_with_bare_pods() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [container()]}},
        },
    }
    inputs, errors = load_documents([pod({"containers": [container()]}, name="web-1"), deployment], "w.yaml")
    assert [str(e) for e in errors] == [
        "w.yaml: Deployment/default/web: metadata.name: creates pod default/web-1, which is already defined in w.yaml"
    ]
    assert sorted(p.name for p in inputs.pending_pods) == ["web-0", "web-1"]


def test_same_name_in_other_namespace_is_fine() -> None:
    a = pod({"containers": [container()]}, name="x")
    b = with_field(pod({"containers": [container()]}, name="x"), "metadata.namespace", "other")
    inputs, errors = load_documents([a, b], "w.yaml")
    assert errors == [] and len(inputs.pending_pods) == 2


def test_bound_pods_need_their_node() -> None:
    bound = pod({"containers": [container()], "nodeName": "ghost"})
    inputs, errors = load_documents([bound], "w.yaml")
    assert [str(e) for e in errors] == [
        'w.yaml: Pod/default/p: spec.nodeName: node "ghost" is not defined in the inputs; '
        "add its Node or remove nodeName"
    ]
    assert inputs.pending_pods == ()


def test_a_cluster_read_leaves_out_pods_of_a_deleted_node_and_names_them() -> None:
    # A Node deleted moments ago leaves its pods bound to it until the pod garbage collector deletes them.
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "here"}, "status": {"allocatable": {"cpu": "2"}}}
    kept = pod({"containers": [container()], "nodeName": "here"}, name="kept")
    orphan = pod({"containers": [container()], "nodeName": "ghost"}, name="orphan")
    inputs, errors = load_documents([node, kept, orphan], "cluster", omit_orphans=True)
    assert errors == []
    assert inputs.orphaned_pods == ("default/orphan",)
    assert [p.name for n in inputs.nodes for p in n.pods] == ["kept"] and inputs.pending_pods == ()


def test_daemonset_owned_pods_are_not_pending() -> None:
    ds_pod = pod({"containers": [container()]})
    ds_pod["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "agent", "controller": True}]
    inputs, errors = load_documents([ds_pod], "w.yaml")
    assert errors == [] and inputs.pending_pods == ()


def test_nodeclass_reference_checked_when_classes_are_given() -> None:
    other = with_field(NODECLASS, "metadata.name", "other")
    inputs, errors = load_documents([NODEPOOL, other], "c.yaml")
    assert [str(e) for e in errors] == [
        'c.yaml: NodePool/default: spec.template.spec.nodeClassRef.name: EC2NodeClass "default" is not defined '
        "in the inputs (defined: other)"
    ]
    assert inputs.nodepools == ()
    # A file of NodePools alone is fine.
    inputs, errors = load_documents([NODEPOOL], "pools.yaml")
    assert errors == [] and len(inputs.nodepools) == 1


def test_errors_from_all_documents_are_collected() -> None:
    bad_pool = with_field(NODEPOOL, "spec.weight", 0)
    bad_class = with_field(NODECLASS, "spec.role", 7)
    bad_pod = pod({"containers": [container({"cpu": "x"})]})
    _, errors = load_documents([bad_pool, bad_class, bad_pod], "all.yaml")
    assert [(e.kind, e.name, e.path) for e in errors] == [
        ("NodePool", "default", "spec.weight"),
        ("EC2NodeClass", "default", "spec.role"),
        ("Pod", "default/p", 'spec.containers[0].resources.requests["cpu"]'),
    ]


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: NodePool\nmetadata:\n  name: [unclosed\n")
    _, errors = load_files([path])
    assert len(errors) == 1
    assert str(errors[0]).startswith(f"{path}: line ")
    assert "YAML syntax error" in str(errors[0])


def test_missing_file() -> None:
    _, errors = load_files(["/nonexistent/pools.yaml"])
    assert str(errors[0]).startswith("/nonexistent/pools.yaml: cannot read the file")


def test_priority_classes_and_default_storage_class() -> None:
    docs = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "base"},
            "value": 10,
            "globalDefault": True,
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "provisioner": "ebs.csi.aws.com",
            "metadata": {"name": "gp3", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        },
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {}},
        pod({"containers": [container()], "priorityClassName": "high"}, name="a"),
        pod({"containers": [container()]}, name="b"),
    ]
    inputs, errors = load_documents(docs, "w.yaml")
    assert errors == []
    assert {p.name: p.priority for p in inputs.pending_pods} == {"a": 1000, "b": 10}
    assert inputs.pvcs[0].storage_class_name == "gp3"


def test_the_newest_of_several_default_storage_classes_is_a_new_claims() -> None:
    def default_class(name: str, created: object) -> dict[str, object]:
        annotations = {"storageclass.kubernetes.io/is-default-class": "true"}
        metadata = {"name": name, "annotations": annotations, "creationTimestamp": created}
        return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "p", "metadata": metadata}

    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {}}
    newer = datetime(2024, 1, 2, tzinfo=UTC)  # YAML reads an unquoted timestamp as a datetime
    docs = [default_class("old", "2024-01-01T00:00:00Z"), default_class("new", newer), claim]
    inputs, errors = load_documents(docs, "w.yaml")
    assert errors == []
    assert inputs.pvcs[0].storage_class_name == "new"
    # Equally new: the first by name.
    docs = [default_class("b", "2024-01-01T00:00:00Z"), default_class("a", "2024-01-01T00:00:00Z"), claim]
    assert load_documents(docs, "w.yaml")[0].pvcs[0].storage_class_name == "a"


def test_only_a_claim_that_omits_its_storage_class_gets_the_default() -> None:
    # storageClassName "" asks for no class (a volume bound by hand): Kubernetes leaves it "", and an unbound one
    # never gets a volume. Omitted, the default class applies: for claims, ephemeral volumes and StatefulSets.
    default = {"storageclass.kubernetes.io/is-default-class": "true"}
    docs: list[dict[str, object]] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "p", "metadata": {"name": "gp3"}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "p"},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "omitted"}, "spec": {}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "empty"}},
    ]
    docs[1]["metadata"] = {"name": "standard", "annotations": default}
    docs[3]["spec"] = {"storageClassName": ""}
    ephemeral = [
        {"name": v, "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}
        for v, spec in (("omitted", {}), ("empty", {"storageClassName": ""}), ("named", {"storageClassName": "gp3"}))
    ]
    docs.append(pod({"containers": [container()], "volumes": ephemeral}, name="p"))
    templates = [
        {"metadata": {"name": name}, "spec": spec} for name, spec in (("o", {}), ("e", {"storageClassName": ""}))
    ]
    labels = {"app": "db"}
    docs.append(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [container()]}},
                "volumeClaimTemplates": templates,
            },
        }
    )
    inputs, errors = load_documents(docs, "w.yaml")
    assert errors == []
    classes = {c.name: c.storage_class_name for c in inputs.pvcs}
    assert classes == {
        **{"omitted": "standard", "empty": "", "p-omitted": "standard", "p-empty": "", "p-named": "gp3"},
        **{"o-db-0": "standard", "e-db-0": ""},
    }


def test_an_in_tree_ebs_volume_is_an_ebs_csi_volume() -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v"}}
    pv["spec"] = {"awsElasticBlockStore": {"volumeID": "vol-1", "fsType": "ext4"}}
    inputs, errors = load_documents([pv], "w.yaml")
    assert errors == []
    assert inputs.pvs[0].csi_driver == "ebs.csi.aws.com"


def test_nodeclaims() -> None:
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": "default-abcde",
            "labels": {
                "karpenter.sh/nodepool": "default",
                "node.kubernetes.io/instance-type": "m6i.large",
                "topology.kubernetes.io/zone": "us-east-1a",
                "karpenter.sh/capacity-type": "spot",
            },
            "creationTimestamp": "2024-08-01T00:00:00Z",
        },
        "spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
            "requirements": [
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.large"], "minValues": 1}
            ],
            "resources": {"requests": {"cpu": "1"}},
        },
        "status": {
            "providerID": "aws:///us-east-1a/i-0abc",
            "nodeName": "ip-1",
            "conditions": [{"type": "Registered", "status": "True"}],
        },
    }
    inputs, errors = load_documents([claim], "claims.yaml")
    assert errors == []
    (nc,) = inputs.nodeclaims
    assert (nc.nodepool, nc.instance_type, nc.zone, nc.capacity_type) == ("default", "m6i.large", "us-east-1a", "spot")
    assert (nc.instance_id, nc.node_name, nc.registered, nc.initialized) == ("i-0abc", "ip-1", True, False)
    assert nc.created_at == 1722470400.0 and nc.requests == {"cpu": 1000}


def test_directory_means_its_yaml_files() -> None:
    inputs, errors = load_files([EXAMPLES / "karpenter-v1"])
    assert errors == []
    assert [o.kind for o in inputs.objects] == ["EC2NodeClass", "NodePool"]  # name order: ec2nodeclass, nodepool


def versioned(name: str, uid: str, version: str, cpu: str) -> dict[str, Any]:
    doc = pod({"containers": [container({"cpu": cpu})]}, name=name)
    doc["metadata"].update(uid=uid, resourceVersion=version)
    return doc


def test_a_warm_load_reuses_a_pod_version_parsed_before_and_still_refuses_a_duplicate() -> None:
    parsed: ParsedPods = {}
    web = versioned("web", "u1", "7", "500m")
    first, errors = load_documents([web], "cluster", False, parsed)
    assert errors == [] and list(parsed) == [("u1", "7")]
    again, errors = load_documents([web, versioned("web", "u2", "1", "1")], "cluster", False, parsed)
    assert again.pending_pods[0] is first.pending_pods[0]  # the same version: the same parse
    assert [e.message for e in errors] == ["creates pod default/web, which is already defined in cluster"]
    _, errors = load_documents([versioned("web", "u3", "1", "1"), web], "cluster", False, parsed)
    assert [e.message for e in errors] == ["creates pod default/web, which is already defined in cluster"]
    bumped, _ = load_documents([versioned("web", "u1", "8", "2")], "cluster", False, parsed)
    assert bumped.pending_pods[0].requests["cpu"] == 2000  # a new version is parsed again


def api_node(name: str, uid: str, version: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid,
            "resourceVersion": version,
            "labels": {"topology.kubernetes.io/zone": zone},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    }


def api_nodeclaim(name: str, uid: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodeClaim",
        "metadata": {"name": name, "uid": uid, "resourceVersion": version, "labels": {"karpenter.sh/nodepool": "p"}},
        "spec": {"nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"}},
    }


def test_a_warm_load_parses_each_node_and_nodeclaim_version_once() -> None:
    parsed: ParsedPods = {}
    docs = [api_node("n1", "n-u1", "3", "us-east-1a"), api_nodeclaim("c1", "c-u1", "9")]
    first, errors = load_documents(docs, "cluster", False, parsed)
    assert errors == [] and set(parsed) == {("n-u1", "3"), ("c-u1", "9")}
    again, errors = load_documents([*docs, api_node("n1", "n-u2", "1", "us-east-1b")], "cluster", False, parsed)
    assert again.nodes[0].labels is first.nodes[0].labels  # the same version: the same parse
    assert again.nodeclaims[0] is first.nodeclaims[0]
    assert [e.message for e in errors] == ["duplicate Node 'n1'; the first one is in cluster"]
    moved, _ = load_documents([api_node("n1", "n-u1", "4", "us-east-1c")], "cluster", False, parsed)
    assert moved.nodes[0].labels["topology.kubernetes.io/zone"] == "us-east-1c"  # a new version is parsed again


def test_a_cached_parse_of_another_kind_is_not_taken_for_this_one() -> None:
    parsed: ParsedPods = {}
    load_documents([api_node("n1", "same", "1", "us-east-1a")], "cluster", False, parsed)
    claims, errors = load_documents([api_nodeclaim("c1", "same", "1")], "cluster", False, parsed)
    assert errors == [] and [c.name for c in claims.nodeclaims] == ["c1"]


def test_the_parse_cache_is_bounded(monkeypatch: Any) -> None:
    from nodewright.model import loader

    monkeypatch.setattr(loader, "PARSED_PODS_LIMIT", 4)
    parsed: ParsedPods = {}
    for i in range(6):
        load_documents([api_node(f"n{i}", f"u{i}", "1", "us-east-1a")], "cluster", False, parsed)
    assert len(parsed) <= 4 and ("u5", "1") in parsed and ("u0", "1") not in parsed


def test_a_load_that_keeps_only_what_it_read_follows_the_cluster_past_the_limit(monkeypatch: Any) -> None:
    """The planner's loads read the whole cluster: its cache keeps exactly the versions of the last load, with no
    limit, so a cluster of more objects than PARSED_PODS_LIMIT is not parsed again every tick."""
    from nodewright.model import loader

    monkeypatch.setattr(loader, "PARSED_PODS_LIMIT", 4)
    parsed: ParsedPods = {}
    docs = [api_node(f"n{i}", f"u{i}", "1", "us-east-1a") for i in range(6)]
    first, _ = load_documents(docs, "cluster", False, parsed, keep_only_loaded=True)
    assert set(parsed) == {(f"u{i}", "1") for i in range(6)}
    docs[0] = api_node("n0", "u0", "2", "us-east-1b")  # a new version of n0; n5 is deleted
    again, _ = load_documents(docs[:5], "cluster", False, parsed, keep_only_loaded=True)
    assert set(parsed) == {("u0", "2"), *((f"u{i}", "1") for i in range(1, 5))}
    assert all(a.labels is b.labels for a, b in zip(again.nodes[1:], first.nodes[1:5], strict=True))  # not re-parsed


def test_deleting_and_lost_claims_and_deleting_volumes_are_marked_unusable() -> None:
    def claim(name: str, metadata: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        meta = {"name": name, **metadata}
        return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": {}, "status": status}

    deleting = {"deletionTimestamp": "2024-01-01T00:00:00Z"}
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "v", **deleting}, "spec": {}}
    docs = [claim("d", deleting, {}), claim("l", {}, {"phase": "Lost"}), claim("ok", {}, {"phase": "Bound"}), pv]
    inputs, errors = load_documents(docs, "w.yaml")
    assert errors == []
    assert {c.name: c.unusable for c in inputs.pvcs} == {
        "d": "is being deleted",
        "l": "is Lost (its volume no longer exists)",
        "ok": "",
    }
    assert inputs.pvs[0].deleting


def test_libyaml_reads_what_the_python_parser_reads() -> None:
    """The loader parses with libyaml when PyYAML has it (10x faster on large files); the values must be the
    ones the pure-Python safe loader gives, YAML 1.1 scalars included, and a syntax error keeps its position."""
    text = (EXAMPLES / "workloads.yaml").read_text() + '\n---\na: [no, "no", 1.30, "0755", 0755, on, ~, 2026-12-05]\n'
    docs, errors = _parse_yaml(text, "t")
    assert errors == [] and docs == list(yaml.safe_load_all(text))
    assert yaml.__with_libyaml__, "PyYAML without libyaml: large files parse ten times slower"
    _, errors = _parse_yaml("kind: NodePool\nmetadata:\n  name: [unclosed\n", "t")
    assert errors[0].path.startswith("line 4") and "YAML syntax error" in str(errors[0])


def _replicas_file(tmp_path: Path) -> Path:
    """Pod documents that are replicas of a few templates (names differ), and near-twins that differ elsewhere."""
    spec = {
        "containers": [container({"cpu": "500m", "memory": "1Gi"})],
        "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"resources": {}}}}}],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
        ],
    }
    docs: list[Any] = [NODEPOOL, NODECLASS]
    docs += [pod(spec, f"web-{i}", {"app": "web"}) for i in range(4)]
    docs += [with_field(pod(spec, f"other-{i}", {"app": "web"}), "metadata.namespace", "other") for i in range(2)]
    docs += [with_field(pod(spec, "typed-1", {"app": "web"}), "spec.priority", 1)]
    docs += [with_field(pod(spec, "typed-true", {"app": "web"}), "spec.priority", True)]  # an error, not 1
    docs += [with_field(pod(spec, f"bad-{i}", {"app": "web"}), "spec.containers", []) for i in range(2)]
    docs += [pod(spec, "web-0", {"app": "web"})]  # a duplicate name
    path = tmp_path / "replicas.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_pods_alike_but_for_their_name_load_as_each_parsed_alone(tmp_path: Path) -> None:
    """load_files parses a Pod document that differs from an earlier clean one only by its name as a renamed copy
    (model/replica_key.py); the pods and errors are what loading every document on its own gives."""
    path = _replicas_file(tmp_path)
    fast, fast_errors = load_files([path])
    docs = list(yaml.safe_load_all(path.read_text()))
    alone = [load_documents([NODEPOOL, NODECLASS, d], str(path)) for d in docs[2:-1]]  # the duplicate name apart
    assert sorted(fast.pending_pods, key=repr) == sorted((p for i, _ in alone for p in i.pending_pods), key=repr)
    assert len(fast.pending_pods) == 7
    assert sorted(fast.pvcs, key=repr) == sorted((c for i, _ in alone for c in i.pvcs), key=repr)
    assert {c.name for c in fast.pvcs} >= {"web-3-scratch", "other-1-scratch"}
    assert sorted(str(e) for _, errors in alone for e in errors) == sorted(str(e) for e in fast_errors[:-1])
    assert len(fast_errors) == 4 and "web-0" in str(fast_errors[-1])
    assert {p.namespace for p in fast.pending_pods} == {"default", "other"}
    assert next(p for p in fast.pending_pods if p.name == "typed-1").priority == 1


def test_pods_alike_share_one_parse(tmp_path: Path) -> None:
    from nodewright.model import kube

    path = _replicas_file(tmp_path)
    calls: list[str] = []
    original = kube.parse_pod

    def counting(ctx: Any, doc: Any) -> Any:
        calls.append(doc["metadata"]["name"])
        return original(ctx, doc)

    kube.parse_pod = counting
    try:
        load_files([path])
    finally:
        kube.parse_pod = original
    # web-0 for web-1..3; other-0 for other-1; the erroneous ones are never kept.
    assert calls == ["web-0", "other-0", "typed-1", "typed-true", "bad-0", "bad-1"]


def test_summaries_can_be_left_off(tmp_path: Path) -> None:
    path = _replicas_file(tmp_path)
    with_summaries, _ = load_files([path])
    without, _ = load_files([path], summaries=False)
    assert without.pending_pods == with_summaries.pending_pods
    assert any(o.summary for o in with_summaries.objects) and not any(o.summary for o in without.objects)
