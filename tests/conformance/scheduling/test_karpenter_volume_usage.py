"""Karpenter v1.14.1 pkg/controllers/provisioning/scheduling/suite_test.go, Describe("VolumeUsage"), ported case by
case: every It, every DescribeTable Entry and the CSIMigration context.

Each test names the It or Entry it mirrors. Karpenter's BeforeEach gives the suite one made-up instance type with
1024 vCPU and room for 1024 pods; here it is m5.4xlarge (16 vCPU, 234 pods: room for the 101 pods a case places).
The objects (StorageClasses, claims, volumes, pods with ephemeral volumes) are written as YAML and read by the
loader, which creates an ephemeral volume's claim `<pod>-<volume>` and gives a claim without a class the default.

How the volume facts map:

- Karpenter counts a node's volume attachments per CSI driver against the CSINode object's allocatable count, and
  knows no limit for a node that has not registered one. nodewright counts EBS attachments (claims whose volume or
  StorageClass uses ebs.csi.aws.com, or the in-tree kubernetes.io/aws-ebs it migrates to) against the node's
  `attachable-volumes-aws-ebs` allocatable when the node reports one, else its instance type's EBS limit, and a
  new NodeClaim against its instance type's limit. So Karpenter's `csiProvider` is ebs.csi.aws.com here, its CSINode
  count N is the registered node's `attachable-volumes-aws-ebs: N`, and its "other-provider" is a driver nodewright
  does not count (efs.csi.aws.com).
- test-zone-1/2 are us-east-1a/b (sched_fake). The first node of a case that counts attachments is pinned to
  test-zone-1, where the cases' volumes are, so the limit is what decides whether later pods fit on it (in
  Karpenter's run the node's zone is whatever the fake provider launched, and a node elsewhere gives the same
  count of nodes for another reason).
"""

from __future__ import annotations

import pytest
from builders import nodeclass, pod, pool, req, unschedulable
from sched_fake import ZONE_1, ZONE_2, Cluster, from_yaml, real

from nodewright.catalog.allocatable import allocatable_for
from nodewright.catalog.labels import CAPACITY_TYPE, INSTANCE_FAMILY, ZONE
from nodewright.catalog.types import InstanceType
from nodewright.model.inputs import ClusterInputs
from nodewright.model.objects import Pod
from nodewright.scheduling.classes import EBS_VOLUMES
from nodewright.scheduling.results import Results
from nodewright.scheduling.solver import solve

FILE = "pkg/controllers/provisioning/scheduling/suite_test.go"
BIG = "m5.4xlarge"
EBS = "ebs.csi.aws.com"
OTHER = "efs.csi.aws.com"  # Karpenter's "other-provider": a driver whose attachments nodewright does not count


def catalog() -> list[InstanceType]:
    """The VolumeUsage BeforeEach's one instance type."""
    return [real(BIG)]


def suite_pool() -> object:
    return pool("default", req(CAPACITY_TYPE, "In", "spot", "on-demand"))


# ----- objects as YAML -------------------------------------------------------------------------------------------


def sc_yaml(
    name: str,
    provisioner: str = EBS,
    *,
    mode: str = "WaitForFirstConsumer",
    zones: tuple[str, ...] = (ZONE_1,),
    terms: tuple[str, ...] = (),
    default: bool = False,
    created: str = "2024-01-01T00:00:00Z",
) -> str:
    """test.StorageClass: `zones` as one allowed topology term, or `terms` (each a matchLabelExpressions list)."""
    topologies = terms or ((f"[{{key: topology.kubernetes.io/zone, values: [{', '.join(zones)}]}}]",) if zones else ())
    allowed = ", ".join(f"{{matchLabelExpressions: {t}}}" for t in topologies)
    annotations = '{storageclass.kubernetes.io/is-default-class: "true"}' if default else "{}"
    return f"""
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: {name}, annotations: {annotations}, creationTimestamp: "{created}"}}
provisioner: {provisioner}
volumeBindingMode: {mode}
allowedTopologies: [{allowed}]
"""


