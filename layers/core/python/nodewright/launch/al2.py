"""User data for Amazon Linux 2 nodes (`al2@latest`, `amiFamily: AL2`): MIME multipart with the user's parts
first and a shell script calling the EKS AMI's `/etc/eks/bootstrap.sh` last, as Karpenter v1.14 writes it
(`pkg/providers/amifamily/bootstrap/eksbootstrap.go`):

    #!/bin/bash -xe
    exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1
    /etc/eks/bootstrap.sh '<name>' --apiserver-endpoint '<endpoint>' --b64-cluster-ca '<ca>' \\
    --dns-cluster-ip '<first clusterDNS>' \\
    --use-max-pods false \\
    --kubelet-extra-args '<labels, taints, kubelet settings>' \\
    --local-disks raid0

(`--ip-family ipv6` when the first clusterDNS is IPv6; `--use-max-pods false` with kubelet maxPods; `--local-disks
raid0` with instanceStorePolicy RAID0). The user's user data is kept part by part when it is MIME, else wrapped
as one `text/x-shellscript` part, as Karpenter's `mimeify` does.

AWS publishes no EKS-optimized AL2 AMI for Kubernetes 1.33 and later; `al2@latest` then finds no image and
the EC2NodeClass reports it. Custom AL2-based images (`amiFamily: AL2` with amiSelectorTerms) keep working.
"""

from __future__ import annotations

import ipaddress

from nodewright.launch.kubelet_flags import kubelet_extra_args
from nodewright.launch.userdata import NodeBootstrap, UserDataError, mime_parts

BOUNDARY = "//"
SHELL_CONTENT_TYPE = 'text/x-shellscript; charset="us-ascii"'


def _single_quoted(text: str, what: str) -> str:
    if "'" in text:
        raise UserDataError(f"{what} contains a single quote, which AL2 user data cannot carry: {text!r}")
    return f"'{text}'"


def _is_ipv6(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).version == 6
    except ValueError:
        return False


def bootstrap_script(boot: NodeBootstrap, raid0: bool = False) -> str:
    """The shell script calling bootstrap.sh with the node's cluster, kubelet flags and local disk setup."""
    cluster = boot.cluster
    kubelet = boot.kubelet
    ca = f"--b64-cluster-ca {_single_quoted(cluster.ca_data, 'the cluster CA')}" if cluster.ca_data else ""
    script = (
        "#!/bin/bash -xe\n"
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
        f"/etc/eks/bootstrap.sh {_single_quoted(cluster.name, 'the cluster name')} --apiserver-endpoint "
        f"{_single_quoted(cluster.endpoint, 'the API server endpoint')} {ca}"
    )
    if kubelet.cluster_dns and _is_ipv6(kubelet.cluster_dns[0]):
        script += " \\\n--ip-family ipv6"
    if kubelet.cluster_dns:
        script += f" \\\n--dns-cluster-ip {_single_quoted(kubelet.cluster_dns[0], 'clusterDNS')}"
    if kubelet.max_pods is not None:
        script += " \\\n--use-max-pods false"
    args = kubelet_extra_args(boot)
    if args:
        script += f" \\\n--kubelet-extra-args {_single_quoted(' '.join(args), 'a label, taint or kubelet setting')}"
    if raid0:
        script += " \\\n--local-disks raid0"
    return script


def _user_parts(user_data: str) -> list[tuple[str, str]]:
    """The user's user data as (content type, body) parts: MIME kept part by part, anything else one script."""
    text = user_data.strip()
    if not text:
        return []
    if not text.startswith(("MIME-Version:", "Content-Type:")):
        return [(SHELL_CONTENT_TYPE, user_data)]
    return [
        (str(part.get("Content-Type", SHELL_CONTENT_TYPE)), body) for part, body in mime_parts(text, "userData for AL2")
    ]


def al2_user_data(boot: NodeBootstrap, raid0: bool = False) -> str:
    """MIME multipart user data: the user's parts, then the bootstrap.sh script (boundary `//`), laid out byte for
    byte as Go's multipart writer lays out Karpenter's (carriage returns removed, as Karpenter removes them)."""
    parts = [*_user_parts(boot.user_data), (SHELL_CONTENT_TYPE, bootstrap_script(boot, raid0))]
    if any(f"--{BOUNDARY}" in body for _, body in parts):
        raise UserDataError(f"userData for AL2 contains the MIME boundary line --{BOUNDARY}; use another boundary")
    text = f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n'
    for index, (content_type, body) in enumerate(parts):
        text += ("\n" if index else "") + f"--{BOUNDARY}\nContent-Type: {content_type}\n\n{body}"
    return text + f"\n--{BOUNDARY}--\n"
