"""The kubelet flags Karpenter hands the EKS bootstrap scripts (bootstrap.sh on AL2, Start-EKSBootstrap.ps1 on
Windows) as one `--kubelet-extra-args` / `-KubeletExtraArgs` string: Karpenter's `Options.kubeletExtraArgs`
(`pkg/providers/amifamily/bootstrap/bootstrap.go` at v1.14.1), in its order and its quoting.

Karpenter joins maps in Go's random map order; here they are sorted, so equal inputs give equal user data (and
an equal launch template hash).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from nodewright.launch.userdata import NodeBootstrap
from nodewright.model.quantity import format_canonical


def go_quote(text: str) -> str:
    """`text` double-quoted with backslash escapes, as Go's `%q` writes printable text."""
    return json.dumps(text, ensure_ascii=False)


def _joined(name: str, values: Mapping[str, str], separator: str) -> str:
    """`--name="k<sep>v,..."` (sorted), or "" for an empty map (Karpenter's joinParameterArgs)."""
    if not values:
        return ""
    return f"{name}={go_quote(','.join(f'{k}{separator}{v}' for k, v in sorted(values.items())))}"


def kubelet_extra_args(boot: NodeBootstrap) -> list[str]:
    """The kubelet flags for a node: labels, registration taints, then the EC2NodeClass kubelet settings.

    `--register-with-taints` is always present (the unregistered taint at least); `--node-labels` only when the
    node has labels. Output is deterministic for equal inputs.
    """
    args = []
    if boot.labels:
        args.append("--node-labels=" + go_quote(",".join(f"{k}={v}" for k, v in sorted(boot.labels.items()))))
    args.append("--register-with-taints=" + go_quote(",".join(str(t) for t in boot.register_taints())))
    kubelet = boot.kubelet
    if kubelet.max_pods is not None:
        args.append(f"--max-pods={kubelet.max_pods}")
    if kubelet.pods_per_core is not None:
        args.append(f"--pods-per-core={kubelet.pods_per_core}")
    system = {k: format_canonical(k, v) for k, v in kubelet.system_reserved.items()}
    kube = {k: format_canonical(k, v) for k, v in kubelet.kube_reserved.items()}
    args.append(_joined("--system-reserved", system, "="))
    args.append(_joined("--kube-reserved", kube, "="))
    args.append(_joined("--eviction-hard", kubelet.eviction_hard, "<"))
    args.append(_joined("--eviction-soft", kubelet.eviction_soft, "<"))
    args.append(_joined("--eviction-soft-grace-period", kubelet.eviction_soft_grace_period, "="))
    if kubelet.eviction_max_pod_grace_period is not None:
        args.append(f"--eviction-max-pod-grace-period={kubelet.eviction_max_pod_grace_period}")
    if kubelet.image_gc_high_threshold_percent is not None:
        args.append(f"--image-gc-high-threshold={kubelet.image_gc_high_threshold_percent}")
    if kubelet.image_gc_low_threshold_percent is not None:
        args.append(f"--image-gc-low-threshold={kubelet.image_gc_low_threshold_percent}")
    if kubelet.cpu_cfs_quota is not None:
        args.append(f"--cpu-cfs-quota={'true' if kubelet.cpu_cfs_quota else 'false'}")
    return [a for a in args if a]