def pvc_yaml(name: str, storage_class: str | None = None, volume: str = "", extra: str = "") -> str:
    """test.PersistentVolumeClaim: a claim with a volumeName carries pv.kubernetes.io/bind-completed, as there."""
    spec = []
    if storage_class is not None:
        spec.append(f"storageClassName: {storage_class!r}")
    if volume:
        spec.append(f"volumeName: {volume}")
    annotations = '{pv.kubernetes.io/bind-completed: "yes"}' if volume else "{}"
    return f"""
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {name}, namespace: default, annotations: {annotations}{extra}}}
spec: {{{", ".join(spec)}}}
"""


def pv_yaml(
    name: str, *, zones: tuple[str, ...] = (), terms: tuple[str, ...] = (), source: str = "", extra: str = ""
) -> str:
    """test.PersistentVolume: a CSI volume of `source` (default an EBS one), its affinity `zones` as one term or
    `terms` (each a matchExpressions list)."""
    zone_term = f"[{{key: topology.kubernetes.io/zone, operator: In, values: [{', '.join(zones)}]}}]"
    node_terms = terms or ((zone_term,) if zones else ())
    affinity = ", ".join(f"{{matchExpressions: {t}}}" for t in node_terms)
    source = source or f"csi: {{driver: {EBS}, volumeHandle: {name}}}"
    return f"""
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {name}{extra}}}
spec:
  {source}
  {f"nodeAffinity: {{required: {{nodeSelectorTerms: [{affinity}]}}}}" if node_terms else ""}
"""


def pod_yaml(name: str, *claims: str, ephemeral: str | None = None, extra: str = "") -> str:
    """A pod using `claims` (one volume each, in order), and with `ephemeral` an ephemeral volume `tmp-ephemeral`
    whose claim template names that StorageClass ("" for none written, "''" for the empty class)."""
    volumes = [f"{{name: v{i}, persistentVolumeClaim: {{claimName: {c}}}}}" for i, c in enumerate(claims)]
    if ephemeral is not None:
        sc = f"storageClassName: {ephemeral}, " if ephemeral else ""
        volumes.append(
            "{name: tmp-ephemeral, ephemeral: {volumeClaimTemplate: {spec: {"
            + sc
            + "accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}"
        )
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default{extra}}}
spec:
  containers: [{{name: c, image: x, resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}}}]
  volumes: [{", ".join(volumes)}]
"""


def load(*docs: str) -> ClusterInputs:
    return from_yaml("---".join(docs))


def volume_inputs(inputs: ClusterInputs) -> dict[str, object]:
    return {"pvcs": inputs.pvcs, "pvs": inputs.pvs, "storage_classes": inputs.storage_classes}


def solve_inputs(inputs: ClusterInputs, types: list[InstanceType] | None = None) -> Results:
    """ExpectProvisioned of the inputs' pending pods against an empty cluster."""
    return solve(
        inputs.pending_pods,
        nodepools=[suite_pool()],  # type: ignore[list-item]
        nodeclasses=[nodeclass()],
        instance_types=types or catalog(),
        **volume_inputs(inputs),  # type: ignore[arg-type]
    )


def first_node(cluster: Cluster, initial: Pod, limit: int | None, inputs: ClusterInputs | None = None) -> str:
    """The case's first ExpectProvisioned of `initial`, then the CSINode: the node registers with `limit` EBS
    attachments allocatable (None: no count reported, the instance type's limit applies)."""
    results = cluster.provision(initial, **(volume_inputs(inputs) if inputs else {}))
    assert not results.unschedulable, results.unschedulable
    (claim,) = [c for c in cluster.claims if not cluster.claims[c].registered]
    it = next(t for t in cluster.types if t.name == cluster.claims[claim].instance_type)
    allocatable = dict(allocatable_for(it, None))
    if limit is not None:
        allocatable[EBS_VOLUMES] = limit
    return cluster.register(claim, allocatable=allocatable).name


