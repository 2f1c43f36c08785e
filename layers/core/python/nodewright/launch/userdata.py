"""Bootstrap user data for the nodes nodewright launches: AL2023 `nodeadm`, Bottlerocket, and Custom (AL2's
bootstrap.sh and Windows' PowerShell are written by launch/al2.py and launch/windows.py).

AL2023 and Bottlerocket user data carry what the kubelet must know before it registers: the cluster (name,
API server endpoint, CA, service CIDR), the node's labels and taints (the NodePool's taints, its startup
taints and `karpenter.sh/unregistered:NoExecute`, which the provisioner removes once the node has
registered), and the EC2NodeClass kubelet settings. The user's own `spec.userData` is merged as Karpenter
merges it, whatever the amiSelectorTerms (an alias or the user's own images):

- AL2023: MIME multipart. The user's parts come first (the parts of a MIME document; otherwise YAML that
  is a map becomes a NodeConfig part, a `#cloud-config` a cloud-config part, anything else a shell script)
  and our `application/node.eks.aws` NodeConfig last, so the labels and taints the scheduler relied on are
  the ones nodeadm applies last.
- Bottlerocket: one TOML document; the user's settings are kept and ours override the keys we own. The
  node's taints are ours only (the NodePool's), as in Karpenter: a taint only the user data knew would keep
  off pods the simulation placed there.
- Custom (`amiFamily: Custom`): the user's user data exactly as written, nothing added, as in Karpenter.
  The image's own bootstrap is the user's to configure; see the README for what that means for labels.

Output is deterministic (sorted keys, fixed MIME boundary), so equal inputs give an equal launch template
hash and templates are reused.

Both documents are written here (`to_yaml`, `to_toml`) rather than by PyYAML: this module is on the
provisioner's cold-start path, and importing PyYAML there cost more than writing the few shapes a NodeConfig
has. For the same reason `email` (the user's MIME) and `tomllib` (the user's TOML) are imported only when
there is user data of that kind to read.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nodewright.model.nodeclass import KubeletConfiguration
from nodewright.model.quantity import format_canonical
from nodewright.model.taints import Taint

if TYPE_CHECKING:
    from email.message import Message

NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
NODECONFIG_API_VERSION = "node.eks.aws/v1alpha1"
UNREGISTERED_TAINT = Taint(key="karpenter.sh/unregistered", effect="NoExecute")
_BOUNDARY = "//"


class UserDataError(ValueError):
    """The EC2NodeClass's own userData cannot be merged (not valid MIME/TOML for its AMI family)."""


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What a node needs to find and trust the API server (from eks:DescribeCluster)."""

    name: str
    endpoint: str
    ca_data: str  # base64 PEM, as DescribeCluster returns it
    service_cidr: str
    version: str  # Kubernetes minor version, e.g. "1.31"


@dataclass(frozen=True, slots=True)
class NodeBootstrap:
    """Everything the user data says about one kind of node (a NodePool on an EC2NodeClass)."""

    cluster: ClusterInfo
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    kubelet: KubeletConfiguration = field(default_factory=KubeletConfiguration)
    user_data: str = ""
    # spec.instanceStorePolicy ("RAID0" or ""), and the release of the image (Bottlerocket `v1.46.0`, `latest`,
    # "" unknown), which decides how Bottlerocket binds the instance store (see launch/instance_store.py).
    instance_store_policy: str = ""
    image_version: str = ""

    def register_taints(self) -> tuple[Taint, ...]:
        """Taints the node registers with: NodePool taints, startup taints, then the unregistered taint
        (duplicates dropped, first wins)."""
        seen: set[tuple[str, str, str]] = set()
        out: list[Taint] = []
        for taint in (*self.taints, *self.startup_taints, UNREGISTERED_TAINT):
            key = (taint.key, taint.value, taint.effect)
            if key not in seen:
                seen.add(key)
                out.append(taint)
        return tuple(out)


def _reserved(values: Mapping[str, int]) -> dict[str, str]:
    return {name: format_canonical(name, value) for name, value in sorted(values.items())}


def _kubelet_config(boot: NodeBootstrap) -> dict[str, Any]:
    """The KubeletConfiguration fields nodeadm merges into the kubelet's config file."""
    kubelet = boot.kubelet
    config: dict[str, Any] = {}
    if kubelet.max_pods is not None:
        config["maxPods"] = kubelet.max_pods
    if kubelet.pods_per_core is not None:
        config["podsPerCore"] = kubelet.pods_per_core
    if kubelet.system_reserved:
        config["systemReserved"] = _reserved(kubelet.system_reserved)
    if kubelet.kube_reserved:
        config["kubeReserved"] = _reserved(kubelet.kube_reserved)
    if kubelet.eviction_hard:
        config["evictionHard"] = dict(sorted(kubelet.eviction_hard.items()))
    if kubelet.eviction_soft:
        config["evictionSoft"] = dict(sorted(kubelet.eviction_soft.items()))
    if kubelet.eviction_soft_grace_period:
        config["evictionSoftGracePeriod"] = dict(sorted(kubelet.eviction_soft_grace_period.items()))
    if kubelet.eviction_max_pod_grace_period is not None:
        config["evictionMaxPodGracePeriod"] = kubelet.eviction_max_pod_grace_period
    if kubelet.image_gc_high_threshold_percent is not None:
        config["imageGCHighThresholdPercent"] = kubelet.image_gc_high_threshold_percent
    if kubelet.image_gc_low_threshold_percent is not None:
        config["imageGCLowThresholdPercent"] = kubelet.image_gc_low_threshold_percent
    if kubelet.cpu_cfs_quota is not None:
        config["cpuCFSQuota"] = kubelet.cpu_cfs_quota
    if kubelet.cluster_dns:
        config["clusterDNS"] = list(kubelet.cluster_dns)
    config["registerWithTaints"] = [
        {"key": t.key, "value": t.value, "effect": t.effect} if t.value else {"key": t.key, "effect": t.effect}
        for t in boot.register_taints()
    ]
    return config


