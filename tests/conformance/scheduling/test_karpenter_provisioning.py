"""Karpenter v1.14.1 pkg/controllers/provisioning/suite_test.go, its Resource Limits, Daemonsets, Taints, Volume
Topology Requirements, Preferential Fallback and Multiple NodePools contexts, ported case by case (v1.14.1 added
cases to Resource Limits and Daemonsets; the cases v1.9.1 had are unchanged).

Each test names the Karpenter file and It it mirrors; instance types are real (see sched_fake: the default
catalog's default-instance-type is c5.xlarge, small-instance-type t3.small). Where Karpenter asserts a node of
the 4-cpu / 4 GiB default type ("the DaemonSet was respected") against the 2-cpu / 2 GiB small type, the
port asserts c5.xlarge against t3.small. Objects whose parsing matters (limits taken as requests, init
containers, DaemonSet templates, volumes) are written as YAML and read by the loader.
"""

from __future__ import annotations

import dataclasses

import pytest
from builders import (
    daemonset,
    host_port,
    node,
    nodeclass,
    pod,
    pods,
    pool,
    preferred,
    pvc,
    req,
    run,
    selector,
    storage_class,
    unschedulable,
)
from sched_fake import DEFAULT, SMALL, ZONE_1, ZONE_2, ZONE_3, Cluster, default_catalog, from_yaml, real, spread_catalog

from nodewright.catalog.labels import ARCH, CAPACITY_TYPE, INSTANCE_SIZE, INSTANCE_TYPE, ZONE
from nodewright.model.nodeclaim import NodeClaim
from nodewright.model.objects import HOSTNAME_LABEL, DaemonSet, NodeSelectorTerm, PodAffinityTerm
from nodewright.model.taints import Taint, Toleration
from nodewright.scheduling.results import Results
from nodewright.scheduling.solver import solve

ARM = "r6g.4xlarge"
SCHEDULING = "pkg/controllers/provisioning/scheduling/suite_test.go"
PROVISIONING = "pkg/controllers/provisioning/suite_test.go"


def test_should_not_schedule_nodes_with_a_hostname_selector() -> None:
    """scheduling/suite_test.go It("should not schedule nodes with a hostname selector"): a new node gets
    a name of its own, so a pod that names a node that does not exist stays pending."""
    results = run([pod("p", "10m", "16Mi", node_selector={HOSTNAME_LABEL: "red-node"})], types=default_catalog())
    assert "default/p" in unschedulable(results)
    assert not results.nodeclaims


def test_should_schedule_deprecated_beta_labels_as_their_ga_names() -> None:
    """scheduling/suite_test.go Context("Well Known Labels"): the beta.kubernetes.io/* and
    failure-domain.beta.kubernetes.io/zone selectors read as the GA labels, as the kube-scheduler does."""
    selector = {
        "beta.kubernetes.io/arch": "arm64",
        "beta.kubernetes.io/os": "linux",
        "failure-domain.beta.kubernetes.io/zone": ZONE_1,
    }
    results = run([pod("p", "10m", "16Mi", node_selector=selector)], types=default_catalog())
    assert not results.unschedulable
    claim = results.nodeclaims[0]
    assert claim.zones == (ZONE_1,)
    assert claim.instance_types == ("r6g.4xlarge",)  # the only arm64 type of the fake catalog
    typed = run(
        [pod("q", "10m", "16Mi", node_selector={"beta.kubernetes.io/instance-type": "t3.small"})],
        types=default_catalog(),
    )
    assert typed.nodeclaims[0].instance_types == ("t3.small",)


def test_should_account_for_daemonset_hostports() -> None:
    """provisioning/suite_test.go It("should account for daemonset hostports"): the DaemonSet pod takes
    port 8080 on every new node, so a pod asking for it cannot launch one."""
    ds = daemonset("ds", "2", "2Gi", host_ports=(host_port(8080),))
    cluster = Cluster([pool()], daemonsets=[ds])
    p = pod("p", "1", "1Gi", host_ports=(host_port(8080),))
    results = cluster.provision(p)
    assert "default/p" in unschedulable(results)
    assert not results.nodeclaims


def test_should_not_schedule_if_daemonset_overhead_is_too_large() -> None:
    """provisioning/suite_test.go It("should not schedule if daemonset overhead is too large"): the pod
    is reported unschedulable with a reason, and solve() does not fail."""
    cluster = Cluster([pool()], daemonsets=[daemonset("huge", "10000", "10000Gi")])
    results = cluster.provision(pod("p", "10m", "16Mi"))
    assert "default/p" in unschedulable(results)


def test_should_not_schedule_with_an_empty_storage_class_if_the_pvc_is_not_bound() -> None:
    """provisioning/suite_test.go It("should not schedule with an empty storage class if the pvc is not
    bound")."""
    p = pod("p", "10m", "16Mi", pvc_names=("claim",))
    results = run([p], types=default_catalog(), pvcs=[pvc("claim", storage_class="")])
    assert "default/p" in unschedulable(results)


def test_should_schedule_valid_pods_when_a_pod_with_an_invalid_pvc_is_encountered() -> None:
    """provisioning/suite_test.go It("should schedule valid pods when a pod with an invalid pvc is
    encountered (storage class)")."""
    bad = pod("bad", "10m", "16Mi", pvc_names=("claim",))
    good = pod("good", "10m", "16Mi")
    results = run([bad, good], types=default_catalog(), pvcs=[pvc("claim", storage_class="missing")])
    assert set(unschedulable(results)) == {"default/bad"}
    assert any("default/good" in c.pods for c in results.nodeclaims)