def zone_1_pod(name: str = "initial") -> Pod:
    return pod(name, "10m", "16Mi", node_selector={ZONE: ZONE_1})


def nodes(cluster: Cluster) -> int:
    """Karpenter's nodeList length: the nodes, and the NodeClaims launched that have not registered yet."""
    return len(cluster.nodes) + sum(1 for c in cluster.claims.values() if not c.registered)


def on(cluster: Cluster, name: str) -> int:
    return len(cluster.nodes[name].pods)


def anti_pod_yaml(name: str, claim: str, app: str) -> str:
    """A pod using `claim`, labelled app=`app` and avoiding zones with another such pod."""
    text = pod_yaml(name, claim)
    head, spec = text.split("spec:\n", 1)
    return (
        head.replace("namespace: default}", "namespace: default, labels: {app: " + app + "}}")
        + "spec:\n"
        + (
            "  affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: "
            "{matchLabels: {app: " + app + "}}, topologyKey: topology.kubernetes.io/zone}]}}\n"
        )
        + spec
    )


def zones_of(results: Results, *keys: str) -> list[str]:
    assert not results.unschedulable, results.unschedulable
    out = []
    for key in keys:
        (zone,) = next(c for c in results.nodeclaims if key in c.pods).zones
        out.append(zone)
    return out


# ----- VolumeUsage -----------------------------------------------------------------------------------------------


def test_volume_usage_should_launch_multiple_nodes_if_required_due_to_volume_limits() -> None:
    """Describe("VolumeUsage") It("should launch multiple nodes if required due to volume limits"): the first
    node may attach 10 volumes (its CSINode count, here its `attachable-volumes-aws-ebs`), so of 6 pods with two
    new EBS claims each it takes 5 and a second node is launched for the sixth."""
    cluster = Cluster([suite_pool()], catalog(), inflight=True)  # type: ignore[list-item]
    first = first_node(cluster, zone_1_pod(), 10)
    docs = [sc_yaml("my-storage-class")]
    for i in range(6):
        docs += [pvc_yaml(f"my-claim-a-{i}", "my-storage-class"), pvc_yaml(f"my-claim-b-{i}", "my-storage-class")]
        docs.append(pod_yaml(f"p-{i}", f"my-claim-a-{i}", f"my-claim-b-{i}"))
    inputs = load(*docs)
    results = cluster.provision(*inputs.pending_pods, **volume_inputs(inputs))
    assert not results.unschedulable, results.unschedulable
    assert nodes(cluster) == 2
    assert on(cluster, first) == 1 + 5


def test_volume_usage_should_launch_a_single_node_if_all_pods_use_the_same_pvc() -> None:
    """It("should launch a single node if all pods use the same PVC"): 100 pods sharing one bound EBS claim attach
    it once, so all fit the first node (10 attachments allowed) and no node is launched."""
    cluster = Cluster([suite_pool()], catalog(), inflight=True)  # type: ignore[list-item]
    first = first_node(cluster, zone_1_pod(), 10)
    docs = [
        sc_yaml("my-storage-class", mode="Immediate"),
        pv_yaml("my-volume", zones=(ZONE_1,)),
        pvc_yaml("my-claim", "my-storage-class", "my-volume"),
    ]
    docs += [pod_yaml(f"p-{i}", "my-claim") for i in range(100)]
    inputs = load(*docs)
    results = cluster.provision(*inputs.pending_pods, **volume_inputs(inputs))
    assert not results.unschedulable, results.unschedulable
    assert nodes(cluster) == 1
    assert on(cluster, first) == 101


