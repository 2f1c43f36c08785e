"""`nodewright simulate` on a snapshot with a CapacityBuffer: its virtual pods are planned like pending pods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nodewright.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BUFFER = [
    {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "burst", "namespace": "shop"},
        "template": {
            "metadata": {"labels": {"app": "burst"}},
            "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "2"}}}]},
        },
    },
    {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "burst", "namespace": "shop"},
        "spec": {"podTemplateRef": {"name": "burst"}, "replicas": 3},
    },
]


def _run(capsys: pytest.CaptureFixture[str], *files: str) -> dict[str, object]:
    assert main(["simulate", "--json", *files]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_the_buffers_pods_get_room_on_new_nodeclaims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pools = [str(EXAMPLES / "nodepools.yaml"), str(EXAMPLES / "ec2nodeclass.yaml")]
    before = _run(capsys, *pools)
    path = tmp_path / "buffer.yaml"
    path.write_text(yaml.safe_dump_all(BUFFER))
    after = _run(capsys, *pools, str(path))
    planned = [p for c in after["nodeclaims"] for p in c["pods"]]  # type: ignore[attr-defined]
    assert sorted(p for p in planned if "capacity-buffer" in p) == [
        f"shop/capacity-buffer-burst-{i}" for i in (1, 2, 3)
    ]
    assert after["cost_per_hour"] > before["cost_per_hour"]  # type: ignore[operator]


def test_a_buffer_of_zero_replicas_plans_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = [BUFFER[0], {**BUFFER[1], "spec": {"podTemplateRef": {"name": "burst"}, "replicas": 0}}]
    path = tmp_path / "buffer.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    out = _run(capsys, str(EXAMPLES / "nodepools.yaml"), str(EXAMPLES / "ec2nodeclass.yaml"), str(path))
    assert out["nodeclaims"] == []
