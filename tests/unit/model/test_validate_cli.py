"""`nodewright validate`: exit codes and output, through the real CLI entry point."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from nodewright.cli import main
from nodewright.model.roles import allowed

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
    bad_class = with_field(NODECLASS, "spec.amiSelectorTerms", [{"alias": "windows2022@v1"}])
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
        f"{path}: EC2NodeClass/default: spec.amiSelectorTerms[0].alias: windows families only take the version "
        "latest, not v1",
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


@pytest.fixture(autouse=True)
def _no_node_roles_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A shell that sourced .localworld/env exports the world's node role; these tests choose their own.
    monkeypatch.delenv("NODEWRIGHT_NODE_ROLE", raising=False)
    monkeypatch.delenv("NODEWRIGHT_NODE_ROLES", raising=False)


def test_a_role_the_stack_may_not_pass_is_an_error_naming_the_field_and_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(EXAMPLES / "ec2nodeclass.yaml")
    assert main(["validate", "--node-role", "nodewright-node", "--node-role", "team-nodes", path]) == 1
    _, err = capsys.readouterr()
    first = err.splitlines()[0]
    assert first.startswith(f"{path}: EC2NodeClass/default: spec.role: role KarpenterNodeRole-example is not")
    assert "(nodewright-node, team-nodes)" in first and "-c nodeRoles=" in first
    # The same class passes when its role is one of them, given by flag or (as the local world exports) by env.
    assert main(["validate", "-q", "--node-role", "KarpenterNodeRole-example", path]) == 0


def test_the_roles_come_from_the_environment_when_no_flag_names_them(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(EXAMPLES / "ec2nodeclass.yaml")
    monkeypatch.setenv("NODEWRIGHT_NODE_ROLE", "nodewright-node")
    assert main(["validate", "-q", path]) == 1
    monkeypatch.setenv("NODEWRIGHT_NODE_ROLES", "KarpenterNodeRole-example,other")
    assert main(["validate", "-q", path]) == 0
    assert "spec.role" in capsys.readouterr().err  # from the first run


def test_a_role_is_matched_by_name_whether_given_as_name_or_arn() -> None:
    assert allowed("arn:aws:iam::123456789012:role/teams/web/nodes", ["nodes"])
    assert allowed("nodes", ["arn:aws:iam::123456789012:role/nodes"])
    assert not allowed("nodes-admin", ["nodes"])
