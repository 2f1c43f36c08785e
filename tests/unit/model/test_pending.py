"""What "pending" means: the pods the forwarder sends and the provisioner plans (Karpenter's provisionable pods)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from nodewright.model.pending import is_pending, not_pending_reason

UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
    "lastTransitionTime": "2026-01-01T00:00:00Z",
}
WEB = client.V1LabelSelector(match_labels={"app": "web"})


def full_pod() -> dict[str, Any]:
    """A pod with every scheduling feature and plenty the scheduler ignores, in the API's JSON form."""
    pod = client.V1Pod(
        api_version="v1",
        kind="Pod",
        metadata=_full_metadata(),
        spec=client.V1PodSpec(
            scheduler_name="default-scheduler",
            priority=1000,
            priority_class_name="high",
            node_selector={"topology.kubernetes.io/zone": "us-east-1a"},
            overhead={"cpu": "50m", "memory": "64Mi"},
            service_account_name="web",
            dns_policy="ClusterFirst",
            restart_policy="Always",
            termination_grace_period_seconds=30,
            affinity=_arm64_apart_from_web(),
            tolerations=[client.V1Toleration(key="gpu", operator="Exists", effect="NoSchedule")],
            topology_spread_constraints=[
                client.V1TopologySpreadConstraint(
                    max_skew=1,
                    topology_key="topology.kubernetes.io/zone",
                    when_unsatisfiable="DoNotSchedule",
                    label_selector=WEB,
                )
            ],
            init_containers=_init_containers(),
            containers=[_app_container()],
            volumes=_volumes(),
        ),
        status=_unschedulable_status(),
    )
    result: dict[str, Any] = client.ApiClient().sanitize_for_serialization(pod)
    return result


def _full_metadata() -> client.V1ObjectMeta:
    """A ReplicaSet's pod's metadata, with large annotations and managed fields the scheduler never reads."""
    return client.V1ObjectMeta(
        name="web-7d4b9-abcde",
        namespace="shop",
        uid="0b7c0c1e-1111-4222-8333-944455556666",
        resource_version="4242",
        generate_name="web-7d4b9-",
        labels={"app": "web", "pod-template-hash": "7d4b9"},
        annotations={
            "karpenter.sh/do-not-disrupt": "true",
            "kubectl.kubernetes.io/restartedAt": "x",
            "big": "y" * 4000,
        },
        owner_references=[
            client.V1OwnerReference(
                api_version="apps/v1",
                kind="ReplicaSet",
                name="web-7d4b9",
                uid="rs-uid",
                controller=True,
                block_owner_deletion=True,
            )
        ],
        managed_fields=[client.V1ManagedFieldsEntry(manager="kube-controller-manager", operation="Update")],
    )


def _arm64_apart_from_web() -> client.V1Affinity:
    """Required node affinity to arm64 and required hostname anti-affinity to the other web pods."""
    requirement = client.V1NodeSelectorRequirement(key="kubernetes.io/arch", operator="In", values=["arm64"])
    return client.V1Affinity(
        node_affinity=client.V1NodeAffinity(
            required_during_scheduling_ignored_during_execution=client.V1NodeSelector(
                node_selector_terms=[client.V1NodeSelectorTerm(match_expressions=[requirement])]
            )
        ),
        pod_anti_affinity=client.V1PodAntiAffinity(
            required_during_scheduling_ignored_during_execution=[
                client.V1PodAffinityTerm(label_selector=WEB, topology_key="kubernetes.io/hostname")
            ]
        ),
    )


def _init_containers() -> list[client.V1Container]:
    """A plain init container and a restartable one (a sidecar) with a host port."""
    return [
        client.V1Container(
            name="migrate",
            image="busybox",
            command=["sh", "-c", "true"],
            resources=client.V1ResourceRequirements(requests={"cpu": "2", "memory": "256Mi"}),
        ),
        client.V1Container(
            name="proxy",
            image="envoy",
            restart_policy="Always",
            resources=client.V1ResourceRequirements(requests={"cpu": "100m", "memory": "128Mi"}),
            ports=[client.V1ContainerPort(container_port=15000, host_port=15000, protocol="TCP")],
        ),
    ]


