"""Read what a booting node would read from its EC2 user data: labels, taints and kubelet settings.

The formats nodewright writes, and the user's own for `amiFamily: Custom`:
- Amazon Linux 2023 `nodeadm`: a MIME multipart document whose `application/node.eks.aws` parts are YAML
  `NodeConfig`s (`apiVersion: node.eks.aws/v1alpha1`), or one bare NodeConfig. Labels come from the kubelet
  flag `--node-labels=k=v,...`, taints from `spec.kubelet.config.registerWithTaints` (and the flag
  `--register-with-taints`, which nodeadm also honours).
- Bottlerocket: TOML with `[settings.kubernetes.node-labels]` and `[settings.kubernetes.node-taints]`.
- Windows: a `<powershell>` block calling Start-EKSBootstrap.ps1 with `-KubeletExtraArgs '...'` (`parse_windows`).
- Amazon Linux 2: MIME multipart with a shell script calling `/etc/eks/bootstrap.sh` (`parse_al2`).
  Both refuse (UserDataRefused) user data that claims the format but would not join a node.
- A shell script (`#!`), as a Custom image's bootstrap often is: the kubelet flags it passes, either directly
  (`kubelet ... --node-labels=...`) or through `--kubelet-extra-args '...'` (EKS's bootstrap.sh).

Anything else (cloud-config, a script without kubelet flags, binary data) is "unknown": the registrar then
registers the node as an image that joins by its own means would, with only the labels the kubelet and the
cloud provider set and no taints (see `registrar.py`).
"""

from __future__ import annotations

import base64
import binascii
import email
import email.policy
import shlex
import tomllib
from dataclasses import dataclass, field
from typing import Any

import yaml

NODECONFIG_CONTENT_TYPE = "application/node.eks.aws"
NODECONFIG_API_VERSION = "node.eks.aws/v1alpha1"


@dataclass(frozen=True)
class Taint:
    """A node taint as the kubelet registers it."""

    key: str
    value: str
    effect: str


@dataclass
class BootConfig:
    """What the registrar needs from the user data to register a node like the kubelet would."""

    format: str
    cluster_name: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)
    max_pods: int | None = None
    # How the instance store is set up: "RAID0" (one array holding the kubelet's and containerd's data, so the
    # node's ephemeral storage is the instance store) or "" (left alone: ephemeral storage is the root volume).
    local_storage: str = ""