def test_volume_usage_should_not_fail_for_nfs_volumes() -> None:
    """It("should not fail for NFS volumes"): an NFS volume (no CSI driver) is no attachment; 5 pods naming the
    same claim twice all go to the first node, in the volume's zone."""
    cluster = Cluster([suite_pool()], catalog(), inflight=True)  # type: ignore[list-item]
    first = first_node(cluster, zone_1_pod(), None)
    docs = [
        pv_yaml("my-volume", zones=(ZONE_1,), source="nfs: {server: fake.server, path: /some/path}"),
        pvc_yaml("my-claim", "", "my-volume"),
    ]
    docs += [pod_yaml(f"p-{i}", "my-claim", "my-claim") for i in range(5)]
    inputs = load(*docs)
    results = cluster.provision(*inputs.pending_pods, **volume_inputs(inputs))
    assert not results.unschedulable, results.unschedulable
    assert nodes(cluster) == 1
    assert on(cluster, first) == 6


ZONE_TERMS = (
    f"[{{key: topology.kubernetes.io/zone, operator: In, values: [{ZONE_1}]}}]",
    f"[{{key: topology.kubernetes.io/zone, operator: In, values: [{ZONE_2}]}}]",
)


def test_volume_usage_should_schedule_pods_using_a_pv_with_multiple_zones() -> None:
    """It("should schedule pods using a PV with multiple zones"): each volume's ORed terms allow zone 1 or 2; the
    pods' zone anti-affinity sends them to different ones, each in a zone its volume allows."""
    docs = []
    for i in range(2):
        docs.append(pv_yaml(f"multi-zone-pv-{i}", terms=ZONE_TERMS))
        docs.append(pvc_yaml(f"multi-zone-pvc-{i}", None, f"multi-zone-pv-{i}"))
        docs.append(anti_pod_yaml(f"pod-{i}", f"multi-zone-pvc-{i}", "multi-zone-app"))
    zone_0, zone_1 = zones_of(solve_inputs(load(*docs)), "default/pod-0", "default/pod-1")
    assert {zone_0, zone_1} == {ZONE_1, ZONE_2}


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("local: {path: /mnt/local-disks}", id="for local volumes"),
        pytest.param("hostPath: {path: /mnt/local-disks}", id="for hostpath volumes"),
    ],
)
def test_volume_usage_should_preserve_unconstrained_pv_alternatives_after_ignoring_hostname(source: str) -> None:
    """DescribeTable("should preserve unconstrained PV alternatives after ignoring hostname affinity"): the volume
    allows hostname existing-host or zone invalid-zone; with the hostname ignored (a local or hostPath volume) its
    first term allows any node, so the pod schedules."""
    terms = (
        "[{key: kubernetes.io/hostname, operator: In, values: [existing-host]}]",
        "[{key: topology.kubernetes.io/zone, operator: In, values: [invalid-zone]}]",
    )
    inputs = load(
        pv_yaml("hostname-or-zone-pv", terms=terms, source=source),
        pvc_yaml("hostname-or-zone-pvc", None, "hostname-or-zone-pv"),
        pod_yaml("hostname-or-zone-pod", "hostname-or-zone-pvc"),
    )
    results = solve_inputs(inputs)
    assert not results.unschedulable, results.unschedulable
    assert [c.pods for c in results.nodeclaims] == [("default/hostname-or-zone-pod",)]


def test_volume_usage_should_schedule_pods_using_a_storageclass_with_multiple_zones_in_allowedtopologies() -> None:
    """It("should schedule pods using a StorageClass with multiple zones in AllowedTopologies"): the class's ORed
    terms allow zone 1 or 2; the pods' zone anti-affinity sends them to different ones."""
    terms = (
        f"[{{key: topology.kubernetes.io/zone, values: [{ZONE_1}]}}]",
        f"[{{key: topology.kubernetes.io/zone, values: [{ZONE_2}]}}]",
    )
    docs = [sc_yaml("multi-zone-sc", terms=terms)]
    for i in range(2):
        docs.append(pvc_yaml(f"multi-zone-pvc-{i}", "multi-zone-sc"))
        docs.append(anti_pod_yaml(f"sc-pod-{i}", f"multi-zone-pvc-{i}", "multi-zone-sc-app"))
    zone_0, zone_1 = zones_of(solve_inputs(load(*docs)), "default/sc-pod-0", "default/sc-pod-1")
    assert {zone_0, zone_1} == {ZONE_1, ZONE_2}