def test_should_schedule_to_storage_class_zones_if_volume_does_not_exist() -> None:
    """provisioning/suite_test.go It("should schedule to storage class zones if volume does not exist")."""
    p = pod("p", "10m", "16Mi", pvc_names=("claim",))
    results = run(
        [p],
        types=default_catalog(),
        pvcs=[pvc("claim", storage_class="zonal")],
        storage_classes=[storage_class("zonal", ZONE_1)],
    )
    assert results.nodeclaims[0].zones == (ZONE_1,)


def test_should_exclude_instance_types_not_supported_by_the_pod_operating_system() -> None:
    """scheduling/suite_test.go It("should exclude instance types that are not supported by the pod
    constraints (node affinity/operating system)"): an operating system no type offers fails that pod
    only; the others are still placed."""
    odd = pod("odd", "10m", "16Mi", node_selector={"kubernetes.io/os": "ios"})
    fine = pod("fine", "10m", "16Mi", node_selector={ARCH: "amd64", CAPACITY_TYPE: "on-demand"})
    results = run([odd, fine], types=default_catalog())
    assert set(unschedulable(results)) == {"default/odd"}
    assert any("default/fine" in c.pods for c in results.nodeclaims)


# ----- Resource Limits -----------------------------------------------------------------------------------


def test_limits_should_not_schedule_when_limits_are_exceeded() -> None:
    """Context("Resource Limits") It("should not schedule when limits are exceeded"): a NodeClaim in flight of
    the NodePool already counts more cpu (its type's capacity) than the limit."""
    arm = real(ARM)
    full = {"cpu": 16000, "memory": 128 << 30, "pods": 1}  # it takes no pod: its capacity is all Karpenter's has
    claim = NodeClaim(
        "in-flight", "default", labels={"karpenter.sh/nodepool": "default"}, requests=full, instance_type=arm.name
    )
    results = run(
        [pod("p", "10m", "16Mi")], pools=[pool(limits={"cpu": "10"})], types=default_catalog(), nodeclaims=[claim]
    )
    assert "limits reached for cpu" in unschedulable(results)["default/p"]


def test_limits_should_schedule_if_limits_would_be_met() -> None:
    """It("should schedule if limits would be met"): a 2-cpu node within a limit of 2."""
    results = run([pod("p", "1750m", "16Mi")], pools=[pool(limits={"cpu": "2"})], types=default_catalog())
    assert not results.unschedulable
    assert results.nodeclaims[0].instance_types == (SMALL,)


def test_limits_should_partially_schedule_if_limits_would_be_exceeded() -> None:
    """It("should partially schedule if limits would be exceeded"): two pods that may not share a node, each
    needing a 2-cpu node, under a limit of 3: one launches, one waits."""
    anti = (PodAffinityTerm(selector(app="foo"), HOSTNAME_LABEL),)
    two = [pod(f"p-{i}", "1500m", "16Mi", labels={"app": "foo"}, pod_anti_affinity=anti) for i in range(2)]
    results = run(two, pools=[pool(limits={"cpu": "3"})], types=default_catalog())
    assert len(results.nodeclaims) == 1 and len(results.unschedulable) == 1


def test_limits_should_not_schedule_if_limits_would_be_exceeded() -> None:
    """It("should not schedule if limits would be exceeded"): 2.1 cpu needs more than the limit of 2."""
    results = run([pod("p", "2100m", "16Mi")], pools=[pool(limits={"cpu": "2"})], types=default_catalog())
    assert "limits leave no room" in unschedulable(results)["default/p"]


def test_limits_should_not_schedule_if_limits_would_be_exceeded_gpu() -> None:
    """It("should not schedule if limits would be exceeded (GPU)"): a limit of one pod slot, and the GPU type
    has more."""
    gpu = from_yaml(
        """
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
"""
    ).pending_pods[0]
    results = run([gpu], pools=[pool(limits={"pods": "1"})], types=default_catalog())
    assert "default/p" in unschedulable(results) and not results.nodeclaims


def test_limits_should_not_schedule_to_a_nodepool_after_a_round_if_limits_would_be_exceeded() -> None:
    """It("should not schedule to a nodepool after a scheduling round if limits would be exceeded")."""
    cluster = Cluster([pool(limits={"cpu": "2"})])
    first, second = pod("a", "1750m", "16Mi"), pod("b", "1750m", "16Mi")
    cluster.provision(first)
    assert cluster.node_of(first) is not None
    results = cluster.provision(second)
    assert "limits reached for cpu" in unschedulable(results)["default/b"]


def test_limits_should_not_schedule_if_limits_would_be_exceeded_node() -> None:
    """It("should not schedule if limits would be exceeded (node)"): a limit of 2 nodes, and pods that may
    not share a node, one per round: two launch, the third waits."""
    anti = (PodAffinityTerm(selector(app="foo"), HOSTNAME_LABEL),)
    cluster = Cluster([pool(limits={"nodes": "2"})])
    rounds = [pod(f"p-{i}", "1500m", "16Mi", labels={"app": "foo"}, pod_anti_affinity=anti) for i in range(3)]
    for p in rounds[:2]:
        cluster.provision(p)
        assert cluster.node_of(p) is not None
    results = cluster.provision(rounds[2])
    assert "limits reached for nodes" in unschedulable(results)["default/p-2"]
    assert not results.nodeclaims and len(cluster.nodes) == 2