def _maybe_base64(raw: str | bytes) -> str:
    """EC2 hands user data back base64-encoded; accept both encoded and plain text."""
    data = raw.encode() if isinstance(raw, str) else raw
    stripped = data.strip()
    if stripped and not stripped.startswith((b"MIME", b"Content-", b"[", b"apiVersion", b"#", b"---")):
        try:
            return base64.b64decode(stripped, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            pass
    return data.decode()


def parse_label_list(text: str) -> dict[str, str]:
    """Parse `k=v,k2=v2` (the kubelet's --node-labels syntax)."""
    labels: dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, _, value = item.partition("=")
        labels[key.strip()] = value.strip()
    return labels


def parse_taint(text: str) -> Taint:
    """Parse `key[=value]:Effect` (the kubelet's --register-with-taints syntax)."""
    head, sep, effect = text.strip().rpartition(":")
    if not sep:
        raise ValueError(f"taint {text!r} has no effect")
    key, _, value = head.partition("=")
    return Taint(key=key, value=value, effect=effect)


def _flag_values(flags: list[str], name: str) -> list[str]:
    """Values of `--name=value` and `--name value` in a kubelet flag list."""
    values = []
    for i, flag in enumerate(flags):
        for piece_index, piece in enumerate(flag.split()):
            if piece.startswith(f"{name}="):
                values.append(piece.split("=", 1)[1])
            elif piece == name:
                rest = flag.split()[piece_index + 1 : piece_index + 2]
                if rest:
                    values.append(rest[0])
                elif i + 1 < len(flags):
                    values.append(flags[i + 1])
    return values


def parse_nodeconfig(doc: dict[str, Any]) -> BootConfig:
    """Extract labels, taints and settings from one NodeConfig document."""
    spec = doc.get("spec") or {}
    kubelet = spec.get("kubelet") or {}
    config = kubelet.get("config") or {}
    flags = [str(f) for f in kubelet.get("flags") or []]
    boot = BootConfig(format="al2023", cluster_name=str((spec.get("cluster") or {}).get("name", "")))
    for value in _flag_values(flags, "--node-labels"):
        boot.labels.update(parse_label_list(value))
    for value in _flag_values(flags, "--register-with-taints"):
        boot.taints.extend(parse_taint(t) for t in value.split(",") if t.strip())
    for taint in config.get("registerWithTaints") or []:
        boot.taints.append(Taint(key=str(taint["key"]), value=str(taint.get("value", "")), effect=str(taint["effect"])))
    if "maxPods" in config:
        boot.max_pods = int(config["maxPods"])
    for value in _flag_values(flags, "--max-pods"):
        boot.max_pods = int(value)
    boot.local_storage = _nodeadm_local_storage(spec)
    return boot


def _nodeadm_local_storage(spec: dict[str, Any]) -> str:
    """nodeadm's `spec.instance.localStorage.strategy` ("RAID0", "Mount", ...), "" when absent."""
    local_storage = (spec.get("instance") or {}).get("localStorage") or {}
    return str(local_storage.get("strategy") or "")


def _merge(into: BootConfig, other: BootConfig) -> None:
    into.cluster_name = other.cluster_name or into.cluster_name
    into.labels.update(other.labels)
    into.taints.extend(t for t in other.taints if t not in into.taints)
    if other.max_pods is not None:
        into.max_pods = other.max_pods
    # nodeadm merges NodeConfigs in order: a later part's strategy replaces an earlier one.
    into.local_storage = other.local_storage or into.local_storage


def _nodeconfig_documents(text: str) -> list[dict[str, Any]]:
    return [
        d
        for d in yaml.safe_load_all(text)
        if isinstance(d, dict) and d.get("apiVersion") == NODECONFIG_API_VERSION and d.get("kind") == "NodeConfig"
    ]


def parse_al2023(text: str) -> BootConfig:
    """Parse nodeadm user data: MIME multipart (every NodeConfig part merged in order) or bare YAML."""
    boot = BootConfig(format="al2023")
    if text.lstrip().startswith(("MIME-Version", "Content-Type")):
        message = email.message_from_string(text, policy=email.policy.default)
        for part in message.walk():
            if part.get_content_type() != NODECONFIG_CONTENT_TYPE:
                continue
            payload = part.get_payload(decode=True)
            body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
            for doc in _nodeconfig_documents(body):
                _merge(boot, parse_nodeconfig(doc))
        return boot
    for doc in _nodeconfig_documents(text):
        _merge(boot, parse_nodeconfig(doc))
    return boot


def parse_bottlerocket(text: str) -> BootConfig:
    """Parse Bottlerocket TOML settings."""
    settings = tomllib.loads(text).get("settings", {})
    kubernetes = settings.get("kubernetes", {})
    boot = BootConfig(format="bottlerocket", cluster_name=str(kubernetes.get("cluster-name", "")))
    boot.labels = {str(k): str(v) for k, v in (kubernetes.get("node-labels") or {}).items()}
    for key, spec in (kubernetes.get("node-taints") or {}).items():
        # Bottlerocket takes "value:Effect" or a list of them for the same key.
        for item in spec if isinstance(spec, list) else [spec]:
            value, _, effect = str(item).rpartition(":")
            boot.taints.append(Taint(key=str(key), value=value, effect=effect))
    if "max-pods" in kubernetes:
        boot.max_pods = int(kubernetes["max-pods"])
    if _binds_ephemeral_storage(settings.get("bootstrap-commands") or {}):
        boot.local_storage = "RAID0"
    return boot


def _binds_ephemeral_storage(commands: dict[str, Any]) -> bool:
    """True when a bootstrap command that runs (mode not `off`) makes the instance store into ephemeral storage:
    `apiclient ephemeral-storage init` (a RAID0 array of the local disks), then `... bind` (kubelet's and
    containerd's directories onto it), as Karpenter writes for instanceStorePolicy RAID0."""
    for command in commands.values():
        if not isinstance(command, dict) or command.get("mode", "always") == "off":
            continue
        steps = [[str(word) for word in step] for step in command.get("commands") or [] if isinstance(step, list)]
        init = next((i for i, step in enumerate(steps) if step[:3] == ["apiclient", "ephemeral-storage", "init"]), None)
        if init is not None and any(step[:3] == ["apiclient", "ephemeral-storage", "bind"] for step in steps[init:]):
            return True
    return False


def _script_flags(text: str) -> list[str]:
    """The `--flags` a shell script passes to commands, and those inside a `--kubelet-extra-args` argument."""
    try:
        # A backslash at the end of a line continues the command, as in the shell.
        tokens = shlex.split(text.replace("\\\n", " "), comments=True)
    except ValueError:
        return []
    flags: list[str] = []
    for previous, token in zip(["", *tokens], tokens, strict=False):
        if previous == "--kubelet-extra-args":
            flags.extend(token.split())
        elif token.startswith("--") and len(token.split()) == 1:
            # A quoted sentence that happens to start with "--" (an echo's text) is no flag.
            flags.append(token)
        elif previous.startswith("--") and "=" not in previous:
            flags.append(token)  # the value of "--flag value"
    return flags


def parse_script(text: str) -> BootConfig:
    """Labels, taints and max pods a shell script hands the kubelet (format "script"; "unknown" without any)."""
    flags = _script_flags(text)
    boot = BootConfig(format="script")
    for value in _flag_values(flags, "--node-labels"):
        boot.labels.update(parse_label_list(value))
    for value in _flag_values(flags, "--register-with-taints"):
        boot.taints.extend(parse_taint(t) for t in value.split(",") if t.strip())
    for value in _flag_values(flags, "--max-pods"):
        boot.max_pods = int(value)
    if not boot.labels and not boot.taints and boot.max_pods is None:
        return BootConfig(format="unknown")
    return boot


class UserDataRefused(ValueError):
    """User data that claims a family's bootstrap (PowerShell, bootstrap.sh) but would not join a node of it."""


EKS_WINDOWS_BOOTSTRAP = "Start-EKSBootstrap.ps1"
EKS_AL2_BOOTSTRAP = "/etc/eks/bootstrap.sh"


def _powershell_arguments(line: str) -> dict[str, str]:
    """`-Name 'value'` pairs of one PowerShell command line (single-quoted values, as Karpenter writes them)."""
    try:
        tokens = shlex.split(line, posix=True)
    except ValueError as error:
        raise UserDataRefused(f"PowerShell bootstrap line does not parse: {error}") from error
    return {
        token[1:]: value
        for token, value in zip(tokens, [*tokens[1:], ""], strict=True)
        if token.startswith("-") and not token.startswith("--")
    }


def _kubelet_flags_into(boot: BootConfig, extra_args: str) -> None:
    """Labels, taints and max pods from a kubelet extra-args string (`--node-labels="k=v,..." ...`)."""
    flags = shlex.split(extra_args)
    for value in _flag_values(flags, "--node-labels"):
        boot.labels.update(parse_label_list(value))
    for value in _flag_values(flags, "--register-with-taints"):
        boot.taints.extend(parse_taint(t) for t in value.split(",") if t.strip())
    for value in _flag_values(flags, "--max-pods"):
        boot.max_pods = int(value)


def parse_windows(text: str) -> BootConfig:
    """Windows user data as Karpenter writes it: a `<powershell>` block whose bootstrap line runs the EKS AMI's
    Start-EKSBootstrap.ps1 with -EKSClusterName, -APIServerEndpoint and -KubeletExtraArgs (format "windows").
    UserDataRefused when the block, the script or the cluster is missing: such a Windows node never joins."""
    body = text.strip()
    if not (body.startswith("<powershell>") and body.endswith("</powershell>")):
        raise UserDataRefused("Windows user data must be one <powershell>...</powershell> block")
    calls = [line for line in body.splitlines() if line.startswith("& $EKSBootstrapScriptFile")]
    if EKS_WINDOWS_BOOTSTRAP not in body or len(calls) != 1:
        raise UserDataRefused(f"Windows user data does not call {EKS_WINDOWS_BOOTSTRAP} exactly once")
    arguments = _powershell_arguments(calls[0])
    for required in ("EKSClusterName", "APIServerEndpoint"):
        if not arguments.get(required):
            raise UserDataRefused(f"Windows bootstrap call has no -{required}")
    boot = BootConfig(format="windows", cluster_name=arguments["EKSClusterName"])
    _kubelet_flags_into(boot, arguments.get("KubeletExtraArgs", ""))
    return boot


def _al2_bootstrap_call(script: str) -> list[str] | None:
    """The arguments of the script's /etc/eks/bootstrap.sh command, None when it has none."""
    try:
        tokens = shlex.split(script.replace("\\\n", " "), comments=True)
    except ValueError:
        return None
    if EKS_AL2_BOOTSTRAP not in tokens:
        return None
    start = tokens.index(EKS_AL2_BOOTSTRAP) + 1
    return tokens[start:]


def parse_al2(text: str) -> BootConfig:
    """AL2 user data as Karpenter writes it: MIME multipart whose shell-script part runs /etc/eks/bootstrap.sh
    with the cluster name, --apiserver-endpoint and --kubelet-extra-args (format "al2"). UserDataRefused when it is
    not MIME multipart or no part calls bootstrap.sh with a cluster and endpoint: such a node never joins."""
    if not text.lstrip().startswith(("MIME-Version", "Content-Type")):
        raise UserDataRefused("AL2 user data must be MIME multipart (Karpenter's bootstrap.sh format)")
    message = email.message_from_string(text.lstrip(), policy=email.policy.default)
    if not message.is_multipart():
        raise UserDataRefused("AL2 user data declares MIME but is not multipart")
    for part in message.walk():
        if part.get_content_type() != "text/x-shellscript":
            continue
        payload = part.get_payload(decode=True)
        body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
        arguments = _al2_bootstrap_call(body)
        if arguments is None:
            continue
        if not arguments or arguments[0].startswith("--") or "--apiserver-endpoint" not in arguments[:-1]:
            raise UserDataRefused("bootstrap.sh is called without a cluster name and --apiserver-endpoint")
        boot = BootConfig(format="al2", cluster_name=arguments[0])
        options = dict(zip(arguments, [*arguments[1:], ""], strict=True))
        _kubelet_flags_into(boot, options.get("--kubelet-extra-args", ""))
        if options.get("--local-disks") == "raid0":
            boot.local_storage = "RAID0"
        return boot
    raise UserDataRefused(f"AL2 user data has no shell-script part calling {EKS_AL2_BOOTSTRAP}")


def parse_user_data(raw: str | bytes | None) -> BootConfig:
    """Parse user data of any format above; empty user data yields format "none", unreadable "unknown"."""
    if not raw:
        return BootConfig(format="none")
    text = _maybe_base64(raw)
    stripped = text.lstrip()
    if stripped.startswith("[") or "[settings." in text:
        return parse_bottlerocket(text)
    if stripped.startswith("<powershell>"):
        return parse_windows(text)
    if NODECONFIG_API_VERSION in text:
        return parse_al2023(text)
    if EKS_AL2_BOOTSTRAP in text and stripped.startswith(("MIME-Version", "Content-Type")):
        return parse_al2(text)
    if stripped.startswith("#!"):
        return parse_script(text)
    return BootConfig(format="unknown")