def node_labels_flag(labels: Mapping[str, str]) -> str:
    """`--node-labels=k=v,...`, sorted so the text (and the template hash) is stable."""
    return "--node-labels=" + ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def nodeconfig(boot: NodeBootstrap) -> dict[str, Any]:
    """The nodeadm NodeConfig document for this node (with `spec.instance.localStorage` only under RAID0)."""
    cluster = boot.cluster
    config: dict[str, Any] = {
        "apiVersion": NODECONFIG_API_VERSION,
        "kind": "NodeConfig",
        "spec": {
            "cluster": {
                "name": cluster.name,
                "apiServerEndpoint": cluster.endpoint,
                "certificateAuthority": cluster.ca_data,
                "cidr": cluster.service_cidr,
            },
            "kubelet": {
                "config": _kubelet_config(boot),
                "flags": [node_labels_flag(boot.labels)],
            },
        },
    }
    # Imported here, not at the top: the forwarder's image carries this module (for
    # UNREGISTERED_TAINT) and not the instance store's.
    from nodewright.launch.instance_store import nodeadm_instance

    instance = nodeadm_instance(boot.instance_store_policy)
    if instance:
        config["spec"]["instance"] = instance
    return config


@dataclass(frozen=True, slots=True)
class _Part:
    """One part of a MIME multi-part user data document."""

    content_type: str
    body: str


def mime_parts(text: str, what: str) -> list[tuple[Message, str]]:
    """The leaf parts of MIME multipart user data with their decoded bodies, in order. UserDataError (naming
    `what`) when the text declares MIME but is not multipart: a node would get none of it."""
    import email
    import email.policy

    message = email.message_from_string(text, policy=email.policy.compat32)
    if not message.is_multipart():
        raise UserDataError(f"{what} declares MIME but is not multipart")
    parts = []
    for part in message.walk():
        if part.is_multipart():
            continue
        payload = part.get_payload(decode=True)
        parts.append((part, payload.decode() if isinstance(payload, bytes) else str(part.get_payload())))
    return parts


def _user_parts(user_data: str) -> list[_Part]:
    """The user's AL2023 user data as MIME parts: kept part by part, or wrapped as one part (Karpenter's
    rule, except that `#cloud-config` stays cloud-init's: nodeadm would refuse it as a NodeConfig)."""
    text = user_data.strip()
    if not text:
        return []
    if text.startswith(("MIME-Version", "Content-Type")):
        return [_Part(part.get_content_type(), body) for part, body in mime_parts(text, "userData")]
    if text.startswith("#cloud-config"):
        return [_Part("text/cloud-config", user_data)]
    if not text.startswith("#!") and _is_yaml_map(text):
        return [_Part(NODECONFIG_CONTENT_TYPE, user_data)]
    return [_Part("text/x-shellscript", user_data)]


def _is_yaml_map(text: str) -> bool:
    """True when the first YAML document of `text` is a map (how Karpenter tells a NodeConfig from a script)."""
    import yaml

    try:
        first = next(yaml.safe_load_all(text), None)
    except yaml.YAMLError:
        return False
    return isinstance(first, dict)