def test_volume_usage_should_schedule_pods_when_a_multi_volume_topology_alternative_remains_after_pruning() -> None:
    """It("should schedule pods when a valid multi-volume topology alternative remains after pruning disjoint
    branches"): class A allows special=required or =optional, class B (zone 1, optional) or (zone 2, required).
    Of the four combinations two are disjoint; of the two left, no instance type is "required", so the pod lands
    in zone 1 on an "optional" type.

    fake.InstanceTypes(5) is sched_fake.SIZED; the fake's exotic label `special`, "optional" on fake-it-4 only
    (the one type above 4 vCPU and 8 GiB) and "required" on none, is the instance family here: "optional" is m5
    (m5.xlarge, SIZED's fake-it-4, the only m5), "required" x2gd (no type of the catalog)."""
    from sched_fake import SIZED

    optional, required = "m5", "x2gd"
    family = INSTANCE_FAMILY
    terms_a = (f"[{{key: {family}, values: [{required}]}}]", f"[{{key: {family}, values: [{optional}]}}]")
    sc_a = sc_yaml("pruned-overlap-a", terms=terms_a)
    sc_b = sc_yaml(
        "pruned-overlap-b",
        terms=(
            f"[{{key: topology.kubernetes.io/zone, values: [{ZONE_1}]}}, {{key: {family}, values: [{optional}]}}]",
            f"[{{key: topology.kubernetes.io/zone, values: [{ZONE_2}]}}, {{key: {family}, values: [{required}]}}]",
        ),
    )
    inputs = load(
        sc_a,
        sc_b,
        pvc_yaml("pruned-overlap-pvc-a", "pruned-overlap-a"),
        pvc_yaml("pruned-overlap-pvc-b", "pruned-overlap-b"),
        pod_yaml("pruned-overlap-pod", "pruned-overlap-pvc-a", "pruned-overlap-pvc-b"),
    )
    results = solve_inputs(inputs, [real(name) for name in dict.fromkeys(SIZED)])
    (zone,) = zones_of(results, "default/pruned-overlap-pod")
    assert zone == ZONE_1
    assert results.nodeclaims[0].cheapest.instance_type.startswith(optional + ".")


def ephemeral_rounds(first_docs: list[str], limit: int, storage_class: str) -> tuple[Cluster, str, str | None]:
    """The ephemeral-volume cases: an initial pod whose ephemeral volume names `storage_class` ("" none) goes to a
    node that then reports `limit` EBS attachments; a second such pod is provisioned. Returns the cluster, the
    first node and where the second pod went. Each pod's claim `<pod>-tmp-ephemeral` exists, as there."""
    sc = storage_class or None
    initial_docs = [*first_docs, pvc_yaml("initial-tmp-ephemeral", sc), pod_yaml("initial", ephemeral=storage_class)]
    initial = load(*initial_docs)
    cluster = Cluster([suite_pool()], catalog(), inflight=True)  # type: ignore[list-item]
    first = first_node(cluster, initial.pending_pods[0], limit, initial)
    both = load(*initial_docs, pvc_yaml("second-tmp-ephemeral", sc), pod_yaml("second", ephemeral=storage_class))
    second = next(p for p in both.pending_pods if p.name == "second")
    results = cluster.provision(second, **volume_inputs(both))
    assert not results.unschedulable, results.unschedulable
    return cluster, first, cluster.where(second)


