"""Windows nodes (windows2019/2022/2025): Karpenter v1.14's SSM parameters, PowerShell user data read back as the
local world's kubelet reads it, the OS labels, pod density, PrivateIPv4Address and reserved resources."""

from __future__ import annotations

import pytest

from nodewright.catalog import SnapshotSource
from nodewright.catalog.allocatable import (
    PRIVATE_IPV4_ADDRESS,
    allocatable,
    capacity,
    kube_reserved_cpu_millis,
    memory_capacity_bytes,
    root_volume_bytes,
)
from nodewright.catalog.labels import OS, WINDOWS_BUILD, for_ami_family
from nodewright.catalog.types import InstanceType
from nodewright.launch.amis import alias_parameter, alias_parameters
from nodewright.launch.template import block_devices
from nodewright.launch.userdata import ClusterInfo, NodeBootstrap, UserDataError, user_data
from nodewright.localworld.registrar import (
    InstanceTypeInfo,
    as_windows_node,
    check_family,
    image_family,
    node_manifest,
    windows_build,
)
from nodewright.localworld.userdata import UserDataRefused, parse_user_data, parse_windows
from nodewright.model.loader import load_text
from nodewright.model.nodeclass import AMISelectorTerm, EC2NodeClass, KubeletConfiguration
from nodewright.model.taints import Taint
from nodewright.scheduling import solve_inputs

Mi = 2**20
Gi = 2**30
CLUSTER = ClusterInfo("test-cluster", "https://test-cluster", "Y2EtYnVuZGxlCg==", "10.100.0.0/16", "1.31")
# The labels of Karpenter's launchtemplate suite goldens (windows_userdata_*.golden), its %s filled in.
GOLDEN_LABELS = {
    "karpenter.k8s.aws/ec2nodeclass": "default",
    "karpenter.sh/capacity-type": "spot",
    "karpenter.sh/do-not-sync-taints": "true",
    "karpenter.sh/nodepool": "default",
    "testing/cluster": "unspecified",
}
GOLDEN_CALL = (
    "& $EKSBootstrapScriptFile -EKSClusterName 'test-cluster' -APIServerEndpoint 'https://test-cluster' "
    "-Base64ClusterCA 'Y2EtYnVuZGxlCg==' -KubeletExtraArgs '--node-labels=\"karpenter.k8s.aws/ec2nodeclass=default,"
    "karpenter.sh/capacity-type=spot,karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,"
    'testing/cluster=unspecified" --register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=110\' '
    "-DNSClusterIP '10.0.100.10'"
)
SCRIPT_LINE = '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'


def golden_boot(user_data: str = "") -> NodeBootstrap:
    kubelet = KubeletConfiguration(max_pods=110, cluster_dns=("10.0.100.10",))
    return NodeBootstrap(CLUSTER, labels=GOLDEN_LABELS, kubelet=kubelet, user_data=user_data)


@pytest.fixture(scope="module")
def types() -> dict[str, InstanceType]:
    return {it.name: it for it in SnapshotSource().instance_types()}


# ------------------------------------------------------------------------------------------ user data


def test_bootstrap_when_custom_user_data_is_empty() -> None:
    """launchtemplate/suite_test.go Context("Windows Custom UserData") It("should bootstrap when custom user data is
    empty"): windows_userdata_unmerged.golden."""
    assert user_data("windows2022", golden_boot()) == "\n".join(
        ["<powershell>", SCRIPT_LINE, GOLDEN_CALL, "</powershell>"]
    )


def test_merge_and_bootstrap_with_custom_user_data() -> None:
    """launchtemplate/suite_test.go Context("Windows Custom UserData") It("should merge and bootstrap with custom user
    data"): windows_userdata_merged.golden, the user's PowerShell first inside the one block."""
    custom = 'Write-Host "Running custom user data script"\nWrite-Host "Finished running custom user data script"\n'
    assert user_data("windows2019", golden_boot(custom)) == "\n".join(
        ["<powershell>", custom.rstrip("\n"), SCRIPT_LINE, GOLDEN_CALL, "</powershell>"]
    )


def test_user_data_reads_back_as_the_kubelet_is_told() -> None:
    kubelet = KubeletConfiguration(
        max_pods=40, system_reserved={"cpu": 100}, eviction_hard={"memory.available": "5%"}, cpu_cfs_quota=False
    )
    boot = NodeBootstrap(
        CLUSTER,
        labels={"team": "win", "karpenter.sh/nodepool": "windows"},
        taints=(Taint("os", "NoSchedule", "windows"),),
        startup_taints=(Taint("starting", "NoExecute"),),
        kubelet=kubelet,
    )
    text = user_data("windows2025", boot)
    assert '--system-reserved="cpu=100m"' in text and '--eviction-hard="memory.available<5%"' in text
    assert "--cpu-cfs-quota=false" in text and "-DNSClusterIP" not in text
    read = parse_user_data(text)
    assert read.format == "windows" and read.cluster_name == "test-cluster"
    assert read.labels == {"team": "win", "karpenter.sh/nodepool": "windows"}
    assert [(t.key, t.value, t.effect) for t in read.taints] == [
        ("os", "windows", "NoSchedule"),
        ("starting", "", "NoExecute"),
        ("karpenter.sh/unregistered", "", "NoExecute"),
    ]
    assert read.max_pods == 40


