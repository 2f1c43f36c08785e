"""User data for Windows nodes (`windows2019@latest` .. `windows2025@latest`, `amiFamily: Windows2019/2022/2025`):
PowerShell calling the EKS-optimized AMI's `Start-EKSBootstrap.ps1`, as Karpenter v1.14 writes it
(`pkg/providers/amifamily/bootstrap/windows.go`):

    <powershell>
    <the EC2NodeClass's userData, when set>
    [string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"
    & $EKSBootstrapScriptFile -EKSClusterName '<name>' -APIServerEndpoint '<endpoint>' -Base64ClusterCA '<ca>'
      -KubeletExtraArgs '<labels, taints, kubelet settings>' -DNSClusterIP '<first clusterDNS>'
    </powershell>

(the `&` line is one line). The user's PowerShell runs first, inside the same block, as in Karpenter.
"""

from __future__ import annotations

from nodewright.launch.kubelet_flags import kubelet_extra_args
from nodewright.launch.userdata import NodeBootstrap, UserDataError

BOOTSTRAP_SCRIPT_LINE = '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'


def _single_quoted(text: str, what: str) -> str:
    """`text` inside PowerShell single quotes; a quote in it would end the argument early, so it is refused."""
    if "'" in text:
        raise UserDataError(f"{what} contains a single quote, which Windows user data cannot carry: {text!r}")
    return f"'{text}'"


def windows_user_data(boot: NodeBootstrap) -> str:
    """The PowerShell user data of a Windows node (plain text; EC2 encodes it). UserDataError when a value
    would break the PowerShell quoting."""
    cluster = boot.cluster
    lines = ["<powershell>"]
    if boot.user_data:
        lines.append(boot.user_data.rstrip("\n"))
    lines.append(BOOTSTRAP_SCRIPT_LINE)
    call = (
        f"& $EKSBootstrapScriptFile -EKSClusterName {_single_quoted(cluster.name, 'the cluster name')}"
        f" -APIServerEndpoint {_single_quoted(cluster.endpoint, 'the API server endpoint')}"
    )
    if cluster.ca_data:
        call += f" -Base64ClusterCA {_single_quoted(cluster.ca_data, 'the cluster CA')}"
    args = kubelet_extra_args(boot)
    if args:
        call += f" -KubeletExtraArgs {_single_quoted(' '.join(args), 'a label, taint or kubelet setting')}"
    if boot.kubelet.cluster_dns:
        call += f" -DNSClusterIP {_single_quoted(boot.kubelet.cluster_dns[0], 'clusterDNS')}"
    lines += [call, "</powershell>"]
    return "\n".join(lines)