def test_volume_usage_should_launch_nodes_for_pods_with_ephemeral_volume_using_the_specified_storage_class() -> None:
    """It("should launch nodes for pods with ephemeral volume using the specified storage class name"): the claim
    template names an EBS class (1 attachment allowed on the first node), not the default class (another driver,
    10 allowed), so the second pod needs a new node."""
    docs = [sc_yaml("my-storage-class"), sc_yaml("default-storage-class", OTHER, default=True)]
    _, first, second = ephemeral_rounds(docs, 1, "my-storage-class")
    assert second is not None and second != first


def test_volume_usage_should_launch_nodes_for_pods_with_ephemeral_volume_using_a_default_storage_class() -> None:
    """It("should launch nodes for pods with ephemeral volume using a default storage class"): the claim names no
    class, the default one is EBS, the first node allows 1 attachment: the second pod needs a new node."""
    docs = [sc_yaml("default-storage-class", default=True)]
    _, first, second = ephemeral_rounds(docs, 1, "")
    assert second is not None and second != first


def test_volume_usage_should_launch_nodes_for_pods_with_ephemeral_volume_using_the_newest_storage_class() -> None:
    """It("should launch nodes for pods with ephemeral volume using the newest storage class"): of two default
    classes the newer (by creationTimestamp; Kubernetes' rule since 1.26) is EBS, the older another driver. The
    older is given first, as Karpenter applies it first."""
    docs = [
        sc_yaml("default-storage-class", OTHER, default=True, created="2024-01-01T00:00:00Z"),
        sc_yaml("newer-default-storage-class", default=True, created="2024-01-01T00:00:02Z"),
    ]
    _, first, second = ephemeral_rounds(docs, 1, "")
    assert second is not None and second != first


def test_volume_usage_should_not_launch_nodes_for_pod_with_storageclass_that_uses_an_unsupported_provisioner() -> None:
    """It("should not launch nodes for pod with storageClass that uses an unsupported provisioner"): nodewright
    has no list of unsupported provisioners (Karpenter's UnsupportedProvisioners, which a cloud provider fills;
    the case adds "other-provider" to it), so a pod whose claim uses any provisioner is planned: asserted here."""
    inputs = load(
        sc_yaml("default-storage-class", OTHER, mode="Immediate", default=True),
        pvc_yaml("pod-tmp-ephemeral", "default-storage-class"),
        pod_yaml("pod", ephemeral=""),
    )
    assert not solve_inputs(inputs).unschedulable


def test_volume_usage_should_not_launch_nodes_for_pod_with_bound_pv_that_uses_an_unsupported_provisioner() -> None:
    """It("should not launch nodes for pod with bound persistentVolume that uses an unsupported provisioner"): as
    above, no provisioner is unsupported in nodewright; the pod with a bound volume of that driver is planned."""
    inputs = load(
        pv_yaml("pv", source=f"csi: {{driver: {OTHER}, volumeHandle: pv}}"),
        pvc_yaml("pod-tmp-ephemeral", None, "pv"),
        pod_yaml("pod", ephemeral=""),
    )
    assert not solve_inputs(inputs).unschedulable


def test_volume_usage_should_not_launch_nodes_for_pod_with_storageclass_that_uses_an_unsupported_topology_key() -> None:
    """It("should not launch nodes for pod with storageClass that uses an unsupported topology key"): the class
    allows topology.ebs.csi.aws.com/zone In [us-west-2a, us-west-2b]. Karpenter refuses it by its
    UnsupportedTopologyKeys list; nodewright reaches the same result without one: no NodePool or instance type
    defines that label, so no new node can meet the class's topology, and the refusal names it."""
    terms = ("[{key: topology.ebs.csi.aws.com/zone, values: [us-west-2a, us-west-2b]}]",)
    inputs = load(
        sc_yaml("default-storage-class", "ebs.csi.eks.amazonaws.com", terms=terms),
        pvc_yaml("tmp-ephemeral", "default-storage-class"),
        pod_yaml("pod", "tmp-ephemeral"),
    )
    results = solve_inputs(inputs)
    assert not results.nodeclaims
    assert "topology.ebs.csi.aws.com/zone" in unschedulable(results)["default/pod"]


