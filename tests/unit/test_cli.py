"""`nodewright`: a sub-command's run registers only that sub-command; help and mistakes see them all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nodewright import cli

CORE = Path(cli.__file__).resolve().parents[1]


def test_one_command_registers_only_itself() -> None:
    parser = cli.build_parser("simulate")
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) == {"simulate"}
    assert set(cli.build_parser()._subparsers._group_actions[0].choices) == set(cli.COMMANDS)  # type: ignore[union-attr]


def test_a_run_of_simulate_imports_no_other_command() -> None:
    code = (
        "import sys; from nodewright import cli\n"
        "try:\n    cli.main(['simulate', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('nodewright.commands', 'nodewright.localworld'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONPATH": str(CORE)}
    )
    modules = done.stdout.strip().splitlines()[-1]
    assert "nodewright.commands.simulate" in modules
    for other in ("disrupt", "migrate", "demo", "explain_event", "localworld"):
        assert other not in modules


@pytest.mark.parametrize("argv", [["--help"], ["simulat"]])
def test_help_and_a_mistyped_command_list_every_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(argv)
    captured = capsys.readouterr()
    listed = captured.out + captured.err
    assert all(name in listed for name in cli.COMMANDS)


STATIC_POOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static}
spec:
  %s
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
"""


def test_validate_previous_refuses_a_pool_turning_dynamic_or_static(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    static, dynamic, bigger = tmp_path / "static.yaml", tmp_path / "dynamic.yaml", tmp_path / "bigger.yaml"
    static.write_text(STATIC_POOL % "replicas: 1")
    dynamic.write_text(STATIC_POOL % "weight: 10")
    bigger.write_text(STATIC_POOL % "replicas: 3")
    assert cli.main(["validate", "-q", str(dynamic), "--previous", str(static)]) == 1
    assert "spec.replicas: cannot be removed" in capsys.readouterr().err
    assert cli.main(["validate", "-q", str(static), "--previous", str(dynamic)]) == 1
    assert "spec.replicas: cannot be added" in capsys.readouterr().err
    assert cli.main(["validate", "-q", str(bigger), "--previous", str(static)]) == 0