# ----- Daemonsets ----------------------------------------------------------------------------------------


def daemonset_yaml(spec: str, name: str = "ds") -> list[DaemonSet]:
    """A DaemonSet whose pod template spec is `spec` (YAML, indented six spaces)."""
    text = f"""
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}, namespace: default}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{spec}
"""
    return list(from_yaml(text).daemonsets)


DS_2 = """      containers: [{name: c, image: x, resources: {requests: {cpu: "2", memory: 2Gi}}}]"""


def launched_type(cluster: Cluster, p: object) -> str:
    return cluster.labels_of(p)[INSTANCE_TYPE]  # type: ignore[arg-type]


def one_gib_pod(name: str = "p", **kwargs: object) -> object:
    return pod(name, "1", "1Gi", **kwargs)  # type: ignore[arg-type]


def test_daemonsets_should_account_for_daemonsets() -> None:
    """Context("Daemonsets") It("should account for daemonsets"): 2 cpu of DaemonSet beside the pod's 1 rule
    out the small type."""
    cluster = Cluster([pool()], daemonsets=daemonset_yaml(DS_2))
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_account_for_daemonsets_with_startup_taint() -> None:
    """It("should account for daemonsets (with startup taint)"): startup taints do not keep DaemonSets off."""
    cluster = Cluster([pool(startup_taints=[Taint("foo.com/taint", "NoSchedule")])], daemonsets=daemonset_yaml(DS_2))
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


LIMITS_ONLY = """      containers: [{name: c, image: x, resources: {limits: {cpu: "3", memory: 1Gi}}}]"""
INIT_3 = """      initContainers: [{name: i, image: x, resources: {requests: {cpu: "3", memory: 1Gi}}}]
      containers: [{name: c, image: x, resources: {requests: {cpu: 100m, memory: 64Mi}}}]"""
ONLY_MEMORY_FITS_NOWHERE = """      initContainers: [{name: i, image: x, resources: {limits: {memory: 3Gi}}}]
      containers: [{name: c, image: x, resources: {limits: {cpu: 100m, memory: 64Mi}}}]"""


def test_daemonsets_should_not_schedule_if_daemonset_overhead_is_too_large() -> None:
    """It("should not schedule if daemonset overhead is too large"): the pod is reported unschedulable with
    a reason, and solve() does not fail. The issue's crash (an IndexError in results.py on main) came from
    DaemonSet overhead written as limits and init containers that only the types of one NodePool could not
    hold: a claim was planned on a type whose allocatable the DaemonSets exceeded and finished with no type
    at all. Such a type is no longer a candidate (Karpenter's rule), so each case ends in a reason."""
    cluster = Cluster([pool()], daemonsets=[daemonset("huge", "10000", "10000Gi")])
    results = cluster.provision(pod("p", "10m", "16Mi"))
    assert "DaemonSet pods" in unschedulable(results)["default/p"]
    small_only = pool("default", req(INSTANCE_TYPE, "In", SMALL))
    for spec in (LIMITS_ONLY, INIT_3, ONLY_MEMORY_FITS_NOWHERE):
        cpu_only = pod("q", "10m", "0")  # no memory request: only the DaemonSet's memory can rule a type out
        results = run([cpu_only], pools=[small_only], types=default_catalog(), daemonsets=daemonset_yaml(spec))
        assert "exceed the allocatable of every instance type" in unschedulable(results)["default/q"]
        assert results.to_json()["nodeclaims"] == []


def test_daemonsets_should_account_for_overhead_using_daemonset_pod_spec_instead_of_daemonset_spec() -> None:
    """It("should account for overhead using daemonset pod spec instead of daemonset spec"): the running
    DaemonSet pod requests 2 cpu where the template asks 4 (a LimitRange or VPA changed it); the pod's
    requests count, so the default type is enough (the node it runs on is cordoned, so the pod needs a new
    one)."""
    ds = daemonset_yaml("""      containers: [{name: c, image: x, resources: {requests: {cpu: "4", memory: 4Gi}}}]""")
    running = dataclasses.replace(pod("ds-abc", "2", "2Gi"), owner_kind="DaemonSet", owner_name="ds", node_name="other")
    other = dataclasses.replace(node("other", real(DEFAULT), ZONE_1, bound=[running]), unschedulable=True)
    p = one_gib_pod(node_selector={"karpenter.sh/nodepool": "default"})
    results = run([p], pools=[pool()], types=default_catalog(), daemonsets=ds, nodes=[other])  # type: ignore[list-item]
    assert not results.unschedulable
    claim = results.nodeclaims[0] if results.nodeclaims else None
    assert claim is not None and claim.cheapest.instance_type == DEFAULT


def test_daemonsets_should_not_schedule_if_requests_not_defined_and_limits_too_large() -> None:
    """It("should not schedule if resource requests are not defined and limits (requests) are too large")."""
    spec = """      containers:
        - {name: c, image: x, resources: {limits: {cpu: "10000", memory: 10000Gi}, requests: {cpu: "1"}}}"""
    results = run([pod("p", "10m", "16Mi")], pools=[pool()], types=default_catalog(), daemonsets=daemonset_yaml(spec))
    assert "DaemonSet pods" in unschedulable(results)["default/p"]


