"""`nodewright migrate`: Karpenter v1 files become nodewright.io/v1 files, changing the two fields and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodewright.cli import main
from nodewright.commands.migrate import migrate_text
from nodewright.model.loader import load_files

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "karpenter-v1"

MIXED = """\
# Team pools (kept as written)
apiVersion: karpenter.sh/v1   # Karpenter's group
kind: NodePool
metadata:
  name: web
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["spot"]
---
apiVersion: "karpenter.k8s.aws/v1"
kind: EC2NodeClass
metadata:
  name: default
spec:
  role: KarpenterNodeRole-demo
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""


def test_exactly_the_two_fields_change_and_everything_else_stays_byte_for_byte() -> None:
    migrated, changes = migrate_text(MIXED, "pools.yaml")
    assert [str(c) for c in changes] == [
        "pools.yaml: NodePool/web: apiVersion: karpenter.sh/v1 -> nodewright.io/v1",
        "pools.yaml: NodePool/web: spec.template.spec.nodeClassRef.group: karpenter.k8s.aws -> nodewright.io",
        "pools.yaml: EC2NodeClass/default: apiVersion: karpenter.k8s.aws/v1 -> nodewright.io/v1",
    ]
    expected = (
        MIXED.replace("apiVersion: karpenter.sh/v1   #", "apiVersion: nodewright.io/v1   #")
        # Flow style kept.
        .replace("nodeClassRef: {group: karpenter.k8s.aws,", "nodeClassRef: {group: nodewright.io,")
        .replace('apiVersion: "karpenter.k8s.aws/v1"', 'apiVersion: "nodewright.io/v1"')
    )
    assert migrated == expected
    after = list(yaml.safe_load_all(migrated))
    assert after[0]["apiVersion"] == after[1]["apiVersion"] == "nodewright.io/v1"


def test_the_karpenter_examples_migrate_and_still_validate(tmp_path: Path) -> None:
    for source in sorted(EXAMPLES.glob("*.yaml")):
        target = tmp_path / source.name
        target.write_text(source.read_text())
    assert main(["migrate", "--write", *map(str, sorted(tmp_path.glob("*.yaml")))]) == 0
    inputs, errors = load_files([tmp_path])
    assert errors == [] and len(inputs.nodepools) == len(inputs.nodeclasses) == 1
    # The same objects, field for field, now in nodewright's group.
    for source in sorted(EXAMPLES.glob("*.yaml")):
        for before, after in zip(
            yaml.safe_load_all(source.read_text()),
            yaml.safe_load_all((tmp_path / source.name).read_text()),
            strict=True,
        ):
            assert after.pop("apiVersion") == "nodewright.io/v1"
            before.pop("apiVersion")
            if after["kind"] == "NodePool":
                assert after["spec"]["template"]["spec"]["nodeClassRef"].pop("group") == "nodewright.io"
                before["spec"]["template"]["spec"]["nodeClassRef"].pop("group")
            assert after == before


def test_without_write_the_result_goes_to_stdout_and_the_file_is_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pools.yaml"
    path.write_text(MIXED)
    assert main(["migrate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == migrate_text(MIXED, str(path))[0]
    assert path.read_text() == MIXED
    assert err.count("->") == 3


def test_a_list_from_kubectl_get_is_migrated_like_the_objects_without_server_fields() -> None:
    pool = yaml.safe_load(MIXED.split("---")[0])
    exported = {**pool, "metadata": {"name": "web", "uid": "u-1", "resourceVersion": "7"}, "status": {"x": 1}}
    listing = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [exported]})
    single = yaml.safe_dump(exported)
    (from_list,) = yaml.safe_load_all(migrate_text(listing, "list.yaml")[0])
    (from_single,) = yaml.safe_load_all(migrate_text(single, "one.yaml")[0])
    assert from_list == from_single
    assert from_list["metadata"] == {"name": "web"} and "status" not in from_list
    assert from_list["apiVersion"] == "nodewright.io/v1"
    assert from_list["spec"]["template"]["spec"]["nodeClassRef"]["group"] == "nodewright.io"


@pytest.mark.parametrize(
    "document",
    [
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
        "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: c}\n",
        "apiVersion: karpenter.sh/v1alpha5\nkind: Machine\nmetadata: {name: m}\n",
    ],
)
def test_a_document_migrate_cannot_convert_fails_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: str
) -> None:
    good = tmp_path / "pools.yaml"
    good.write_text(MIXED)
    bad = tmp_path / "other.yaml"
    bad.write_text(document)
    assert main(["migrate", "--write", str(good), str(bad)]) == 1
    assert good.read_text() == MIXED and bad.read_text() == document
    err = capsys.readouterr().err
    assert "is not something migrate converts" in err and "nothing was written" in err


def test_migrate_carries_a_static_nodepools_replicas_and_node_limit() -> None:
    text = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static}
spec:
  replicas: 3
  limits: {nodes: 5}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
"""
    (pool,) = yaml.safe_load_all(migrate_text(text, "static.yaml")[0])
    assert pool["spec"]["replicas"] == 3 and pool["spec"]["limits"] == {"nodes": 5}
