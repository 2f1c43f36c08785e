"""Every file of Karpenter's `examples/v1/` (aws/karpenter-provider-aws v1.14.1, kept in karpenter_v1/ as it is)
migrates, validates and simulates; see README.md. Windows and AL2 node classes keep their family and Windows
pods land on amd64 Windows offerings only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodewright.catalog.snapshot import SnapshotSource
from nodewright.cli import main

ARCHITECTURES = {it.name: it.architecture for it in SnapshotSource().instance_types()}

EXAMPLES = Path(__file__).resolve().parent / "karpenter_v1"
FILES = sorted(EXAMPLES.glob("*.yaml"))
# Upstream defect (README.md): a nodeClassRef.group Karpenter's own CRD refuses.
BAD_GROUP_FILE = "windows-custom-userdata.yaml"
WINDOWS_FAMILIES = ("windows2019", "windows2022", "windows2025")


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _workload(pools: list[dict[str, Any]], classes: dict[str, dict[str, Any]]) -> str:
    """One two-replica Deployment per NodePool, selecting it (and Windows when its class is a Windows one)."""
    docs = []
    for pool in pools:
        name = pool["metadata"]["name"]
        ref = pool["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        selector = {"karpenter.sh/nodepool": name}
        if _family(classes[ref]) in WINDOWS_FAMILIES:
            selector["kubernetes.io/os"] = "windows"
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": f"app-{name}", "namespace": "default"},
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {
                            "nodeSelector": selector,
                            "containers": [
                                {
                                    "name": "app",
                                    "image": "example",
                                    "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
                                }
                            ],
                        },
                    },
                },
            }
        )
    return yaml.safe_dump_all(docs)


def _family(node_class: dict[str, Any]) -> str:
    spec = node_class["spec"]
    alias = next((t["alias"] for t in spec.get("amiSelectorTerms", []) if "alias" in t), "")
    return str(spec.get("amiFamily") or alias.split("@")[0]).lower()


def _fix_upstream_group(path: Path) -> None:
    path.write_text(path.read_text().replace("group: karpenter.k8s.aws/v1\n", "group: karpenter.k8s.aws\n"))


def test_every_file_of_examples_v1_is_kept() -> None:
    """The 22 files of examples/v1 at v1.14.1, Windows and AL2 ones among them."""
    names = {p.name for p in FILES}
    assert len(names) == 22
    assert {"windows-2019.yaml", "windows-2022.yaml", "windows-2025.yaml", "al2-custom-ami.yaml"} <= names


def test_the_upstream_group_defect_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Karpenter's CRD refuses `group: karpenter.k8s.aws/v1` (pattern ^[^/]*$); validate names the field."""
    path = tmp_path / BAD_GROUP_FILE
    shutil.copy(EXAMPLES / BAD_GROUP_FILE, path)
    assert main(["migrate", "--write", str(path)]) == 0
    assert main(["validate", str(path)]) == 1
    assert "spec.template.spec.nodeClassRef.group" in capsys.readouterr().err


@pytest.mark.parametrize("source", FILES, ids=[p.name for p in FILES])
def test_example_migrates_validates_and_simulates(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / source.name
    shutil.copy(source, path)
    if source.name == BAD_GROUP_FILE:
        _fix_upstream_group(path)

    assert main(["migrate", "--write", str(path)]) == 0
    docs = _documents(path)
    assert docs and all(
        d["apiVersion"] == "nodewright.io/v1" for d in docs if d["kind"] in ("NodePool", "EC2NodeClass")
    )

    assert main(["validate", "-q", str(path)]) == 0

    pools = [d for d in docs if d["kind"] == "NodePool"]
    classes = {d["metadata"]["name"]: d for d in docs if d["kind"] == "EC2NodeClass"}
    workload = tmp_path / "workload.yaml"
    workload.write_text(_workload(pools, classes))
    capsys.readouterr()
    assert main(["simulate", "--json", str(path), str(workload)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["unschedulable"] == []
    placed = {pod for claim in out["nodeclaims"] for pod in claim["pods"]}
    assert len(placed) == 2 * len(pools)
    for claim in out["nodeclaims"]:
        pool = next(p for p in pools if p["metadata"]["name"] == claim["nodepool"])
        family = _family(classes[pool["spec"]["template"]["spec"]["nodeClassRef"]["name"]])
        assert all(pod.split("/")[-1].startswith(f"app-{claim['nodepool']}-") for pod in claim["pods"]), claim
        if family in WINDOWS_FAMILIES:
            # Windows runs on amd64 only: no Graviton type is offered to a Windows NodeClaim.
            assert {ARCHITECTURES[t] for t in claim["instance_types"]} == {"amd64"}, claim