def test_daemonsets_should_schedule_based_on_the_max_of_containers_and_init_containers() -> None:
    """It("should schedule based on the max resource requests of containers and initContainers"): cpu as
    requested (1, init 3), memory from the limits (1Gi, init 3Gi): 3 cpu and 3Gi rule out the small type."""
    spec = """      initContainers:
        - {name: i, image: x, resources: {limits: {cpu: "10000", memory: 3Gi}, requests: {cpu: "3"}}}
      containers:
        - {name: c, image: x, resources: {limits: {cpu: "10000", memory: 1Gi}, requests: {cpu: "1"}}}"""
    ds = daemonset_yaml(spec)
    assert (ds[0].pod.requests["cpu"], ds[0].pod.requests["memory"]) == (3000, 3 << 30)
    cluster = Cluster([pool()], daemonsets=ds)
    p = pod("p", "10m", "16Mi")
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_not_schedule_if_combined_max_resources_are_too_large_for_any_node() -> None:
    """It("should not schedule if combined max resources are too large for any node")."""
    spec = """      initContainers:
        - {name: i, image: x, resources: {limits: {cpu: "10000", memory: 10000Gi}, requests: {cpu: "1"}}}
      containers:
        - {name: c, image: x, resources: {limits: {cpu: "10000", memory: 1Gi}, requests: {cpu: "1"}}}"""
    results = run([pod("p", "10m", "16Mi")], pools=[pool()], types=default_catalog(), daemonsets=daemonset_yaml(spec))
    assert "DaemonSet pods" in unschedulable(results)["default/p"]


def test_daemonsets_should_not_schedule_if_init_container_resources_are_too_large() -> None:
    """It("should not schedule if initContainer resources are too large")."""
    spec = """      initContainers: [{name: i, image: x, resources: {requests: {cpu: "10000", memory: 10000Gi}}}]
      containers: [{name: c, image: x}]"""
    results = run([pod("p", "10m", "16Mi")], pools=[pool()], types=default_catalog(), daemonsets=daemonset_yaml(spec))
    assert "DaemonSet pods" in unschedulable(results)["default/p"]


def test_daemonsets_should_be_able_to_schedule_pods_if_requests_and_limits_are_not_defined() -> None:
    """It("should be able to schedule pods if resource requests and limits are not defined")."""
    ds = daemonset_yaml("""      containers: [{name: c, image: x}]""")
    results = run([pod("p", "10m", "16Mi")], pools=[pool()], types=default_catalog(), daemonsets=ds)
    assert not results.unschedulable


def test_daemonsets_should_ignore_daemonsets_without_matching_tolerations() -> None:
    """It("should ignore daemonsets without matching tolerations"): the small type will do."""
    tainted = pool(taints=[Taint("foo", "NoSchedule", "bar")])
    cluster = Cluster([tainted], daemonsets=daemonset_yaml(DS_2))
    p = one_gib_pod(tolerations=(Toleration(operator="Exists"),))
    cluster.provision(p)
    assert launched_type(cluster, p) == SMALL


def test_daemonsets_should_ignore_daemonsets_with_an_invalid_selector() -> None:
    """It("should ignore daemonsets with an invalid selector"): a label no node of the NodePool has."""
    ds = daemonset_yaml("      nodeSelector: {node: invalid}\n" + DS_2)
    cluster = Cluster([pool()], daemonsets=ds)
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == SMALL


def required_yaml(key: str, *values: str) -> str:
    """A pod template's required node affinity (YAML, indented six spaces): `key` In `values`."""
    return f"""      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{{matchExpressions: [{{key: {key}, operator: In, values: [{", ".join(values)}]}}]}}]
"""


def ds_containers(cpu: str, memory: str = "", host_port_: int = 0) -> str:
    requests = f'cpu: "{cpu}"' + (f", memory: {memory}" if memory else "")
    ports = f", ports: [{{containerPort: {host_port_}, hostPort: {host_port_}}}]" if host_port_ else ""
    return f"""      containers: [{{name: c, image: x{ports}, resources: {{requests: {{{requests}}}}}}}]"""


# fake.LabelInstanceSize is "large" on the fake types of over 4 vCPU and 8 GiB and "small" on the others. Of the
# default catalog's real types r6g.4xlarge (arm-instance-type) is the large one, t3.small, c5.xlarge and
# g4dn.xlarge the small ones, so on karpenter.k8s.aws/instance-size "small" reads small or xlarge, "large" 4xlarge.
FAKE_SMALL = ("small", "xlarge")
FAKE_LARGE = ("4xlarge",)


def test_daemonsets_should_ignore_daemonsets_when_no_instance_types_meet_the_daemonset_requirements() -> None:
    """It("should ignore daemonsets when no instance types meet the daemonset requirements"): the DaemonSet
    asks for an instance type no type is, so its 2 cpu count nowhere and the small type will do."""
    ds = daemonset_yaml(required_yaml(INSTANCE_TYPE, "non-existent-instance-type") + DS_2)
    cluster = Cluster([pool()], daemonsets=ds)
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == SMALL


