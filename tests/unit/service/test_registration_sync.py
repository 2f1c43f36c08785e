"""Registration copies the NodeClaim's labels and taints onto its Node, as Karpenter v1.14.1's
`registration.go` syncNode does, before the `karpenter.sh/unregistered` taint comes off."""

from __future__ import annotations

from typing import Any

from service_fakes import FakeCloud, FixedClock, SmallCatalog, node_for, nodeclass, nodepool, pod
from test_provision_service import batch_of

from nodewright.adapters.memory import InMemoryCluster, InMemoryState
from nodewright.model.loader import load_documents
from nodewright.service.provision import ProvisionResult, finish_registrations, provision
from nodewright.service.provision.launch import kubelet_labels

# Labels the kubelet may not register with (kubernetes.io / k8s.io namespaces), and one it may.
RESTRICTED = {"kubernetes.io/team": "web", "example.k8s.io/tier": "gold", "node-role.kubernetes.io/worker": ""}
TAINT = {"key": "dedicated", "value": "web", "effect": "NoSchedule"}
STARTUP = {"key": "node.cilium.io/agent-not-ready", "value": "true", "effect": "NoExecute"}


def launch(node_labels: dict[str, str] | None = None) -> tuple[InMemoryCluster, str, str]:
    """A NodePool with the labels and taints above launches one claim; its node joins with the kubelet's labels
    only and the unregistered taint only (user data that left ours out). Returns the cluster, claim and node."""
    clock = FixedClock()
    pool = nodepool(taints=[TAINT], startupTaints=[STARTUP])
    pool["spec"]["template"]["metadata"]["labels"].update(RESTRICTED)
    cluster = InMemoryCluster([pool, nodeclass(), pod("web-0", tolerations=[{"operator": "Exists"}])], clock=clock.now)
    cloud = FakeCloud(cluster_log=cluster.log)
    result = provision(batch_of(cluster), cluster, cloud, InMemoryState(), clock, SmallCatalog())
    [launched] = result.launched  # the pod tolerates the NodePool's taints
    node = node_for(cloud.instances[launched.instance_id], "ip-10-0-0-1.ec2.internal")
    node["metadata"]["labels"].update(node_labels or {})
    cluster.put(node)
    inputs, _ = load_documents([*cluster.of_kind("NodeClaim"), *cluster.of_kind("Node")], "cluster")
    finish_registrations(inputs.nodeclaims, inputs.nodes, cluster, clock.now(), ProvisionResult("test"))
    return cluster, launched.name, node["metadata"]["name"]


def node_doc(cluster: InMemoryCluster, name: str) -> dict[str, Any]:
    return cluster.objects[("Node", "", name)]


def test_the_claims_labels_and_taints_land_on_the_node_before_it_is_untainted() -> None:
    cluster, claim, name = launch()
    node = node_doc(cluster, name)
    labels = node["metadata"]["labels"]
    for key, value in {**RESTRICTED, "team": "web", "karpenter.sh/registered": "true"}.items():
        assert labels.get(key) == value, key
    claim_labels = (cluster.nodeclaim(claim) or {})["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in claim_labels.items())
    taints = {(t["key"], t.get("value", ""), t["effect"]) for t in node["spec"]["taints"]}
    assert taints == {("dedicated", "web", "NoSchedule"), ("node.cilium.io/agent-not-ready", "true", "NoExecute")}
    # The labels and taints are written before the unregistered taint comes off.
    log = [line for line in cluster.log if name in line]
    untaint = log.index(f"untaint node/{name}")
    synced = [i for i, line in enumerate(log) if line.startswith("taint") or "karpenter.sh/registered" in line]
    assert len(synced) == 3 and untaint > max(synced), log


def test_a_node_labelled_do_not_sync_taints_keeps_its_own() -> None:
    cluster, _, name = launch({"karpenter.sh/do-not-sync-taints": "true"})
    node = node_doc(cluster, name)
    assert node["spec"]["taints"] == []
    assert node["metadata"]["labels"]["kubernetes.io/team"] == "web"


def test_user_data_leaves_out_the_labels_the_kubelet_may_not_register_with() -> None:
    labels = {
        **RESTRICTED,
        "node.kubernetes.io/pool": "a",
        "team.node.kubernetes.io/x": "b",
        "kubelet.kubernetes.io/y": "c",
        "example.com/z": "d",
        "notkubernetes.io/w": "e",
        "topology.kubernetes.io/zone": "us-east-1a",
    }
    assert kubelet_labels(labels) == {
        "node.kubernetes.io/pool": "a",
        "team.node.kubernetes.io/x": "b",
        "kubelet.kubernetes.io/y": "c",
        "example.com/z": "d",
        "notkubernetes.io/w": "e",
    }
