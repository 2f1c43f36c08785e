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


def parts(text: str) -> list[tuple[str, str]]:
    message = email.message_from_string(text)
    return [(p.get_content_type(), str(p.get_payload())) for p in message.walk() if not p.is_multipart()]


@pytest.mark.parametrize(
    ("theirs", "kind"),
    [
        # Karpenter's rule: YAML that is a map is a NodeConfig, anything else a shell script.
        ("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {}\n", "application/node.eks.aws"),
        ("---\nspec:\n  kubelet: {}\n", "application/node.eks.aws"),
        ("#!/bin/bash\necho hello\n", "text/x-shellscript"),
        ("just some words", "text/x-shellscript"),
        ("echo [unbalanced", "text/x-shellscript"),
        # cloud-init's, not a NodeConfig (which nodeadm would refuse).
        ("#cloud-config\npackages: [jq]\n", "text/cloud-config"),
    ],
)
def test_al2023_wraps_the_users_text_as_karpenter_does(theirs: str, kind: str) -> None:
    found = parts(al2023_user_data(boot(user_data=theirs)))
    assert [k for k, _ in found] == [kind, "application/node.eks.aws"]
    assert found[0][1].strip() == theirs.strip()


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


def test_bottlerocket_keeps_the_users_labels_but_only_the_nodepools_taints() -> None:
    theirs = (
        '[settings.kubernetes.node-labels]\n"mine" = "yes"\n"team" = "theirs"\n'
        '[settings.kubernetes.node-taints]\n"only-theirs" = ["x:NoSchedule"]\n'
    )
    kubelet = KubeletConfiguration(
        eviction_soft={"memory.available": "500Mi"},
        eviction_soft_grace_period={"memory.available": "1m30s"},
        eviction_max_pod_grace_period=60,
        image_gc_high_threshold_percent=85,
    )
    doc = tomllib.loads(bottlerocket_user_data(boot(user_data=theirs, kubelet=kubelet)))
    kubernetes = doc["settings"]["kubernetes"]
    assert kubernetes["node-labels"] == {"mine": "yes", **LABELS}
    assert set(kubernetes["node-taints"]) == {"dedicated", "example.com/agent-not-ready", "karpenter.sh/unregistered"}
    assert kubernetes["eviction-soft"] == {"memory.available": "500Mi"}
    assert kubernetes["eviction-soft-grace-period"] == {"memory.available": "1m30s"}
    assert kubernetes["eviction-max-pod-grace-period"] == 60
    assert kubernetes["image-gc-high-threshold-percent"] == "85"


def test_custom_user_data_is_the_users_own_exactly() -> None:
    theirs = "#!/bin/bash\n/etc/eks/bootstrap.sh demo --kubelet-extra-args '--node-labels=a=b'\n"
    assert user_data("custom", boot(user_data=theirs)) == theirs
    assert user_data("custom", boot()) == ""


def test_user_data_is_deterministic_and_changes_with_labels() -> None:
    assert user_data("al2023", boot()) == user_data("al2023", boot())
    assert user_data("bottlerocket", boot()) == user_data("bottlerocket", boot())
    assert user_data("al2023", boot()) != user_data("al2023", boot(labels={**LABELS, "team": "api"}))
    with pytest.raises(UserDataError, match="ubuntu"):
        user_data("ubuntu", boot())