def test_daemonsets_should_account_for_daemonsets_with_a_custom_label_node_selector_that_matches_the_nodepool() -> None:
    """It("should account for daemonsets with a custom label nodeSelector that matches the nodepool"): the
    NodePool's template label purpose=monitoring is what the DaemonSet selects, so its 2 cpu count."""
    ds = daemonset_yaml("      nodeSelector: {purpose: monitoring}\n" + DS_2)
    cluster = Cluster([pool(labels={"purpose": "monitoring"})], daemonsets=ds)
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_filter_out_daemonsets_based_on_instance_type_requirements() -> None:
    """It("should filter out daemonsets based on instance type requirements"): a 1-cpu DaemonSet on the small
    sizes and a 10-cpu one on the large: on a small type only the first counts, so 2 cpu rule out the small
    type and the default one (not the large arm type the second would need) launches."""
    small_ds = daemonset_yaml(required_yaml(INSTANCE_SIZE, *FAKE_SMALL) + ds_containers("1"), "small-ds")
    large_ds = daemonset_yaml(required_yaml(INSTANCE_SIZE, *FAKE_LARGE) + ds_containers("10"), "large-ds")
    cluster = Cluster([pool()], daemonsets=small_ds + large_ds)
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_account_daemonsets_with_not_in_operator_and_unspecified_key() -> None:
    """It("should account daemonsets with NotIn operator and unspecified key")."""
    spec = (
        """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: foo, operator: NotIn, values: [bar]}]}]
"""
        + DS_2
    )
    cluster = Cluster([pool()], daemonsets=daemonset_yaml(spec))
    p = one_gib_pod(required_node_terms=(NodeSelectorTerm((req(ZONE, "In", ZONE_2),)),))
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_remove_daemonset_node_hostname_affinity_when_considering_schedulability() -> None:
    """It("should remove daemonset node hostname affinity when considering daemonset schedulability"): the
    running DaemonSet pod (bound to one node by name) gives the requests, the template the node affinity."""
    spec = """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: foo, operator: In, values: [bar]}]}]
      containers: [{name: c, image: x, resources: {requests: {cpu: "4", memory: 4Gi}}}]"""
    running = dataclasses.replace(
        pod("ds-abc", "2", "2Gi", required_node_terms=(NodeSelectorTerm((req(HOSTNAME_LABEL, "In", "node-name"),)),)),
        owner_kind="DaemonSet",
        owner_name="ds",
        node_name="other",
    )
    other = node("other", real(DEFAULT), ZONE_1, bound=[running])
    labelled = pool(labels={"foo": "bar"})
    p = one_gib_pod(node_selector={"foo": "bar"})
    results = run([p], pools=[labelled], types=default_catalog(), daemonsets=daemonset_yaml(spec), nodes=[other])  # type: ignore[list-item]
    assert results.nodeclaims[0].cheapest.instance_type == DEFAULT


def test_daemonsets_should_consider_a_daemonset_schedulable_with_multiple_node_affinity_terms() -> None:
    """It("should consider a daemonset schedulable with multiple node affinity terms"): its second term
    matches the NodePool's label."""
    spec = (
        """      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: foo, operator: In, values: [voo]}]
              - matchExpressions: [{key: foo, operator: In, values: [bar]}]
"""
        + DS_2
    )
    cluster = Cluster([pool(labels={"foo": "bar"})], daemonsets=daemonset_yaml(spec))
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_consider_a_daemonset_schedulable_with_an_incompatible_node_affinity_preference() -> None:
    """It("should consider a daemonset schedulable with an incompatible node affinity preference")."""
    spec = (
        """      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - {weight: 1, preference: {matchExpressions: [{key: node, operator: In, values: [invalid]}]}}
"""
        + DS_2
    )
    cluster = Cluster([pool()], daemonsets=daemonset_yaml(spec))
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_consider_a_daemonset_schedulable_with_a_prefer_no_schedule_taint() -> None:
    """It("should consider a daemonset schedulable with a PreferNoSchedule taint")."""
    cluster = Cluster([pool(taints=[Taint("test", "PreferNoSchedule")])], daemonsets=daemonset_yaml(DS_2))
    p = one_gib_pod()
    cluster.provision(p)
    assert launched_type(cluster, p) == DEFAULT


def test_daemonsets_should_not_account_for_daemonset_hostports_when_daemonset_would_not_schedule_on_node() -> None:
    """It("should not account for daemonset hostports when daemonset would not schedule on selected node"): the
    DaemonSet holding port 8080 runs on the large sizes only, so a small-size pod asking for 8080 launches a
    small type beside the other DaemonSet (2 cpu, port 8081): the default type, as in Karpenter's case."""
    large_ds = daemonset_yaml(
        required_yaml(INSTANCE_SIZE, *FAKE_LARGE) + ds_containers("4", "4Gi", host_port_=8080), "large-ds"
    )
    small_ds = daemonset_yaml(
        required_yaml(INSTANCE_SIZE, *FAKE_SMALL) + ds_containers("2", "2Gi", host_port_=8081), "small-ds"
    )
    cluster = Cluster([pool()], daemonsets=large_ds + small_ds)
    p = one_gib_pod(
        required_node_terms=(NodeSelectorTerm((req(INSTANCE_SIZE, "In", *FAKE_SMALL),)),),
        host_ports=(host_port(8080),),
    )
    cluster.provision(p)
    assert cluster.labels_of(p)[INSTANCE_SIZE] in FAKE_SMALL
    assert launched_type(cluster, p) == DEFAULT


# ----- Taints --------------------------------------------------------------------------------------------


def test_taints_should_schedule_pods_that_tolerate_taints() -> None:
    """Context("Taints") It("should schedule pods that tolerate taints")."""
    gpu_taint = pool(taints=[Taint("nvidia.com/gpu", "NoSchedule", "true")])
    tolerations = (
        Toleration("nvidia.com/gpu", "Equal", "true", "NoSchedule"),
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("nvidia.com/gpu", "Exists"),
        Toleration(operator="Exists"),
    )
    tolerant = [pod(f"p-{i}", "10m", "16Mi", tolerations=(t,)) for i, t in enumerate(tolerations)]
    results = run(tolerant, pools=[gpu_taint], types=default_catalog())
    assert not results.unschedulable
    intolerant = run([pod("q", "10m", "16Mi")], pools=[gpu_taint], types=default_catalog())
    assert "taint nvidia.com/gpu" in unschedulable(intolerant)["default/q"]


