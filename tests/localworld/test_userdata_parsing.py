"""User-data parsing: what the registrar reads from AL2023 NodeConfig and Bottlerocket TOML."""

from __future__ import annotations

import base64

import pytest

from nodewright.localworld.userdata import Taint, parse_label_list, parse_taint, parse_user_data

MIME = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "custom script; --node-labels=ignored=yes is not a NodeConfig"

--BOUNDARY
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: prod
    apiServerEndpoint: https://example.eks.amazonaws.com
  kubelet:
    config:
      maxPods: 29
      registerWithTaints:
      - key: karpenter.sh/unregistered
        effect: NoExecute
      - key: dedicated
        value: gpu
        effect: NoSchedule
    flags:
    - --node-labels=karpenter.sh/nodepool=default,karpenter.sh/capacity-type=spot
    - --register-with-taints=startup=true:NoSchedule

--BOUNDARY--
"""


def test_al2023_mime_labels_taints_and_settings() -> None:
    boot = parse_user_data(MIME)
    assert boot.format == "al2023"
    assert boot.cluster_name == "prod"
    assert boot.labels == {"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "spot"}
    assert boot.taints == [
        Taint("startup", "true", "NoSchedule"),
        Taint("karpenter.sh/unregistered", "", "NoExecute"),
        Taint("dedicated", "gpu", "NoSchedule"),
    ]
    assert boot.max_pods == 29


def test_al2023_base64_as_ec2_returns_it() -> None:
    encoded = base64.b64encode(MIME.encode()).decode()
    assert parse_user_data(encoded).labels["karpenter.sh/nodepool"] == "default"


def test_later_nodeconfig_parts_merge_over_earlier_ones() -> None:
    second = MIME.replace(
        "--BOUNDARY--",
        "--BOUNDARY\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\n"
        "kind: NodeConfig\nspec:\n  kubelet:\n    flags:\n    - --node-labels karpenter.sh/nodepool=other\n"
        "\n--BOUNDARY--",
    )
    boot = parse_user_data(second)
    assert boot.labels["karpenter.sh/nodepool"] == "other"
    assert boot.labels["karpenter.sh/capacity-type"] == "spot"


def test_bare_nodeconfig_yaml() -> None:
    text = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: ['--node-labels=a=b']\n"
    assert parse_user_data(text).labels == {"a": "b"}


def test_bottlerocket_toml_labels_and_taints() -> None:
    toml = """
[settings.kubernetes]
cluster-name = "prod"
max-pods = 58

[settings.kubernetes.node-labels]
"karpenter.sh/nodepool" = "default"
team = "data"

[settings.kubernetes.node-taints]
dedicated = "gpu:NoSchedule"
"example.com/multi" = ["a:NoSchedule", "b:NoExecute"]
"""
    boot = parse_user_data(toml)
    assert boot.format == "bottlerocket"
    assert boot.cluster_name == "prod"
    assert boot.max_pods == 58
    assert boot.labels == {"karpenter.sh/nodepool": "default", "team": "data"}
    assert boot.taints == [
        Taint("dedicated", "gpu", "NoSchedule"),
        Taint("example.com/multi", "a", "NoSchedule"),
        Taint("example.com/multi", "b", "NoExecute"),
    ]


def test_empty_and_unknown_user_data() -> None:
    assert parse_user_data(None).format == "none"
    for text in ("#!/bin/bash\necho hi\n", "#cloud-config\npackages: [jq]\n", "#!/bin/sh\necho 'unbalanced\n"):
        unknown = parse_user_data(text)
        assert unknown.format == "unknown" and not unknown.labels and not unknown.taints, text


def test_a_custom_images_script_hands_the_kubelet_its_flags() -> None:
    # EKS's bootstrap.sh passes --kubelet-extra-args on to the kubelet; a script may also call the kubelet directly.
    script = (
        "#!/bin/bash\nset -euo pipefail\n# join the cluster\n"
        "/etc/eks/bootstrap.sh prod --kubelet-extra-args '--node-labels=karpenter.sh/nodepool=custom,team=web "
        "--register-with-taints=karpenter.sh/unregistered:NoExecute --max-pods=58'\n"
        'echo "--node-labels=ignored=yes is only text"\n'
    )
    boot = parse_user_data(base64.b64encode(script.encode()).decode())
    assert boot.format == "script"
    assert boot.labels == {"karpenter.sh/nodepool": "custom", "team": "web"}
    assert boot.taints == [Taint("karpenter.sh/unregistered", "", "NoExecute")]
    assert boot.max_pods == 58
    direct = parse_user_data("#!/bin/sh\nexec /usr/bin/kubelet --config /etc/kubelet.yaml \\\n  --node-labels a=b\n")
    assert direct.labels == {"a": "b"}


def test_flag_syntax_helpers() -> None:
    assert parse_label_list("a=1, b=2,,c=") == {"a": "1", "b": "2", "c": ""}
    assert parse_taint("k=v:NoSchedule") == Taint("k", "v", "NoSchedule")
    assert parse_taint("k:NoExecute") == Taint("k", "", "NoExecute")
    with pytest.raises(ValueError):
        parse_taint("no-effect")
