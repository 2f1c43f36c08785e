"""Kubernetes objects: effective requests, scheduling constraints, workload expansion, cluster state."""

from __future__ import annotations

from typing import Any

import pytest

from nodewright.model import kube, storage
from nodewright.model.errors import Collector
from nodewright.model.objects import HostPort, LabelSelector, Pod
from nodewright.model.pod_spec import ContainerRequests, effective_requests
from nodewright.model.requirements import Operator, Requirement
from nodewright.model.taints import Taint, Toleration

from .helpers import container, pod

GI = 2**30
MI = 2**20


def parse(doc: dict[str, Any]) -> Pod:
    ctx = Collector("w.yaml", "Pod", "default/p")
    parsed = kube.parse_pod(ctx, doc)
    assert ctx.errors == [], [str(e) for e in ctx.errors]
    assert parsed is not None
    return parsed.pod


def errors(doc: dict[str, Any]) -> list[str]:
    ctx = Collector("w.yaml", "Pod", "default/p")
    kube.parse_pod(ctx, doc)
    assert ctx.errors
    return [str(e) for e in ctx.errors]


# ---------------------------------------------------------------------------------- effective requests


def test_sum_of_containers_plus_pods() -> None:
    spec = {"containers": [container({"cpu": "500m", "memory": "1Gi"}), container({"cpu": "0.25"})]}
    assert parse(pod(spec)).requests == {"cpu": 750, "memory": GI, "pods": 1}


def test_limits_without_requests_become_requests() -> None:
    spec = {"containers": [container(limits={"cpu": "1", "memory": "2Gi"}), container({"cpu": "100m"}, {"cpu": "1"})]}
    assert parse(pod(spec)).requests == {"cpu": 1100, "memory": 2 * GI, "pods": 1}


def test_request_above_limit_is_an_error() -> None:
    message = errors(pod({"containers": [container({"cpu": "2"}, {"cpu": "1"})]}))
    assert any('spec.containers[0].resources.requests["cpu"]: must not be greater than its limit' in m for m in message)


def test_largest_regular_init_container_wins() -> None:
    spec = {
        "initContainers": [container({"cpu": "3", "memory": "1Gi"}), container({"cpu": "1", "memory": "4Gi"})],
        "containers": [container({"cpu": "1", "memory": "2Gi"})],
    }
    assert parse(pod(spec)).requests == {"cpu": 3000, "memory": 4 * GI, "pods": 1}


def test_sidecars_add_to_app_containers_and_to_later_init_containers() -> None:
    spec = {
        "initContainers": [
            container({"cpu": "1"}),  # before any sidecar: 1
            container({"cpu": "500m"}, restartPolicy="Always"),  # sidecar
            container({"cpu": "2"}),  # runs beside the sidecar: 2.5
        ],
        "containers": [container({"cpu": "1"})],  # 1 + sidecar 0.5 = 1.5
    }
    assert parse(pod(spec)).requests["cpu"] == 2500


def test_sidecars_dominate_when_app_is_larger() -> None:
    spec = {
        "initContainers": [container({"memory": "1Gi"}), container({"memory": "256Mi"}, restartPolicy="Always")],
        "containers": [container({"memory": "2Gi"})],
    }
    assert parse(pod(spec)).requests["memory"] == 2 * GI + 256 * MI