# ----- Volume Topology Requirements ----------------------------------------------------------------------

STORAGE = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [us-east-1b, us-east-1c]}]}]
"""


def volume_case(objects: str, pod_spec: str = "") -> Results:
    """The suite's StorageClass (zones 2 and 3, WaitForFirstConsumer), `objects`, and a pod `p` using claim
    `claim` (or whatever `pod_spec` says), solved with one NodePool; and a pod `other` with no volume."""
    spec = pod_spec or "volumes: [{name: v, persistentVolumeClaim: {claimName: claim}}]"
    inputs = from_yaml(
        STORAGE
        + "---"
        + objects
        + f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: p, namespace: default}}
spec:
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}}}]
  {spec}
---
apiVersion: v1
kind: Pod
metadata: {{name: other, namespace: default}}
spec:
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}}}]
"""
    )
    return solve(
        inputs.pending_pods,
        nodepools=[pool()],
        nodeclasses=[nodeclass()],
        instance_types=spread_catalog(),
        pvcs=inputs.pvcs,
        pvs=inputs.pvs,
        storage_classes=inputs.storage_classes,
    )


def claim_yaml(storage_class: str | None = "zonal", volume: str = "", name: str = "claim") -> str:
    sc = "" if storage_class is None else f"storageClassName: {storage_class!r}"
    vol = f"volumeName: {volume}" if volume else ""
    return f"""
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {name}, namespace: default}}
spec: {{{", ".join(x for x in (sc, vol) if x)}}}
"""


def volume_yaml(name: str, *, zones: tuple[str, ...] = (), hostname: str = "", local: str = "") -> str:
    terms = []
    if zones:
        terms.append(f"{{key: topology.kubernetes.io/zone, operator: In, values: [{', '.join(zones)}]}}")
    if hostname:
        terms.append(f"{{key: kubernetes.io/hostname, operator: In, values: [{hostname}]}}")
    affinity = f"nodeAffinity: {{required: {{nodeSelectorTerms: [{{matchExpressions: [{', '.join(terms)}]}}]}}}}"
    source = local or "csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}"
    return f"""
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {name}}}
spec:
  {source}
  {affinity if terms else ""}
"""


def zone_of(results: Results, key: str = "default/p") -> str:
    assert key not in unschedulable(results), unschedulable(results)
    (zone,) = next(c for c in results.nodeclaims if key in c.pods).zones
    return zone


def test_volume_topology_should_not_schedule_if_invalid_pvc() -> None:
    """Context("Volume Topology Requirements") It("should not schedule if invalid pvc") and It("should schedule
    valid pods when a pod with an invalid pvc is encountered (pvc)")."""
    results = volume_case("", "volumes: [{name: v, persistentVolumeClaim: {claimName: invalid}}]")
    assert "PersistentVolumeClaim default/invalid not found" in unschedulable(results)["default/p"]
    assert "default/other" not in unschedulable(results)


def test_volume_topology_should_schedule_with_an_empty_storage_class_if_the_pvc_is_bound() -> None:
    """It("should schedule with an empty storage class if the pvc is bound")."""
    results = volume_case(claim_yaml("", "test-volume") + "---" + volume_yaml("test-volume"))
    assert not results.unschedulable


def test_volume_topology_should_not_schedule_with_an_empty_storage_class_if_the_pvc_is_not_bound() -> None:
    """It("should not schedule with an empty storage class if the pvc is not bound")."""
    results = volume_case(claim_yaml(""))
    assert "names no storageClassName" in unschedulable(results)["default/p"]


def test_volume_topology_should_schedule_with_a_missing_storage_class_if_the_pvc_is_bound() -> None:
    """It("should schedule with a missing storage class if the pvc is bound")."""
    results = volume_case(claim_yaml("missing-storage-class", "test-volume") + "---" + volume_yaml("test-volume"))
    assert not results.unschedulable


def test_volume_topology_should_not_schedule_with_a_missing_storage_class_if_the_pvc_is_not_bound() -> None:
    """It("should not schedule with a missing storage class if the pvc is not bound") and It("should schedule
    valid pods when a pod with an invalid pvc is encountered (storage class)")."""
    results = volume_case(claim_yaml("missing-storage-class"))
    assert "StorageClass missing-storage-class" in unschedulable(results)["default/p"]
    assert "default/other" not in unschedulable(results)


def test_volume_topology_should_schedule_valid_pods_when_a_pod_with_an_invalid_pvc_is_encountered_volume_name() -> None:
    """It("should schedule valid pods when a pod with an invalid pvc is encountered (volume name)")."""
    results = volume_case(claim_yaml(None, "invalid-volume-name"))
    assert "PersistentVolume invalid-volume-name" in unschedulable(results)["default/p"]
    assert "default/other" not in unschedulable(results)


ZONE_1_OR_3 = "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [%s]}]}]}}}"  # noqa: E501
EPHEMERAL = "volumes: [{name: v, ephemeral: {volumeClaimTemplate: {spec: {storageClassName: zonal}}}}]"


