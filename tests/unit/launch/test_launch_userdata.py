"""User data round-trips through the registrar's parser (what a booting node reads)."""

from __future__ import annotations

import email
import tomllib

import pytest
import yaml

from nodewright.launch.userdata import (
    ClusterInfo,
    NodeBootstrap,
    UserDataError,
    al2023_user_data,
    bottlerocket_user_data,
    user_data,
)
from nodewright.localworld.userdata import Taint as BootTaint
from nodewright.localworld.userdata import parse_user_data
from nodewright.model.nodeclass import KubeletConfiguration
from nodewright.model.taints import Taint

CLUSTER = ClusterInfo("demo", "https://api.example:443", "Q0EK", "10.100.0.0/16", "1.31")
LABELS = {"karpenter.sh/nodepool": "general", "team": "web", "karpenter.sh/capacity-type": "spot"}
TAINTS = (Taint("dedicated", "NoSchedule", "web"),)
STARTUP = (Taint("example.com/agent-not-ready", "NoExecute"),)


def boot(**overrides: object) -> NodeBootstrap:
    fields: dict[str, object] = {
        "cluster": CLUSTER,
        "labels": LABELS,
        "taints": TAINTS,
        "startup_taints": STARTUP,
        "kubelet": KubeletConfiguration(max_pods=42, system_reserved={"cpu": 100, "memory": 100 * 1024**2}),
    }
    fields.update(overrides)
    return NodeBootstrap(**fields)  # type: ignore[arg-type]


EXPECTED_TAINTS = [
    BootTaint("dedicated", "web", "NoSchedule"),
    BootTaint("example.com/agent-not-ready", "", "NoExecute"),
    BootTaint("karpenter.sh/unregistered", "", "NoExecute"),
]


def nodeconfig_parts(text: str) -> list[dict[str, object]]:
    message = email.message_from_string(text)
    docs = []
    for part in message.walk():
        if part.get_content_type() == "application/node.eks.aws":
            docs.extend(d for d in yaml.safe_load_all(part.get_payload()) if d)
    return docs


def test_al2023_user_data_parses_back_with_labels_taints_and_kubelet_settings() -> None:
    text = al2023_user_data(boot())
    parsed = parse_user_data(text)
    assert parsed.format == "al2023"
    assert parsed.cluster_name == "demo"
    assert parsed.labels == LABELS
    assert parsed.taints == EXPECTED_TAINTS
    assert parsed.max_pods == 42
    [config] = nodeconfig_parts(text)
    spec = config["spec"]
    assert isinstance(spec, dict)
    assert spec["cluster"] == {
        "name": "demo",
        "apiServerEndpoint": "https://api.example:443",
        "certificateAuthority": "Q0EK",
        "cidr": "10.100.0.0/16",
    }
    assert spec["kubelet"]["config"]["systemReserved"] == {"cpu": "100m", "memory": "100Mi"}


def test_al2023_keeps_the_users_shell_script_and_nodeconfig_parts_before_ours() -> None:
    script = "#!/bin/bash\necho hello\n"
    parsed_script = al2023_user_data(boot(user_data=script))
    message = email.message_from_string(parsed_script)
    kinds = [p.get_content_type() for p in message.walk() if not p.is_multipart()]
    assert kinds == ["text/x-shellscript", "application/node.eks.aws"]
    assert "echo hello" in parsed_script

    theirs = (
        'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="BOUNDARY"\n\n--BOUNDARY\n'
        "Content-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\n"
        "spec:\n  kubelet:\n    flags:\n      - --node-labels=mine=yes\n--BOUNDARY--\n"
    )
    merged = al2023_user_data(boot(user_data=theirs))
    parsed = parse_user_data(merged)
    # Both NodeConfigs survive; the user's own label is kept next to ours.
    assert parsed.labels == {"mine": "yes", **LABELS}
    assert len(nodeconfig_parts(merged)) == 2


def test_al2023_rejects_user_data_it_cannot_merge() -> None:
    with pytest.raises(UserDataError, match="al2023"):
        al2023_user_data(boot(user_data="just some words"))


def test_bottlerocket_user_data_parses_back_and_merges_the_users_settings() -> None:
    theirs = (
        "[settings.kubernetes]\nimage-gc-low-threshold-percent = 60\n[settings.host-containers.admin]\nenabled = true\n"
    )
    text = bottlerocket_user_data(boot(user_data=theirs))
    parsed = parse_user_data(text)
    assert parsed.format == "bottlerocket"
    assert parsed.cluster_name == "demo"
    assert parsed.labels == LABELS
    assert sorted(parsed.taints, key=lambda t: t.key) == sorted(EXPECTED_TAINTS, key=lambda t: t.key)
    assert parsed.max_pods == 42
    doc = tomllib.loads(text)
    assert doc["settings"]["host-containers"]["admin"]["enabled"] is True
    assert doc["settings"]["kubernetes"]["image-gc-low-threshold-percent"] == 60
    assert doc["settings"]["kubernetes"]["api-server"] == "https://api.example:443"
    assert doc["settings"]["kubernetes"]["system-reserved"] == {"cpu": "100m", "memory": "100Mi"}


def test_user_data_is_deterministic_and_changes_with_labels() -> None:
    assert user_data("al2023", boot()) == user_data("al2023", boot())
    assert user_data("bottlerocket", boot()) == user_data("bottlerocket", boot())
    assert user_data("al2023", boot()) != user_data("al2023", boot(labels={**LABELS, "team": "api"}))
    with pytest.raises(UserDataError, match="windows"):
        user_data("windows2022", boot())