def test_overhead_is_added() -> None:
    spec = {"containers": [container({"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "120Mi"}}
    assert parse(pod(spec)).requests == {"cpu": 1250, "memory": 120 * MI, "pods": 1}


def test_effective_requests_function_directly() -> None:
    result = effective_requests(
        [{"cpu": 100}],
        [
            ContainerRequests({"cpu": 50}, sidecar=True),
            ContainerRequests({"cpu": 400}),
            ContainerRequests({"cpu": 10}, True),
        ],
        {"cpu": 5},
    )
    # app+sidecars = 160; init peak = max(50, 400+50, 60) = 450; + overhead 5.
    assert result == {"cpu": 455, "pods": 1}


def test_no_requests_still_counts_one_pod() -> None:
    assert parse(pod({"containers": [container()]})).requests == {"pods": 1}


def test_bad_quantity_is_named() -> None:
    message = errors(pod({"containers": [container({"memory": "1GB"})]}))
    assert any("spec.containers[0].resources.requests[\"memory\"]: '1GB' is not a quantity" in m for m in message)


def test_init_container_restart_policy() -> None:
    message = errors(pod({"containers": [container()], "initContainers": [container(restartPolicy="OnFailure")]}))
    assert any("initContainers[0].restartPolicy" in m for m in message)


def test_pod_level_resources_not_supported_yet() -> None:
    message = errors(pod({"containers": [container()], "resources": {"requests": {"cpu": "1"}}}))
    assert any("spec.resources: pod-level resources are not supported yet" in m for m in message)


# ------------------------------------------------------------------------------------------- constraints


def test_scheduling_constraints() -> None:
    spec = {
        "containers": [container({"cpu": "1"}, ports=[{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9}])],
        "nodeSelector": {"kubernetes.io/arch": "arm64"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
                            ]
                        },
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]},
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 10, "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}}
                ],
            },
            "podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "topology.kubernetes.io/zone"}
                ]
            },
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                        "topologyKey": "kubernetes.io/hostname",
                        "namespaces": ["shop"],
                    }
                ],
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": "web"}},
                            "topologyKey": "topology.kubernetes.io/zone",
                            "namespaceSelector": {},
                        },
                    }
                ],
            },
        },
        "tolerations": [
            {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "team", "value": "a"},
            {"operator": "Exists"},
            {"key": "t", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 30},
        ],
        "priority": 1000,
        "priorityClassName": "high",
    }
    p = parse(pod(spec, labels={"app": "web"}))
    assert p.node_selector == {"kubernetes.io/arch": "arm64"}
    assert [t.requirements for t in p.required_node_terms] == [
        (Requirement("topology.kubernetes.io/zone", Operator.IN, ("a",)),),
        (Requirement("kubernetes.io/hostname", Operator.IN, ("node-1",)),),
    ]
    assert p.preferred_node_terms[0].weight == 10
    assert p.pod_affinity[0].label_selector == LabelSelector(match_labels=(("app", "db"),))
    assert p.pod_affinity[0].topology_key == "topology.kubernetes.io/zone"
    assert p.pod_anti_affinity[0].namespaces == ("shop",)
    assert p.pod_anti_affinity[0].label_selector.matches({"app": "web"})
    assert p.preferred_pod_anti_affinity[0].weight == 50
    assert p.preferred_pod_anti_affinity[0].term.all_namespaces is True
    assert p.tolerations[0] == Toleration(key="gpu", operator="Exists", effect="NoSchedule")
    assert p.tolerations[1].tolerates(Taint("team", "NoSchedule", "a"))
    assert p.tolerations[2].tolerates(Taint("anything", "NoExecute"))
    assert p.tolerations[3].toleration_seconds == 30
    assert p.host_ports == (HostPort(8080),)
    assert (p.priority, p.priority_class_name) == (1000, "high")


def test_host_network_makes_container_ports_host_ports() -> None:
    spec = {"hostNetwork": True, "containers": [container(ports=[{"containerPort": 53, "protocol": "UDP"}])]}
    assert parse(pod(spec)).host_ports == (HostPort(53, "UDP"),)


def test_topology_spread_with_match_label_keys() -> None:
    spec = {
        "containers": [container()],
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": 3,
                "nodeAffinityPolicy": "Ignore",
                "nodeTaintsPolicy": "Honor",
                "matchLabelKeys": ["pod-template-hash", "absent"],
            },
            {
                "maxSkew": 2,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            },
        ],
    }
    p = parse(pod(spec, labels={"app": "web", "pod-template-hash": "abc"}))
    first, second = p.topology_spread
    assert (first.max_skew, first.min_domains, first.node_affinity_policy, first.node_taints_policy) == (
        1,
        3,
        "Ignore",
        "Honor",
    )
    # The pod's own value of pod-template-hash joins the selector; absent keys are skipped.
    assert first.label_selector.matches({"app": "web", "pod-template-hash": "abc"})
    assert not first.label_selector.matches({"app": "web", "pod-template-hash": "other"})
    assert (second.when_unsatisfiable, second.node_affinity_policy, second.node_taints_policy) == (
        "ScheduleAnyway",
        "Honor",
        "Ignore",
    )