def test_a_single_quote_that_would_break_the_powershell_is_refused() -> None:
    with pytest.raises(UserDataError, match="single quote"):
        user_data("windows2022", NodeBootstrap(CLUSTER, labels={"team": "o'brien"}))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("Write-Host hi", "one <powershell>"),
        ("<powershell>\nWrite-Host hi\n</powershell>", "Start-EKSBootstrap.ps1"),
        (f"<powershell>\n{SCRIPT_LINE}\n& $EKSBootstrapScriptFile -APIServerEndpoint 'https://x'\n</powershell>",
         "-EKSClusterName"),
    ],
)  # fmt: skip
def test_the_local_kubelet_refuses_windows_user_data_that_would_not_join(text: str, reason: str) -> None:
    with pytest.raises(UserDataRefused, match=reason):
        parse_windows(text)


def test_a_windows_image_with_linux_user_data_does_not_join() -> None:
    al2023 = parse_user_data(user_data("al2023", NodeBootstrap(CLUSTER, labels={"a": "b"})))
    with pytest.raises(UserDataRefused, match="needs windows user data"):
        check_family("Windows_Server-2022-English-Core-EKS_Optimized-1.31-2024.11.13", al2023)
    check_family(
        "nodewright-local-windows2022-standard-1.31-x86_64", parse_user_data(user_data("windows2022", golden_boot()))
    )
    assert image_family("amazon-eks-node-al2023-x86_64-standard-1.31-v20241109") == ""


# ------------------------------------------------------------------------------------------ AMIs


@pytest.mark.parametrize("year", ["2019", "2022", "2025"])
def test_alias_resolves_through_the_eks_optimized_windows_parameter(year: str) -> None:
    """amifamily/windows.go DescribeImageQuery: one Core image per Windows Server year and Kubernetes version."""
    name = f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-EKS_Optimized-1.31/image_id"
    assert alias_parameter(f"windows{year}@latest", "1.31", "amd64", "standard") == name
    # The one image serves GPU types too; arm64 has none (Karpenter's getOS gives arm64 no OS under Windows).
    assert alias_parameters(f"windows{year}@latest", "1.31") == {name: [("amd64", "standard"), ("amd64", "nvidia")]}
    with pytest.raises(ValueError, match="amd64 only"):
        alias_parameter(f"windows{year}@latest", "1.31", "arm64", "standard")


def test_windows_root_volume_is_50gi_at_sda1() -> None:
    """amifamily/windows.go DefaultBlockDeviceMappings / EphemeralBlockDevice."""
    node_class = EC2NodeClass(name="w", ami_selector_terms=(AMISelectorTerm(alias="windows2022@latest"),))
    (device,) = block_devices(node_class)
    assert (device.device_name, device.ebs.volume_size_bytes) == ("/dev/sda1", 50 * Gi)
    assert root_volume_bytes(node_class) == 50 * Gi


# ------------------------------------------------------------------------------------------ labels, capacity


def test_windows_labels_and_amd64_only(types: dict[str, InstanceType]) -> None:
    """instancetype/types.go computeRequirements: kubernetes.io/os windows and node.kubernetes.io/windows-build
    under a Windows family; linux and no build otherwise; no OS at all for arm64 under Windows."""
    m5 = types["m5.large"]
    assert {k: for_ami_family(m5, "windows2022").labels.get(k) for k in (OS, WINDOWS_BUILD)} == {
        OS: "windows",
        WINDOWS_BUILD: "10.0.20348",
    }
    assert for_ami_family(m5, "windows2019").labels[WINDOWS_BUILD] == "10.0.17763"
    assert for_ami_family(m5, "windows2025").labels[WINDOWS_BUILD] == "10.0.26100"
    assert for_ami_family(m5, "al2") is m5 and m5.labels[OS] == "linux" and WINDOWS_BUILD not in m5.labels
    assert for_ami_family(types["m7g.large"], "windows2022") is None


def test_windows_pod_density_private_ipv4_and_reserved(types: dict[str, InstanceType]) -> None:
    """instancetype/types.go: pods 110 (no ENI-limited density), kube-reserved memory for those 110 pods
    (UsesENILimitedMemoryOverhead false), PrivateIPv4Address = IPv4 per interface - 1, 50Gi ephemeral storage."""
    it = types["m5.large"]
    cap = capacity(it, None, 50 * Gi, "windows2022")
    assert dict(cap) == {
        "cpu": 2000,
        "memory": memory_capacity_bytes(it),
        "ephemeral-storage": 50 * Gi,
        "pods": 110,
        PRIVATE_IPV4_ADDRESS: it.ipv4_per_eni - 1,
    }
    alloc = allocatable(it, None, 50 * Gi, "windows2022")
    assert alloc["memory"] == memory_capacity_bytes(it) - (11 * 110 + 255) * Mi - 100 * Mi
    assert alloc["cpu"] == 2000 - kube_reserved_cpu_millis(2)
    assert alloc["ephemeral-storage"] == 50 * Gi - 1 * Gi - 5 * Gi
    assert alloc[PRIVATE_IPV4_ADDRESS] == 9
    # maxPods and podsPerCore apply, as on Linux; Linux families have no PrivateIPv4Address.
    assert capacity(it, KubeletConfiguration(pods_per_core=4), 50 * Gi, "windows2022")["pods"] == 8
    assert PRIVATE_IPV4_ADDRESS not in capacity(it, None, 20 * Gi, "al2023")


