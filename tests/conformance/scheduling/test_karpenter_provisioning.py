"""Karpenter v1.9.1 scheduling/suite_test.go and provisioning/suite_test.go cases, ported case by case.

Each test names the Karpenter file and It it mirrors; instance types are real (see sched_fake).
"""

from __future__ import annotations

from builders import daemonset, host_port, pod, pool, pvc, run, storage_class, unschedulable
from sched_fake import ZONE_1, Cluster, default_catalog

from nodewright.catalog.labels import ARCH, CAPACITY_TYPE
from nodewright.model.objects import HOSTNAME_LABEL

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
