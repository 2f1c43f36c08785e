"""`nodewright migrate` on old-API files end to end: written, then accepted by `nodewright validate`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodewright.cli import main

PROVISIONER = """\
# the web team's capacity
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: web}
spec:
  providerRef: {name: default}
  ttlSecondsAfterEmpty: 60
  kubeletConfiguration: {maxPods: 40}
"""
TEMPLATE = """\
apiVersion: karpenter.k8s.aws/v1alpha1
kind: AWSNodeTemplate
metadata: {name: default}
spec:
  amiFamily: Bottlerocket
  subnetSelector: {karpenter.sh/discovery: demo}
  securityGroupSelector: {karpenter.sh/discovery: demo}
"""
V1 = """\
apiVersion: karpenter.sh/v1  # kept as written
kind: NodePool
metadata: {name: batch}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
"""


def test_old_objects_written_in_place_then_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pools, classes = tmp_path / "pools.yaml", tmp_path / "classes.yaml"
    pools.write_text(PROVISIONER + "---\n" + V1)
    classes.write_text(TEMPLATE)
    assert main(["migrate", "--write", "--role", "KarpenterNodeRole-demo", str(pools), str(classes)]) == 0
    err = capsys.readouterr().err
    assert "pools.yaml: NodePool/web: written as nodewright.io/v1" in err
    assert "pools.yaml: NodePool/batch: apiVersion: karpenter.sh/v1 -> nodewright.io/v1" in err
    # The v1 document is still rewritten in place, its comment kept, after the converted one.
    assert pools.read_text().endswith(
        "---\n"
        + V1.replace("karpenter.sh/v1  #", "nodewright.io/v1  #").replace(
            "group: karpenter.k8s.aws", "group: nodewright.io"
        )
    )
    web, batch = yaml.safe_load_all(pools.read_text())
    assert batch["spec"]["template"]["spec"]["nodeClassRef"]["group"] == "nodewright.io"
    assert web["spec"]["disruption"] == {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1m"}
    (node_class,) = yaml.safe_load_all(classes.read_text())
    assert node_class["spec"]["kubelet"] == {"maxPods": 40}  # from the Provisioner in the other file
    assert node_class["spec"]["role"] == "KarpenterNodeRole-demo"
    assert main(["validate", str(pools), str(classes)]) == 0, capsys.readouterr().err


def test_a_refused_old_object_writes_nothing_and_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pools, classes = tmp_path / "pools.yaml", tmp_path / "classes.yaml"
    bad = PROVISIONER.replace("ttlSecondsAfterEmpty: 60", "ttlSecondsAfterEmpty: -60")
    pools.write_text(bad)
    classes.write_text(TEMPLATE)
    assert main(["migrate", "--write", str(pools), str(classes)]) == 1
    assert pools.read_text() == bad and classes.read_text() == TEMPLATE
    err = capsys.readouterr().err
    assert "pools.yaml: Provisioner/web: spec.ttlSecondsAfterEmpty: -60 is negative" in err
    assert "nothing was written" in err


def test_the_role_placeholder_is_pointed_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    classes = tmp_path / "classes.yaml"
    classes.write_text(TEMPLATE)
    assert main(["migrate", str(classes)]) == 0
    out, err = capsys.readouterr()
    assert "role: $KARPENTER_NODE_ROLE" in out and "pass --role" in err


def test_two_objects_of_one_name_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inline = """\
apiVersion: karpenter.sh/v1alpha5
kind: Provisioner
metadata: {name: default}
spec:
  provider:
    subnetSelector: {karpenter.sh/discovery: demo}
    securityGroupSelector: {karpenter.sh/discovery: demo}
"""
    path = tmp_path / "all.yaml"
    path.write_text(inline + "---\n" + TEMPLATE)
    assert main(["migrate", str(path)]) == 1
    assert "EC2NodeClass/default is written twice" in capsys.readouterr().err