def al2023_user_data(boot: NodeBootstrap) -> str:
    """MIME multipart user data: the user's parts first, then our NodeConfig."""
    ours = "---\n" + to_yaml(nodeconfig(boot))
    parts = [*_user_parts(boot.user_data), _Part(NODECONFIG_CONTENT_TYPE, ours)]
    boundary = _BOUNDARY
    if any(f"--{boundary}" in p.body for p in parts):
        # A user part that contains our delimiter would end early; pick one derived from the content.
        boundary = "nodewright-" + hashlib.sha256("".join(p.body for p in parts).encode()).hexdigest()[:16]
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{boundary}"', ""]
    for part in parts:
        lines += [f"--{boundary}", f"Content-Type: {part.content_type}", "", part.body.rstrip("\n")]
    lines += [f"--{boundary}--", ""]
    return "\n".join(lines)


def _bottlerocket_ours(boot: NodeBootstrap) -> dict[str, Any]:
    cluster = boot.cluster
    kubelet = boot.kubelet
    kubernetes: dict[str, Any] = {
        "cluster-name": cluster.name,
        "api-server": cluster.endpoint,
        "cluster-certificate": cluster.ca_data,
    }
    if kubelet.max_pods is not None:
        kubernetes["max-pods"] = kubelet.max_pods
    if kubelet.cluster_dns:
        kubernetes["cluster-dns-ip"] = list(kubelet.cluster_dns)
    if kubelet.system_reserved:
        kubernetes["system-reserved"] = _reserved(kubelet.system_reserved)
    if kubelet.kube_reserved:
        kubernetes["kube-reserved"] = _reserved(kubelet.kube_reserved)
    if kubelet.eviction_hard:
        kubernetes["eviction-hard"] = dict(kubelet.eviction_hard)
    if kubelet.eviction_soft:
        kubernetes["eviction-soft"] = dict(kubelet.eviction_soft)
    if kubelet.eviction_soft_grace_period:
        kubernetes["eviction-soft-grace-period"] = dict(kubelet.eviction_soft_grace_period)
    if kubelet.eviction_max_pod_grace_period is not None:
        kubernetes["eviction-max-pod-grace-period"] = kubelet.eviction_max_pod_grace_period
    if kubelet.cpu_cfs_quota is not None:
        kubernetes["cpu-cfs-quota-enforced"] = kubelet.cpu_cfs_quota
    # Bottlerocket takes the image GC thresholds as strings, as Karpenter writes them.
    if kubelet.image_gc_high_threshold_percent is not None:
        kubernetes["image-gc-high-threshold-percent"] = str(kubelet.image_gc_high_threshold_percent)
    if kubelet.image_gc_low_threshold_percent is not None:
        kubernetes["image-gc-low-threshold-percent"] = str(kubelet.image_gc_low_threshold_percent)
    kubernetes["node-labels"] = dict(boot.labels)
    taints: dict[str, list[str]] = {}
    for taint in boot.register_taints():
        taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
    kubernetes["node-taints"] = taints
    settings: dict[str, Any] = {"kubernetes": kubernetes}
    from nodewright.launch.instance_store import bottlerocket_bootstrap_commands

    commands = bottlerocket_bootstrap_commands(boot.instance_store_policy, boot.image_version)
    if commands:
        # Laid over the user's own bootstrap-commands: theirs run too, ours is the one named 000-mount-...
        settings["bootstrap-commands"] = commands
    return {"settings": settings}