def test_pod_affinity_match_and_mismatch_label_keys() -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "web"}},
        "topologyKey": "kubernetes.io/hostname",
        "matchLabelKeys": ["tenant"],
        "mismatchLabelKeys": ["version"],
    }
    spec = {
        "containers": [container()],
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    }
    p = parse(pod(spec, labels={"app": "web", "tenant": "t1", "version": "v2"}))
    selector = p.pod_anti_affinity[0].label_selector
    assert selector.matches({"app": "web", "tenant": "t1", "version": "v1"})
    assert not selector.matches({"app": "web", "tenant": "t2", "version": "v1"})
    assert not selector.matches({"app": "web", "tenant": "t1", "version": "v2"})


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecutio": {}}}},
            "did you mean requiredDuringSchedulingIgnoredDuringExecution?",
        ),
        (
            {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "x"}]}}},
            "labelSelector: is required",
        ),
        (
            {
                "affinity": {
                    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {}}]}
                }
            },
            "topologyKey: is required",
        ),
        (
            {
                "affinity": {
                    "podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {}, "topologyKey": "x", "namespaceSelector": {"matchLabels": {"a": "b"}}}
                        ]
                    }
                }
            },
            "not supported yet",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}
                            ]
                        }
                    }
                }
            },
            "exactly one integer value",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "NotIn"}]}]
                        }
                    }
                }
            },
            "needs at least one value",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
                }
            },
            "must have at least one term",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 0, "preference": {}}]
                    }
                }
            },
            "from 1 to 100",
        ),
        ({"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]}, "must be empty when operator is Exists"),
        ({"tolerations": [{"value": "b"}]}, "must be Exists when key is empty"),
        ({"tolerations": [{"key": "a", "operator": "Equals"}]}, "did you mean Equal?"),
        ({"tolerations": [{"key": "a", "effect": "NoSchedul"}]}, "did you mean NoSchedule?"),
        (
            {"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]},
            "maxSkew: 0 is too small",
        ),
        (
            {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "Never"}]},
            '"Never" is not valid',
        ),
        (
            {
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}
                ]
            },
            "only allowed with whenUnsatisfiable: DoNotSchedule",
        ),
        (
            {"topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]},
            "topologyKey: is required",
        ),
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "z",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
                    }
                ]
            },
            '"Gt" is not an operator; use one of In, NotIn, Exists, DoesNotExist',
        ),
        (
            {
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "z",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "x"}},
                        "matchLabelKeys": ["app"],
                    }
                ]
            },
            "already in labelSelector",
        ),
        ({"nodeSelector": {"zone": 1}}, "must be a string, not an integer"),
    ],
)
def test_constraint_errors(spec: dict[str, Any], fragment: str) -> None:
    messages = errors(pod({"containers": [container()], **spec}))
    assert any(fragment in m for m in messages), messages


def test_owner_reference_sets_owner() -> None:
    doc = pod({"containers": [container()]})
    doc["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web-abc", "controller": True}]
    p = parse(doc)
    assert (p.owner_kind, p.owner_name) == ("ReplicaSet", "web-abc")


def test_volumes() -> None:
    spec = {
        "containers": [container()],
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": "db-data"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "gp3"}}}},
            {"name": "tmp", "emptyDir": {}},
        ],
    }
    ctx = Collector("w.yaml", "Pod", "default/p")
    parsed = kube.parse_pod(ctx, pod(spec, name="worker"))
    assert parsed is not None and not ctx.errors
    assert parsed.pod.pvc_names == ("db-data", "worker-scratch")
    assert [(c.name, c.storage_class_name) for c in parsed.ephemeral_claims] == [("worker-scratch", "gp3")]


# -------------------------------------------------------------------------------------------- workloads


def workload(kind: str, spec: dict[str, Any], name: str = "web", api: str = "apps/v1") -> kube.Workload:
    ctx = Collector("w.yaml", kind, f"shop/{name}")
    doc = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "shop"}, "spec": spec}
    result = kube.parse_workload(ctx, doc, kind)
    assert ctx.errors == [], [str(e) for e in ctx.errors]
    assert result is not None
    return result


TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container({"cpu": "1"})]}}
SELECTOR = {"matchLabels": {"app": "web"}}


def test_deployment_expands_to_replicaset_owned_pods() -> None:
    result = workload("Deployment", {"replicas": 3, "selector": SELECTOR, "template": TEMPLATE})
    assert [p.name for p in result.pods] == ["web-0", "web-1", "web-2"]
    assert {(p.namespace, p.owner_kind, p.owner_name) for p in result.pods} == {("shop", "ReplicaSet", "web")}
    assert all(p.labels == {"app": "web"} and p.requests["cpu"] == 1000 for p in result.pods)
    assert len({p.uid for p in result.pods}) == 3


def test_replicas_default_to_one_and_zero_means_none() -> None:
    assert len(workload("ReplicaSet", {"selector": SELECTOR, "template": TEMPLATE}).pods) == 1
    assert workload("Deployment", {"replicas": 0, "selector": SELECTOR, "template": TEMPLATE}).pods == ()


def test_statefulset_claims_follow_ordinals() -> None:
    spec = {
        "replicas": 2,
        "selector": SELECTOR,
        "template": TEMPLATE,
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"storageClassName": "gp3"}}],
    }
    result = workload("StatefulSet", spec, name="db")
    assert [p.pvc_names for p in result.pods] == [("data-db-0",), ("data-db-1",)]
    assert [(c.name, c.storage_class_name) for c in result.claims] == [("data-db-0", "gp3"), ("data-db-1", "gp3")]
    assert result.pods[0].owner_kind == "StatefulSet"


@pytest.mark.parametrize(
    ("spec", "count"),
    [({}, 1), ({"parallelism": 4}, 4), ({"parallelism": 4, "completions": 2}, 2), ({"parallelism": 0}, 0)],
)
def test_job_runs_parallelism_pods(spec: dict[str, Any], count: int) -> None:
    result = workload("Job", {**spec, "template": TEMPLATE}, name="train", api="batch/v1")
    assert len(result.pods) == count
    assert all(p.owner_kind == "Job" and p.name.startswith("train-") for p in result.pods)


def test_cronjob_is_validated_but_not_expanded() -> None:
    spec = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": TEMPLATE}}}
    assert workload("CronJob", spec, name="nightly", api="batch/v1").pods == ()
    ctx = Collector("w.yaml", "CronJob", "shop/nightly")
    bad = {
        "schedule": "0 * * * *",
        "jobTemplate": {"spec": {"template": {"spec": {"containers": [container({"cpu": "x"})]}}}},
    }
    kube.parse_workload(
        ctx, {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "n"}, "spec": bad}, "CronJob"
    )
    assert any("spec.jobTemplate.spec.template.spec.containers[0]" in str(e) for e in ctx.errors)


def test_template_errors_reported_once_for_many_replicas() -> None:
    ctx = Collector("w.yaml", "Deployment", "shop/web")
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container({"cpu": "lots"})]}}
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 50, "selector": SELECTOR, "template": template},
    }
    kube.parse_workload(ctx, doc, "Deployment")
    assert len(ctx.errors) == 1
    assert str(ctx.errors[0]).startswith(
        'w.yaml: Deployment/shop/web: spec.template.spec.containers[0].resources.requests["cpu"]: '
    )


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ({"template": TEMPLATE}, "spec.selector: is required"),
        (
            {"selector": {"matchLabels": {"app": "other"}}, "template": TEMPLATE},
            "does not match spec.template.metadata.labels",
        ),
        ({"selector": SELECTOR, "replicas": -1, "template": TEMPLATE}, "spec.replicas: -1 is too small"),
        ({"selector": SELECTOR}, "spec.template: is required"),
    ],
)
def test_workload_errors(spec: dict[str, Any], fragment: str) -> None:
    ctx = Collector("w.yaml", "Deployment", "shop/web")
    kube.parse_workload(
        ctx, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": spec}, "Deployment"
    )
    assert any(fragment in str(e) for e in ctx.errors), [str(e) for e in ctx.errors]