def test_volume_topology_should_schedule_to_storage_class_zones_if_volume_does_not_exist() -> None:
    """It("should schedule to storage class zones if volume does not exist")."""
    spec = (
        "volumes: [{name: v, persistentVolumeClaim: {claimName: claim}}]\n  " + ZONE_1_OR_3 % "us-east-1a, us-east-1c"
    )
    assert zone_of(volume_case(claim_yaml(), spec)) == ZONE_3


def test_volume_topology_should_schedule_to_storage_class_zones_if_volume_does_not_exist_ephemeral() -> None:
    """It("should schedule to storage class zones if volume does not exist (ephemeral volume)")."""
    spec = EPHEMERAL + "\n  " + ZONE_1_OR_3 % "us-east-1a, us-east-1c"
    assert zone_of(volume_case("", spec)) == ZONE_3


def test_volume_topology_should_not_schedule_if_storage_class_zones_are_incompatible() -> None:
    """It("should not schedule if storage class zones are incompatible")."""
    spec = "volumes: [{name: v, persistentVolumeClaim: {claimName: claim}}]\n  " + ZONE_1_OR_3 % "us-east-1a"
    assert "default/p" in unschedulable(volume_case(claim_yaml(), spec))


def test_volume_topology_should_not_schedule_if_storage_class_zones_are_incompatible_ephemeral_volume() -> None:
    """It("should not schedule if storage class zones are incompatible (ephemeral volume)"): the claim the
    ephemeral volume creates has the class of zones 2 and 3; the pod requires zone 1."""
    results = volume_case("", EPHEMERAL + "\n  " + ZONE_1_OR_3 % "us-east-1a")
    assert not results.nodeclaims or all("default/p" not in c.pods for c in results.nodeclaims)
    assert "default/p" in unschedulable(results)


def test_volume_topology_should_schedule_to_volume_zones_if_volume_already_bound() -> None:
    """It("should schedule to volume zones if volume already bound")."""
    bound = claim_yaml("zonal", "pv") + "---" + volume_yaml("pv", zones=("us-east-1c",))
    assert zone_of(volume_case(bound)) == ZONE_3


def test_volume_topology_should_schedule_to_volume_zones_if_volume_already_bound_ephemeral_volume() -> None:
    """It("should schedule to volume zones if volume already bound (ephemeral volume)"): the claim the ephemeral
    volume creates, <pod>-<volume>, already exists and is bound to a zone-3 volume."""
    ephemeral = claim_yaml("zonal", "pv", name="p-v") + "---" + volume_yaml("pv", zones=("us-east-1c",))
    assert zone_of(volume_case(ephemeral, EPHEMERAL)) == ZONE_3


LOCAL_SOURCES = [
    pytest.param("local: {path: /mnt/disk}", id="when using local volumes"),
    pytest.param("hostPath: {path: /mnt/disk}", id="when using hostpath volumes"),
]


def local_path_objects(source: str) -> str:
    """A local-path class, claim `claim` bound to volume `pv` of `source` whose affinity names random-node."""
    local_class = STORAGE.replace("name: zonal", "name: local-path").replace(
        "provisioner: ebs.csi.aws.com", "provisioner: kubernetes.io/no-provisioner"
    )
    return (
        local_class
        + "---"
        + claim_yaml("local-path", "pv")
        + "---"
        + volume_yaml("pv", hostname="random-node", local=source)
    )


@pytest.mark.parametrize("source", LOCAL_SOURCES)
def test_volume_topology_should_ignore_hostname_affinity_scheduling_when_using_local_path_volumes(source: str) -> None:
    """DescribeTable("should ignore hostname affinity scheduling when using local path volumes"), Entry("when
    using local volumes") and Entry("when using hostpath volumes"): the volume's node may be gone; its hostname
    is not a rule, so the pod schedules."""
    results = volume_case(local_path_objects(source))
    assert not results.unschedulable
    assert any("default/p" in c.pods for c in results.nodeclaims)


@pytest.mark.parametrize("source", LOCAL_SOURCES)
def test_volume_topology_should_ignore_hostname_affinity_scheduling_when_using_local_path_volumes_ephemeral(
    source: str,
) -> None:
    """DescribeTable("should ignore hostname affinity scheduling when using local path volumes (ephemeral
    volume)"), Entry("when using local volumes") and Entry("when using hostpath volumes"): the same with the
    claim <pod>-<volume> an ephemeral volume creates, already bound."""
    objects = local_path_objects(source).replace("name: claim,", "name: p-v,")
    spec = EPHEMERAL.replace("storageClassName: zonal", "storageClassName: local-path")
    results = volume_case(objects, spec)
    assert not results.unschedulable
    assert any("default/p" in c.pods for c in results.nodeclaims)


def test_volume_topology_should_not_ignore_hostname_affinity_when_using_non_local_path_volumes() -> None:
    """It("should not ignore hostname affinity when using non-local path volumes")."""
    objects = claim_yaml("zonal", "pv") + "---" + volume_yaml("pv", hostname="random-node")
    results = volume_case(objects)
    assert "kubernetes.io/hostname" in unschedulable(results)["default/p"]


def test_volume_topology_should_not_schedule_if_volume_zones_are_incompatible() -> None:
    """It("should not schedule if volume zones are incompatible")."""
    spec = "volumes: [{name: v, persistentVolumeClaim: {claimName: claim}}]\n  " + ZONE_1_OR_3 % "us-east-1a"
    bound = claim_yaml("zonal", "pv") + "---" + volume_yaml("pv", zones=("us-east-1c",))
    assert "default/p" in unschedulable(volume_case(bound, spec))


