"""What the Lambda handlers' nodewright modules import: nothing that only costs cold-start time.

Each handler's set-up imports nodewright modules (at the top or on the first call). Importing all of them in
a fresh interpreter must not load the packages the Lambdas were freed of: `kubernetes` and pydantic (not in
the layer), PyYAML (the user data is written by the core, the Lambdas parse no YAML), and `tomllib` /
`email.policy` (needed only for an EC2NodeClass's own userData, and imported then).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
NOT_AT_SET_UP = ("kubernetes", "pydantic", "yaml", "tomllib", "email.policy")


def nodewright_modules(handler: Path) -> list[str]:
    """Every `nodewright...` module the handler file imports, wherever the import statement is."""
    names = set()
    for node in ast.walk(ast.parse(handler.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nodewright"):
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.startswith("nodewright"))
    return sorted(names)


@pytest.mark.parametrize("handler", sorted(FUNCTIONS.glob("*/handler.py")), ids=lambda p: p.parent.name)
def test_a_handlers_modules_do_not_import_what_its_cold_start_can_do_without(handler: Path) -> None:
    modules = nodewright_modules(handler)
    assert modules, "the handler imports no nodewright module"
    probe = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in {NOT_AT_SET_UP!r} if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []
