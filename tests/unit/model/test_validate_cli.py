"""`nodewright validate`: exit codes and output, through the real CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodewright.cli import main

from .helpers import NODECLASS, NODEPOOL, with_field

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_valid_files_exit_zero_with_one_line_per_object(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(EXAMPLES / "nodepools.yaml"), str(EXAMPLES / "ec2nodeclass.yaml")]
    assert main(["validate", *files]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 4 and err == ""
    assert lines[0].startswith(
        f"ok  {files[0]}: NodePool/default (weight 10, 6 requirements, limits cpu=1000 memory=4000Gi"
    )
    assert lines[2].startswith(
        f"ok  {files[1]}: EC2NodeClass/default (ami al2023@latest, role KarpenterNodeRole-example"
    )


def test_invalid_file_exits_non_zero_with_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad_pool = with_field(NODEPOOL, "spec.template.spec.requirments", [])
    bad_pool = with_field(bad_pool, "spec.weight", 500)
    bad_class = with_field(NODECLASS, "spec.amiSelectorTerms", [{"alias": "al2@latest"}])
    path = tmp_path / "pools.yaml"
    path.write_text(yaml.safe_dump_all([bad_pool, bad_class]))
    assert main(["validate", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines == [
        f"{path}: NodePool/default: spec.template.spec.requirments: "
        'unknown field "requirments"; did you mean requirements?',
        f"{path}: NodePool/default: spec.weight: 500 is out of range; use an integer from 1 to 100",
        f"{path}: EC2NodeClass/default: spec.amiSelectorTerms[0].alias: the al2 family is not supported yet by "
        "nodewright, which bootstraps al2023 (nodeadm) and bottlerocket nodes; "
        "use al2023@latest or bottlerocket@latest, or amiFamily: Custom with your own amiSelectorTerms and userData",
        "3 errors found",
    ]


def test_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-q", str(EXAMPLES / "nodepools.yaml")]) == 0
    assert capsys.readouterr().out == ""


def test_missing_file_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "/nonexistent.yaml"]) == 1
    assert "/nonexistent.yaml: cannot read the file" in capsys.readouterr().err


def test_no_files_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["validate"])
    assert exc.value.code == 2