def _deep_merge(base: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `ours` laid over it: tables merge key by key, any other value of ours replaces theirs."""
    out = dict(base)
    for key, value in ours.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def bottlerocket_user_data(boot: NodeBootstrap) -> str:
    """Bottlerocket TOML: the user's settings with ours laid over them (labels merged, taints ours only)."""
    import tomllib

    try:
        theirs = tomllib.loads(boot.user_data) if boot.user_data.strip() else {}
    except tomllib.TOMLDecodeError as error:
        raise UserDataError(f"userData for bottlerocket is not valid TOML: {error}") from error
    ours = _bottlerocket_ours(boot)
    merged = _deep_merge(theirs, ours)
    merged["settings"]["kubernetes"]["node-taints"] = ours["settings"]["kubernetes"]["node-taints"]
    return to_toml(merged)


def user_data(ami_family: str, boot: NodeBootstrap) -> str:
    """User data for `ami_family`: al2023, bottlerocket, al2 (launch/al2.py) and windows2019/2022/2025
    (launch/windows.py) bootstrap the node, custom is the user's own."""
    if ami_family == "bottlerocket":
        return bottlerocket_user_data(boot)
    if ami_family == "al2023":
        return al2023_user_data(boot)
    if ami_family == "custom":
        return boot.user_data
    if ami_family == "al2":
        from nodewright.launch.al2 import al2_user_data

        # instanceStorePolicy reaches NodeBootstrap with the RAID0 work; read it only where it exists.
        from nodewright.launch.instance_store import is_raid0

        return al2_user_data(boot, raid0=is_raid0(boot.instance_store_policy))
    if ami_family.startswith("windows"):
        from nodewright.launch.windows import windows_user_data

        return windows_user_data(boot)
    raise UserDataError(
        f"AMI family {ami_family!r} is not supported (al2023, bottlerocket, al2, windows2019/2022/2025 or custom)"
    )


# ------------------------------------------------------------------------------------------ strings

# Characters a double-quoted string must not carry raw: C0 and C1 controls, DEL, the Unicode line and paragraph
# separators (line breaks to YAML 1.1) and the byte-order mark and non-characters.
_UNSAFE_CHARACTER = re.compile(r'[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\\"]')
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    return _SHORT_ESCAPES.get(character) or f"\\U{ord(character):08X}"


def _quoted(value: str) -> str:
    """`value` as a double-quoted string that TOML (a basic string) and YAML (1.1 and 1.2) both read back
    unchanged: the escapes it uses (backslash with a quote, a backslash, n, t, r, or U and eight hex digits)
    mean the same in both."""
    return '"' + _UNSAFE_CHARACTER.sub(_escape, value) + '"'


# ------------------------------------------------------------------------------------------ YAML out

_PLAIN_YAML_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
# Words YAML 1.1 (nodeadm reads YAML through go-yaml) would take for a boolean or null if left unquoted.
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "true", "false", "on", "off", "null"})


def _yaml_key(key: object) -> str:
    if not isinstance(key, str):
        raise UserDataError(f"cannot write a {type(key).__name__} key as YAML")
    plain = _PLAIN_YAML_KEY.fullmatch(key) is not None and key.lower() not in _YAML_WORDS
    return key if plain else _quoted(key)


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UserDataError(f"cannot write {value} as YAML")
        text = repr(value)
        # YAML 1.1 reads a float only with a dot in it: 1e+16 would come back as a string.
        return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, Mapping | list | tuple) and not value:
        return "{}" if isinstance(value, Mapping) else "[]"
    raise UserDataError(f"cannot write {type(value).__name__} as YAML")


def _is_block(value: Any) -> bool:
    return isinstance(value, Mapping | list | tuple) and len(value) > 0


def _yaml_lines(value: Mapping[Any, Any] | Sequence[Any], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    if isinstance(value, Mapping):
        for key, item in sorted(value.items()):
            head = f"{pad}{_yaml_key(key)}:"
            if _is_block(item):
                lines.append(head)
                lines.extend(_yaml_lines(item, indent + 2))
            else:
                lines.append(f"{head} {_yaml_scalar(item)}")
        return lines
    for item in value:
        if _is_block(item):
            nested = _yaml_lines(item, indent + 2)
            lines.append(f"{pad}- {nested[0][indent + 2 :]}")
            lines.extend(nested[1:])
        else:
            lines.append(f"{pad}- {_yaml_scalar(item)}")
    return lines


def to_yaml(document: Mapping[str, Any]) -> str:
    """A block-style YAML document for nested mappings and lists of strings, numbers, booleans and null.

    Keys are sorted, so equal documents give equal text. Every string value is double-quoted, so none changes
    type when read back (`"no"`, `"1.30"`, `"0755"` stay strings), and `yaml.safe_load(to_yaml(d)) == d`.
    Raises UserDataError for a value of another type, a key that is not a string or a non-finite float.
    """
    return "\n".join(_yaml_lines(document, 0) if document else ["{}"]) + "\n"


# ------------------------------------------------------------------------------------------ TOML out


def _toml_key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum() and key.isascii()
    return key if bare else _quoted(key)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in sorted(value.items())) + "}"
    raise UserDataError(f"cannot write {type(value).__name__} as TOML")


def to_toml(document: Mapping[str, Any]) -> str:
    """A TOML document for nested tables of strings, numbers, booleans and arrays (sorted keys)."""
    lines: list[str] = []

    def table(path: list[str], values: Mapping[str, Any]) -> None:
        scalars = [(k, v) for k, v in sorted(values.items()) if not isinstance(v, Mapping)]
        tables = [(k, v) for k, v in sorted(values.items()) if isinstance(v, Mapping)]
        if path and (scalars or not tables):
            lines.append("[" + ".".join(_toml_key(p) for p in path) + "]")
        for key, value in scalars:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        if path and (scalars or not tables):
            lines.append("")
        for key, value in tables:
            table([*path, key], value)

    table([], document)
    return "\n".join(lines).rstrip("\n") + "\n"