WORKLOAD = """
apiVersion: nodewright.io/v1
kind: NodePool
metadata: {name: %(name)s}
spec:
  template:
    spec:
      requirements: [{key: kubernetes.io/os, operator: In, values: [%(os)s]}]
      nodeClassRef: {group: nodewright.io, kind: EC2NodeClass, name: %(name)s}
---
apiVersion: nodewright.io/v1
kind: EC2NodeClass
metadata: {name: %(name)s}
spec:
  role: NodeRole
  amiSelectorTerms: [{alias: %(alias)s}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: %(name)s, namespace: default}
spec:
  nodeSelector: %(selector)s
  containers: [{name: c, image: x, resources: {requests: %(requests)s}}]
"""


def solve(documents: str) -> dict[str, object]:
    inputs, errors = load_text(documents, "test.yaml")
    assert not errors, [str(e) for e in errors]
    return solve_inputs(inputs, SnapshotSource().instance_types()).to_json()


def test_windows_pods_go_to_windows_offerings_only() -> None:
    """launchtemplate/suite_test.go Windows contexts' pod (kubernetes.io/os windows, windows-build 10.0.20348) and
    instancetype/suite_test.go It("should launch vpc.amazonaws.com/PrivateIPv4Address on a compatible instance
    type"): Windows pods land on the Windows NodePool, Linux ones on the Linux one, a pod asking for another
    Windows build nowhere."""
    pools = WORKLOAD % {"name": "windows", "os": "windows", "alias": "windows2022@latest"}
    pools += "---" + WORKLOAD % {"name": "linux", "os": "linux", "alias": "al2@latest"}
    pods = [
        POD % {"name": "win", "selector": "{kubernetes.io/os: windows, node.kubernetes.io/windows-build: 10.0.20348}",
               "requests": "{cpu: 500m}"},
        POD % {"name": "ipam", "selector": "{}", "requests": "{vpc.amazonaws.com/PrivateIPv4Address: '1'}"},
        POD % {"name": "lin", "selector": "{kubernetes.io/os: linux}", "requests": "{cpu: 500m}"},
        POD % {"name": "old", "selector": "{node.kubernetes.io/windows-build: 10.0.17763}", "requests": "{cpu: 1}"},
    ]  # fmt: skip
    out = solve(pools + "---" + "---".join(pods))
    by_pool = {c["nodepool"]: c["pods"] for c in out["nodeclaims"]}
    assert sorted(by_pool) == ["linux", "windows"]
    assert sorted(by_pool["windows"]) == ["default/ipam", "default/win"]
    assert by_pool["linux"] == ["default/lin"]
    assert [u["pod"] for u in out["unschedulable"]] == ["default/old"]


# ------------------------------------------------------------------------------------------ local kubelet


def test_the_local_registrar_registers_a_windows_node() -> None:
    info = InstanceTypeInfo("m5.large", 2, 8192, "x86_64", 3, 10)
    instance = {"InstanceId": "i-1", "PrivateDnsName": "ip-10-0-0-1", "Placement": {"AvailabilityZone": "us-east-1a"}}
    boot = parse_user_data(user_data("windows2022", golden_boot()))
    manifest = node_manifest(instance, info, boot, "us-east-1")
    as_windows_node(manifest, info, boot, windows_build("nodewright-local-windows2022-standard-1.31-x86_64"))
    labels = manifest["metadata"]["labels"]
    assert labels["kubernetes.io/os"] == "windows" and labels["node.kubernetes.io/windows-build"] == "10.0.20348"
    assert manifest["status"]["nodeInfo"]["operatingSystem"] == "windows"
    assert manifest["status"]["capacity"]["pods"] == "110"
    assert manifest["status"]["allocatable"]["vpc.amazonaws.com/PrivateIPv4Address"] == "9"
    assert manifest["status"]["capacity"]["ephemeral-storage"] == "50Gi"
    # 8192 MiB less 7.5 % = 7577 MiB, less (11 x 110 + 255) MiB kube-reserved and 100 MiB eviction.
    assert manifest["status"]["allocatable"]["memory"] == f"{(7577 - 1465 - 100) * 1024}Ki"
    assert [t["key"] for t in manifest["spec"]["taints"]] == ["karpenter.sh/unregistered"]
