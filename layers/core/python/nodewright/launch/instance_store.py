"""EC2NodeClass `instanceStorePolicy: RAID0`: how a node's bootstrap turns its instance store into ephemeral storage.

With RAID0 the planner counts an instance type's local NVMe as the node's ephemeral storage (see
`catalog/allocatable.py`), so the node must mount it where the kubelet and containerd keep their data. As in
Karpenter v1.14 (`pkg/providers/amifamily/bootstrap/nodeadm.go`, `bottlerocket.go`):

- AL2023: the NodeConfig's `spec.instance.localStorage.strategy: RAID0`; nodeadm assembles the disks into one
  RAID0 array and mounts it under /var/lib/kubelet, /var/lib/containerd and /var/log/pods.
- Bottlerocket: the bootstrap command `000-mount-instance-storage` (`apiclient ephemeral-storage init`, then
  `bind`), mode `always`, essential. Bottlerocket 1.46.0 and later bind the default directories by themselves;
  older images (and images whose version cannot be told) get the directories named (`--dirs ...`).
- AL2: `bootstrap.sh --local-disks raid0` (`bootstrap_sh_flag`). Custom (the user's own user data, as written)
  and Windows get nothing, as in Karpenter.

Everything here is pure: a policy and an image version in, user data fragments out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from nodewright.launch.template import Image
from nodewright.model.nodeclass import EC2NodeClass

RAID0 = "RAID0"
MOUNT_COMMAND_NAME = "000-mount-instance-storage"
# The directories Bottlerocket before 1.46.0 must be told to bind onto the instance store.
LEGACY_BIND_DIRS = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")
_VERSION_IN_NAME = re.compile(r"^v\d+\.\d+")


def is_raid0(policy: str) -> bool:
    """True when the EC2NodeClass's instanceStorePolicy asks for the instance store as one RAID0 array."""
    return policy == RAID0


def nodeadm_instance(policy: str) -> dict[str, Any]:
    """The NodeConfig `spec.instance` section for `policy`: `{localStorage: {strategy: RAID0}}`, or {} when unset."""
    return {"localStorage": {"strategy": RAID0}} if is_raid0(policy) else {}


def bootstrap_sh_flag(policy: str) -> str:
    """The EKS AL2 `bootstrap.sh` argument for `policy`: `--local-disks raid0`, or "" when unset."""
    return "--local-disks raid0" if is_raid0(policy) else ""


def bottlerocket_version(alias_versions: Iterable[str], image_names: Iterable[str]) -> str:
    """The Bottlerocket release a node will boot, as Karpenter's `resolveAMIVersion` finds it.

    Inputs: the version part of the EC2NodeClass's `bottlerocket@...` aliases (`latest`, `v1.46.0`) and the names
    of the AMIs (selector-term names or resolved images, e.g. `bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a`).
    Output: the first alias version, else the first `vX.Y...` part of a Bottlerocket image name, else "".
    """
    for version in alias_versions:
        if version:
            return version
    for name in image_names:
        if "bottlerocket" not in name:
            continue
        for part in name.split("-"):
            if _VERSION_IN_NAME.match(part):
                return part
    return ""


def node_image_version(node_class: EC2NodeClass, image: Image) -> str:
    """The Bottlerocket release nodes of `node_class` boot from `image` ("" for other families or when unknown):
    the `bottlerocket@` alias's version, else a version in a selector term's name or the image's own name."""
    if node_class.ami_family != "bottlerocket":
        return ""
    terms = node_class.ami_selector_terms
    aliases = [t.alias.split("@", 1)[1] for t in terms if t.alias.lower().startswith("bottlerocket@")]
    return bottlerocket_version(aliases, [*(t.name for t in terms if t.name), image.name])


def supports_default_bind(version: str) -> bool:
    """True when Bottlerocket `version` (>= 1.46.0, or `latest`) binds ephemeral storage to its default
    directories with a bare `apiclient ephemeral-storage bind`; False for older or unknown versions."""
    if version == "latest":
        return True
    parts = version.lstrip("v").split(".")
    if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return False
    major, minor = int(parts[0]), int(parts[1])
    return major > 1 or (major == 1 and minor >= 46)


def bottlerocket_bootstrap_commands(policy: str, version: str) -> dict[str, Any]:
    """The `settings.bootstrap-commands` table for `policy` on Bottlerocket `version` ({} when not RAID0)."""
    if not is_raid0(policy):
        return {}
    bind = ["apiclient", "ephemeral-storage", "bind"]
    if not supports_default_bind(version):
        bind += ["--dirs", *LEGACY_BIND_DIRS]
    return {
        MOUNT_COMMAND_NAME: {
            "commands": [["apiclient", "ephemeral-storage", "init"], bind],
            "mode": "always",
            "essential": True,
        }
    }