def test_volume_usage_should_not_launch_nodes_for_pod_with_unbound_volume_for_volumebindingmode_immediate() -> None:
    """It("should not launch nodes for pod with unbound volume for volumeBindingMode immediate"): Karpenter waits
    for the PV controller to bind an Immediate claim. nodewright plans the pod, on purpose: `simulate` reads
    manifests, where every claim is unbound, and such a class has no topology to wait for. Asserted here."""
    inputs = load(
        sc_yaml("default-storage-class", OTHER, mode="Immediate"),
        pvc_yaml("tmp-ephemeral", "default-storage-class"),
        pod_yaml("pod", "tmp-ephemeral"),
    )
    assert not solve_inputs(inputs).unschedulable


def test_volume_usage_should_not_launch_nodes_for_pod_with_deleting_persistentvolumeclaim() -> None:
    """It("should not launch nodes for pod with deleting persistentVolumeClaim")."""
    deleting = ', deletionTimestamp: "2024-01-01T00:00:00Z"'
    inputs = load(
        sc_yaml("default-storage-class", OTHER),
        pvc_yaml("tmp-ephemeral", "default-storage-class", extra=deleting),
        pod_yaml("pod", "tmp-ephemeral"),
    )
    results = solve_inputs(inputs)
    assert not results.nodeclaims
    assert "tmp-ephemeral is being deleted" in unschedulable(results)["default/pod"]


def test_volume_usage_should_not_launch_nodes_for_pod_with_bound_persistentvolume_that_is_marked_for_deletion() -> None:
    """It("should not launch nodes for pod with bound persistentVolume that is marked for deletion")."""
    deleting = ', deletionTimestamp: "2024-01-01T00:00:00Z"'
    inputs = load(
        pv_yaml("pv", source=f"csi: {{driver: {OTHER}, volumeHandle: pv}}", extra=deleting),
        pvc_yaml("pod-tmp-ephemeral", None, "pv"),
        pod_yaml("pod", ephemeral=""),
    )
    results = solve_inputs(inputs)
    assert not results.nodeclaims
    assert "PersistentVolume pv (bound to pod-tmp-ephemeral) is being deleted" in unschedulable(results)["default/pod"]


def test_volume_usage_should_not_launch_nodes_for_pod_with_lost_persistentvolumeclaim() -> None:
    """It("should not launch nodes for pod with Lost persistentVolumeClaim")."""
    inputs = load(
        sc_yaml("default-storage-class", OTHER),
        pvc_yaml("tmp-ephemeral", "default-storage-class") + "status: {phase: Lost}\n",
        pod_yaml("pod", "tmp-ephemeral"),
    )
    results = solve_inputs(inputs)
    assert not results.nodeclaims
    assert "tmp-ephemeral is Lost" in unschedulable(results)["default/pod"]


@pytest.mark.parametrize(
    "annotated",
    [
        pytest.param(False, id="when pv.kubernetes.io/bind-completed is missing"),
        pytest.param(True, id="when pv.kubernetes.io/bind-completed is present"),
    ],
)
def test_volume_usage_should_handle_pods_with_pvcs_with_defined_volumename(annotated: bool) -> None:
    """DescribeTable("should handle pods with PVCs with defined volumeName"). Present: scheduled, as there.
    Missing: Karpenter (like the kube-scheduler) takes a claim with a volumeName but without bind-completed as
    not bound yet and waits. nodewright takes volumeName as bound, on purpose: claims written in manifests for
    `simulate` name their volume without the annotation the PV controller adds. Both entries schedule here."""
    claim = pvc_yaml("tmp-ephemeral", "default-storage-class", "pv")
    if not annotated:
        claim = claim.replace('annotations: {pv.kubernetes.io/bind-completed: "yes"}', "annotations: {}")
    inputs = load(
        sc_yaml("default-storage-class", OTHER),
        pv_yaml("pv", source=f"csi: {{driver: {OTHER}, volumeHandle: pv}}"),
        claim,
        pod_yaml("pod", "tmp-ephemeral"),
    )
    assert not solve_inputs(inputs).unschedulable