def test_volume_topology_should_not_schedule_if_volume_zones_are_incompatible_ephemeral_volume() -> None:
    """It("should not schedule if volume zones are incompatible (ephemeral volume)"): the ephemeral volume's claim
    is bound to a zone-3 volume; the pod requires zone 1."""
    ephemeral = claim_yaml("zonal", "pv", name="p-v") + "---" + volume_yaml("pv", zones=("us-east-1c",))
    assert "default/p" in unschedulable(volume_case(ephemeral, EPHEMERAL + "\n  " + ZONE_1_OR_3 % "us-east-1a"))


def test_volume_topology_should_not_relax_an_added_volume_topology_zone_node_selector_away() -> None:
    """It("should not relax an added volume topology zone node-selector away"): the volume's zone is added
    to every ORed term, so the term that launches (on-demand) still lands in zone 3."""
    spec = """volumes: [{name: v, persistentVolumeClaim: {claimName: claim}}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions: [{key: example.com/label, operator: In, values: [unsupported]}]
          - matchExpressions: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]"""
    bound = claim_yaml("zonal", "pv") + "---" + volume_yaml("pv", zones=("us-east-1c",))
    assert zone_of(volume_case(bound, spec)) == ZONE_3


# ----- Preferential Fallback -----------------------------------------------------------------------------


def test_preferential_fallback_should_tolerate_prefer_no_schedule_taint_only_after_relaxing_affinity() -> None:
    """Context("Preferential Fallback") It("should tolerate PreferNoSchedule taint only after trying to relax
    Affinity terms") (its Required cases and the other Preferences cases are the scheduling suite's, ported
    there)."""
    prefer = Taint("foo", "PreferNoSchedule", "bar")
    prefs = (preferred(1, req(ZONE, "In", "invalid")), preferred(1, req(INSTANCE_TYPE, "In", "invalid")))
    results = run(
        [pod("p", "10m", "16Mi", preferred_node_terms=prefs)], pools=[pool(taints=[prefer])], types=default_catalog()
    )
    assert not results.unschedulable
    assert prefer in results.nodeclaims[0].taints


def test_preferential_fallback_should_ignore_node_preferred_affinity_that_cannot_be_met() -> None:
    """DescribeTable("should ignore node preferredDuringSchedulingIgnoredDuringExecution affinity") (zone and
    hostname entries): a preference nothing meets is relaxed, and the pod joins the first pod's node."""
    for key in (ZONE, HOSTNAME_LABEL):
        first = pod("first", "2", "16Mi", labels={"app": "foo"})
        second = pod(
            "second",
            "1",
            "16Mi",
            labels={"app": "baz"},
            preferred_node_terms=(preferred(1, req(key, "In", "value-1")),),
        )
        cluster = Cluster([pool()])
        cluster.provision(first, second)
        assert cluster.where(first) == cluster.where(second) is not None, key


# ----- Multiple NodePools --------------------------------------------------------------------------------


def test_multiple_nodepools_should_schedule_to_an_explicitly_selected_nodepool() -> None:
    """Context("Multiple NodePools") It("should schedule to an explicitly selected NodePool")."""
    results = run(
        [pod("p", "10m", "16Mi", node_selector={"karpenter.sh/nodepool": "b"})],
        pools=[pool("a"), pool("b")],
        types=default_catalog(),
    )
    assert results.nodeclaims[0].nodepool == "b"


def test_multiple_nodepools_should_schedule_to_a_nodepool_by_labels() -> None:
    """It("should schedule to a NodePool by labels")."""
    results = run(
        [pod("p", "10m", "16Mi", node_selector={"foo": "bar"})],
        pools=[pool("a"), pool("b", labels={"foo": "bar"})],
        types=default_catalog(),
    )
    assert results.nodeclaims[0].nodepool == "b"


def test_multiple_nodepools_should_not_match_nodepool_with_prefer_no_schedule_taint_when_other_matches() -> None:
    """It("should not match NodePool with PreferNoSchedule taint when other NodePool match"): the tainted
    NodePool comes first (equal weights: the name later in the alphabet first, as OrderByWeight), and still
    the other is used."""
    pools = [pool("a"), pool("b", taints=[Taint("foo", "PreferNoSchedule", "bar")])]
    results = run([pod("p", "10m", "16Mi")], pools=pools, types=default_catalog())
    assert results.nodeclaims[0].nodepool == "a"


def test_weighted_nodepools_should_schedule_to_the_nodepool_with_the_highest_priority_always() -> None:
    """Context("Weighted NodePools") It("should schedule to the nodepool with the highest priority always")."""
    pools = [pool("a"), pool("b", weight=20), pool("c", weight=100)]
    results = run(pods("p", 3, cpu="10m", memory="16Mi"), pools=pools, types=default_catalog())
    assert {c.nodepool for c in results.nodeclaims} == {"c"}


def test_weighted_nodepools_should_schedule_to_explicitly_selected_nodepool_even_if_others_are_heavier() -> None:
    """It("should schedule to explicitly selected nodepool even if other nodePools are higher priority")."""
    pools = [pool("a"), pool("b", weight=20), pool("c", weight=100)]
    results = run(
        [pod("p", "10m", "16Mi", node_selector={"karpenter.sh/nodepool": "a"})], pools=pools, types=default_catalog()
    )
    assert results.nodeclaims[0].nodepool == "a"