def test_wrong_api_version_for_kind() -> None:
    ctx = Collector("w.yaml", "Deployment", "shop/web")
    doc = {
        "apiVersion": "v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": SELECTOR, "template": TEMPLATE},
    }
    kube.parse_workload(ctx, doc, "Deployment")
    assert [str(e) for e in ctx.errors] == [
        'w.yaml: Deployment/shop/web: apiVersion: "v1" is not served for Deployment; use apps/v1'
    ]


def test_daemonset_is_a_template_pod() -> None:
    ctx = Collector("w.yaml", "DaemonSet", "kube-system/agent")
    doc = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "kube-system"},
        "spec": {"selector": SELECTOR, "template": TEMPLATE},
    }
    ds = kube.parse_daemonset(ctx, doc)
    assert ds is not None and not ctx.errors
    assert (ds.namespace, ds.name, ds.pod.owner_kind, ds.pod.requests["cpu"]) == (
        "kube-system",
        "agent",
        "DaemonSet",
        1000,
    )


# ----------------------------------------------------------------------------------------- cluster state


def test_node() -> None:
    ctx = Collector("w.yaml", "Node", "n1")
    doc = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "us-east-1a"}},
        "spec": {
            "providerID": "aws:///us-east-1a/i-1",
            "unschedulable": True,
            "taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}],
        },
        "status": {
            "allocatable": {"cpu": "3920m", "memory": "14Gi", "pods": "58"},
            "capacity": {"cpu": "4"},
            "conditions": [{"type": "Ready", "status": "False"}],
        },
    }
    node = kube.parse_node(ctx, doc)
    assert node is not None and not ctx.errors
    assert node.allocatable == {"cpu": 3920, "memory": 14 * GI, "pods": 58}
    assert node.labels["kubernetes.io/hostname"] == "n1"
    assert (node.provider_id, node.unschedulable, node.ready) == ("aws:///us-east-1a/i-1", True, False)
    assert node.taints == (Taint("karpenter.sh/disrupted", "NoSchedule"),)


def test_node_needs_capacity() -> None:
    ctx = Collector("w.yaml", "Node", "n1")
    kube.parse_node(ctx, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    assert "status.allocatable: is required" in str(ctx.errors[0])


def test_pdb_pvc_pv_storage_class() -> None:
    ctx = Collector("w.yaml", "x", "y")
    pdb = kube.parse_pdb(
        ctx,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"minAvailable": "50%", "selector": SELECTOR},
        },
    )
    assert pdb is not None and pdb.min_available == "50%" and pdb.selector.matches({"app": "web"})
    pvc = storage.parse_pvc(
        ctx,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "c"},
            "spec": {"storageClassName": "gp3", "volumeName": "pv-1"},
        },
    )
    assert pvc is not None and (pvc.storage_class_name, pvc.volume_name) == ("gp3", "pv-1")
    pv = storage.parse_pv(
        ctx,
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv-1"},
            "spec": {
                "csi": {"driver": "ebs.csi.aws.com"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1b"]}
                                ]
                            }
                        ]
                    }
                },
            },
        },
    )
    assert pv is not None and pv.csi_driver == "ebs.csi.aws.com"
    assert pv.node_terms[0].requirements == (Requirement("topology.kubernetes.io/zone", Operator.IN, ("us-east-1b",)),)
    parsed = storage.parse_storage_class(
        ctx,
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "gp3"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a", "b"]}]}
            ],
        },
    )
    assert parsed is not None
    storage_class, is_default = parsed
    assert storage_class.volume_binding_mode == "WaitForFirstConsumer" and not is_default
    assert storage_class.allowed_topologies[0].requirements == (
        Requirement("topology.kubernetes.io/zone", Operator.IN, ("a", "b")),
    )
    assert ctx.errors == []


def test_pdb_rules() -> None:
    ctx = Collector("w.yaml", "PodDisruptionBudget", "default/b")
    kube.parse_pdb(
        ctx,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "b"},
            "spec": {"minAvailable": 1, "maxUnavailable": "10", "selector": SELECTOR},
        },
    )
    messages = [str(e) for e in ctx.errors]
    assert any("spec.maxUnavailable: '10' must be a non-negative integer or a percentage" in m for m in messages)
    assert any("set minAvailable or maxUnavailable, not both" in m for m in messages)