NO_CLASS = [
    pytest.param("non-existent", id="non-existent storage class"),
    pytest.param("''", id="explicitly disabled storage class (empty string)"),
]


@pytest.mark.parametrize("storage_class", NO_CLASS)
def test_volume_usage_should_launch_nodes_for_ephemeral_volume_without_a_storage_class_when_the_pvc_is_bound(
    storage_class: str,
) -> None:
    """DescribeTable("should launch nodes for pods with ephemeral volume without a storage class when the PVC is
    bound"): the claim is bound, so its class (missing or "") does not matter: one node."""
    inputs = load(
        pvc_yaml("pod-tmp-ephemeral", storage_class.strip("'"), "test-pv"),
        pv_yaml("test-pv", source="csi: {driver: test.driver, volumeHandle: test-handle}"),
        pod_yaml("pod", ephemeral=storage_class),
    )
    results = solve_inputs(inputs)
    assert not results.unschedulable
    assert len(results.nodeclaims) == 1


@pytest.mark.parametrize("storage_class", NO_CLASS)
def test_volume_usage_should_not_launch_nodes_for_ephemeral_volume_without_a_storage_class_when_pvc_unbound(
    storage_class: str,
) -> None:
    """DescribeTable("should not launch nodes for pods with ephemeral volume without a storage class when the PVC
    is unbound"): the claim the ephemeral volume creates cannot be provisioned: no node."""
    results = solve_inputs(load(pod_yaml("pod", ephemeral=storage_class)))
    assert not results.nodeclaims
    assert "pod-tmp-ephemeral" in unschedulable(results)["default/pod"]


# ----- VolumeUsage / CSIMigration --------------------------------------------------------------------------------

IN_TREE = "kubernetes.io/aws-ebs"


def test_csi_migration_should_launch_nodes_for_pods_with_non_dynamic_pvc_using_a_migrated_pvc_pv() -> None:
    """Context("CSIMigration") It("should launch nodes for pods with non-dynamic PVC using a migrated PVC/PV"): the
    default class uses the in-tree EBS plugin; its volumes are attached by the EBS CSI driver, whose count on the
    first node is 1, so the second pod's claim needs a new node."""
    sc = sc_yaml("in-tree-storage-class", IN_TREE, default=True)
    in_tree_pv = pv_yaml("my-volume", zones=(ZONE_1,), source="awsElasticBlockStore: {volumeID: vol-1, fsType: ext4}")
    first_docs = [sc, pvc_yaml("claim-1", "in-tree-storage-class"), pod_yaml("initial", "claim-1")]
    first_inputs = load(*first_docs)
    cluster = Cluster([suite_pool()], catalog(), inflight=True)  # type: ignore[list-item]
    first = first_node(cluster, first_inputs.pending_pods[0], 1, first_inputs)
    both = load(*first_docs, in_tree_pv, pvc_yaml("claim-2", "in-tree-storage-class"), pod_yaml("second", "claim-2"))
    second = next(p for p in both.pending_pods if p.name == "second")
    assert not cluster.provision(second, **volume_inputs(both)).unschedulable
    assert cluster.where(second) not in (None, first)


def test_csi_migration_should_launch_nodes_for_pods_with_ephemeral_volume_using_a_migrated_pvc_pv() -> None:
    """It("should launch nodes for pods with ephemeral volume using a migrated PVC/PV"): as above with ephemeral
    volumes whose template names the in-tree class."""
    docs = [sc_yaml("in-tree-storage-class", IN_TREE, default=True)]
    _, first, second = ephemeral_rounds(docs, 1, "in-tree-storage-class")
    assert second is not None and second != first