def _app_container() -> client.V1Container:
    """The app: requests and limits, a host port on one IP, and a long environment the scheduler ignores."""
    return client.V1Container(
        name="app",
        image="registry.example.com/web:1.2.3",
        env=[client.V1EnvVar(name=f"VAR_{i}", value="v" * 50) for i in range(40)],
        resources=client.V1ResourceRequirements(
            requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "1", "memory": "1Gi"}
        ),
        ports=[
            client.V1ContainerPort(container_port=8080, protocol="TCP"),
            client.V1ContainerPort(container_port=9090, host_port=9090, host_ip="10.0.0.1", protocol="UDP"),
        ],
        liveness_probe=client.V1Probe(http_get=client.V1HTTPGetAction(path="/healthz", port=8080)),
        volume_mounts=[client.V1VolumeMount(name="data", mount_path="/data")],
    )


def _volumes() -> list[client.V1Volume]:
    """A persistent volume claim, a generic ephemeral volume (gp3), and volumes that need no storage."""
    scratch = client.V1PersistentVolumeClaimTemplate(
        spec=client.V1PersistentVolumeClaimSpec(
            storage_class_name="gp3",
            access_modes=["ReadWriteOnce"],
            resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"}),
        )
    )
    return [
        client.V1Volume(
            name="data", persistent_volume_claim=client.V1PersistentVolumeClaimVolumeSource(claim_name="data-0")
        ),
        client.V1Volume(name="scratch", ephemeral=client.V1EphemeralVolumeSource(volume_claim_template=scratch)),
        client.V1Volume(name="config", config_map=client.V1ConfigMapVolumeSource(name="web-config")),
        client.V1Volume(name="token", projected=client.V1ProjectedVolumeSource(sources=[])),
    ]


def _unschedulable_status() -> client.V1PodStatus:
    """Pending: the scheduler's Unschedulable condition and one it adds that does not matter here."""
    return client.V1PodStatus(
        phase="Pending",
        qos_class="Burstable",
        conditions=[
            client.V1PodCondition(**{k: v for k, v in _snake(UNSCHEDULABLE).items()}),
            client.V1PodCondition(type="PodReadyToStartContainers", status="False"),
        ],
    )


def _snake(condition: dict[str, str]) -> dict[str, str]:
    return {("last_transition_time" if k == "lastTransitionTime" else k): v for k, v in condition.items()}


def pending(**changes: Any) -> dict[str, Any]:
    """A minimal pending pod; keyword arguments replace top-level sections (metadata, spec, status)."""
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "1"},
        "spec": {"schedulerName": "default-scheduler", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending", "conditions": [dict(UNSCHEDULABLE)]},
    }
    doc.update(changes)
    return doc


# ------------------------------------------------------------------------------------------ pending


def test_an_unschedulable_pod_is_pending() -> None:
    assert is_pending(pending())
    assert is_pending(full_pod())


def test_scheduler_name_defaults_to_the_default_scheduler() -> None:
    doc = pending()
    del doc["spec"]["schedulerName"]
    assert is_pending(doc)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"spec": {"nodeName": "n1", "containers": []}}, "bound"),
        ({"status": {"nominatedNodeName": "n1", "conditions": [UNSCHEDULABLE]}}, "nominated"),
        (
            {"metadata": {"name": "p", "ownerReferences": [{"kind": "DaemonSet", "name": "d", "controller": True}]}},
            "daemonset",
        ),
        ({"metadata": {"name": "p", "annotations": {"kubernetes.io/config.mirror": "abc"}}}, "mirror"),
        (
            {"metadata": {"name": "p", "ownerReferences": [{"kind": "Node", "name": "n1", "controller": True}]}},
            "mirror",
        ),
        ({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"}}, "terminating"),
        ({"status": {"phase": "Failed", "conditions": [UNSCHEDULABLE]}}, "terminal"),
        ({"spec": {"schedulerName": "volcano", "containers": []}}, "other-scheduler"),
        ({"status": {"phase": "Pending"}}, "not-yet-scheduled"),
        ({"status": {"conditions": [dict(UNSCHEDULABLE, status="True", reason="")]}}, "schedulable"),
        ({"status": {"conditions": [dict(UNSCHEDULABLE, reason="SchedulerError")]}}, "schedulable"),
    ],
)
def test_pods_that_are_not_pending(change: dict[str, Any], reason: str) -> None:
    doc = pending(**change)
    assert not is_pending(doc)
    assert not_pending_reason(doc) == reason
