"""Amazon Linux 2 nodes (`al2@latest`, `amiFamily: AL2`): Karpenter v1.14's SSM parameters and its bootstrap.sh MIME
user data (launchtemplate suite goldens), read back as the local world's kubelet reads it, and AL2's allocatable."""

from __future__ import annotations

import pytest

from nodewright.catalog import SnapshotSource
from nodewright.catalog.allocatable import allocatable, capacity
from nodewright.catalog.labels import OS, for_ami_family
from nodewright.launch.al2 import al2_user_data
from nodewright.launch.amis import alias_parameter, alias_parameters
from nodewright.launch.template import block_devices
from nodewright.launch.userdata import ClusterInfo, NodeBootstrap, UserDataError, user_data
from nodewright.localworld.registrar import check_family, image_family
from nodewright.localworld.userdata import UserDataRefused, parse_al2, parse_user_data
from nodewright.model.nodeclass import AMISelectorTerm, EC2NodeClass, KubeletConfiguration
from nodewright.model.taints import Taint

CLUSTER = ClusterInfo("test-cluster", "https://test-cluster", "Y2EtYnVuZGxlCg==", "10.100.0.0/16", "1.31")
LABELS = {
    "karpenter.k8s.aws/ec2nodeclass": "default",
    "karpenter.sh/capacity-type": "on-demand",
    "karpenter.sh/do-not-sync-taints": "true",
    "karpenter.sh/nodepool": "default",
    "testing/cluster": "unspecified",
}
HEADER = 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
SHELL = 'Content-Type: text/x-shellscript; charset="us-ascii"\n\n'
# Karpenter's al2_userdata_unmerged.golden bootstrap part, its %s filled in.
BOOTSTRAP = (
    "#!/bin/bash -xe\n"
    "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
    "/etc/eks/bootstrap.sh 'test-cluster' --apiserver-endpoint 'https://test-cluster' "
    "--b64-cluster-ca 'Y2EtYnVuZGxlCg==' \\\n"
    "--dns-cluster-ip '10.0.100.10' \\\n"
    "--use-max-pods false \\\n"
    "--kubelet-extra-args '--node-labels=\"karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=on-demand,"
    'karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,testing/cluster=unspecified" '
    '--register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=110\''
)
CUSTOM_MIME = (
    'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n--BOUNDARY\n'
    'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash\necho "Running custom user data script"\n\n'
    "--BOUNDARY--"
)


def boot(user_data: str = "", **kubelet: object) -> NodeBootstrap:
    settings = KubeletConfiguration(max_pods=110, cluster_dns=("10.0.100.10",), **kubelet)  # type: ignore[arg-type]
    return NodeBootstrap(CLUSTER, labels=LABELS, kubelet=settings, user_data=user_data)


def test_al2_unmerged_user_data() -> None:
    """launchtemplate/suite_test.go Context("AL2 Custom UserData") It("should handle empty custom user data"):
    al2_userdata_unmerged.golden."""
    assert user_data("al2", boot()) == f"{HEADER}--//\n{SHELL}{BOOTSTRAP}\n--//--\n"


def test_al2_merged_user_data() -> None:
    """launchtemplate/suite_test.go Context("AL2 Custom UserData") It("should merge in custom user data"):
    al2_userdata_input.golden -> al2_userdata_merged.golden, the user's parts first."""
    user_part = '#!/bin/bash\necho "Running custom user data script"\n'
    assert (
        user_data("al2", boot(CUSTOM_MIME)) == f"{HEADER}--//\n{SHELL}{user_part}\n--//\n{SHELL}{BOOTSTRAP}\n--//--\n"
    )


def test_al2_user_data_that_is_not_mime_becomes_a_shell_part() -> None:
    """launchtemplate/suite_test.go It("should merge in custom user data not in multi-part mime format"):
    al2_no_mime_userdata_input.golden, wrapped as one text/x-shellscript part (Karpenter's mimeify)."""
    script = '#!/bin/bash\necho "Running custom user data script"\n'
    assert user_data("al2", boot(script)) == f"{HEADER}--//\n{SHELL}{script}\n--//\n{SHELL}{BOOTSTRAP}\n--//--\n"


def test_local_disks_raid0_and_ipv6() -> None:
    """launchtemplate/suite_test.go It("should specify --local-disks raid0 when instance-store policy is set on
    AL2"), and eksbootstrap.go's --ip-family ipv6 when the cluster DNS is IPv6."""
    assert al2_user_data(boot(), raid0=True).endswith("--max-pods=110' \\\n--local-disks raid0\n--//--\n")
    assert "--local-disks" not in al2_user_data(boot())
    raid0 = NodeBootstrap(CLUSTER, instance_store_policy="RAID0")
    assert parse_user_data(user_data("al2", raid0)).local_storage == "RAID0"  # the local kubelet mounts it
    assert parse_user_data(user_data("al2", boot())).local_storage == ""
    ipv6 = NodeBootstrap(CLUSTER, kubelet=KubeletConfiguration(cluster_dns=("fd00::a",)))
    assert "' \\\n--ip-family ipv6 \\\n--dns-cluster-ip 'fd00::a'" in user_data("al2", ipv6)


def test_user_data_reads_back_as_the_kubelet_is_told() -> None:
    taints = (Taint("dedicated", "NoSchedule", "gpu"),)
    text = user_data(
        "al2", NodeBootstrap(CLUSTER, labels={"team": "api", "tier": "1"}, taints=taints, user_data=CUSTOM_MIME)
    )
    read = parse_user_data(text)
    assert (read.format, read.cluster_name, read.max_pods) == ("al2", "test-cluster", None)
    assert read.labels == {"team": "api", "tier": "1"}
    assert [(t.key, t.value, t.effect) for t in read.taints] == [
        ("dedicated", "gpu", "NoSchedule"),
        ("karpenter.sh/unregistered", "", "NoExecute"),
    ]
    assert parse_user_data(user_data("al2", boot())).max_pods == 110


def test_our_boundary_in_the_users_data_is_refused() -> None:
    with pytest.raises(UserDataError, match="boundary"):
        user_data("al2", boot("#!/bin/bash\necho --//\n"))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("#!/bin/bash\n/etc/eks/bootstrap.sh c --apiserver-endpoint e\n", "must be MIME multipart"),
        (HEADER + f"--//\n{SHELL}echo hi\n--//--\n", "no shell-script part calling /etc/eks/bootstrap.sh"),
        (HEADER + f"--//\n{SHELL}/etc/eks/bootstrap.sh --kubelet-extra-args x\n--//--\n", "without a cluster name"),
    ],
)
def test_the_local_kubelet_refuses_al2_user_data_that_would_not_join(text: str, reason: str) -> None:
    with pytest.raises(UserDataRefused, match=reason):
        parse_al2(text)


def test_an_al2_image_with_nodeadm_user_data_does_not_join() -> None:
    nodeadm = parse_user_data(user_data("al2023", NodeBootstrap(CLUSTER)))
    for image in ("amazon-eks-node-1.31-v20241109", "amazon-eks-gpu-node-1.31-v20241109", "nodewright-local-al2-x"):
        assert image_family(image) == "al2"
        with pytest.raises(UserDataRefused, match="needs al2 user data"):
            check_family(image, nodeadm)
    assert image_family("nodewright-local-al2023-standard-1.31-x86_64") == ""


@pytest.mark.parametrize(
    ("alias", "arch", "variant", "parameter"),
    [
        ("al2@latest", "amd64", "standard", "amazon-linux-2/recommended"),
        ("al2@latest", "arm64", "standard", "amazon-linux-2-arm64/recommended"),
        ("al2@latest", "amd64", "nvidia", "amazon-linux-2-gpu/recommended"),
        ("al2@v20240807", "amd64", "standard", "amazon-linux-2/amazon-eks-node-1.31-v20240807"),
        ("al2@v20240807", "arm64", "standard", "amazon-linux-2-arm64/amazon-eks-arm64-node-1.31-v20240807"),
        ("al2@v20240807", "amd64", "nvidia", "amazon-linux-2-gpu/amazon-eks-gpu-node-1.31-v20240807"),
    ],
)
def test_al2_alias_parameters(alias: str, arch: str, variant: str, parameter: str) -> None:
    """amifamily/al2.go DescribeImageQuery: the three AL2 parameters, recommended or a pinned release."""
    assert alias_parameter(alias, "1.31", arch, variant) == f"/aws/service/eks/optimized-ami/1.31/{parameter}/image_id"


def test_al2_has_no_arm64_gpu_image() -> None:
    assert len(alias_parameters("al2@latest", "1.31")) == 3
    with pytest.raises(ValueError, match="no arm64 GPU image"):
        alias_parameter("al2@latest", "1.31", "arm64", "nvidia")


def test_al2_nodes_are_linux_with_eni_limited_density_and_a_20gi_root() -> None:
    """amifamily/al2.go: /dev/xvda 20Gi; DefaultFamily feature flags: ENI-limited pods and memory overhead."""
    it = next(t for t in SnapshotSource().instance_types() if t.name == "m5.large")
    assert for_ami_family(it, "al2") is it and it.labels[OS] == "linux"
    assert dict(capacity(it, None, None, "al2")) == dict(capacity(it, None, None, "al2023"))
    assert dict(allocatable(it, KubeletConfiguration(max_pods=110), None, "al2")) == dict(
        allocatable(it, KubeletConfiguration(max_pods=110), None, "al2023")
    )
    node_class = EC2NodeClass(name="a", ami_selector_terms=(AMISelectorTerm(id="ami-1"),), ami_family_setting="al2")
    (device,) = block_devices(node_class)
    assert (device.device_name, device.ebs.volume_size_bytes) == ("/dev/xvda", 20 * 2**30)
