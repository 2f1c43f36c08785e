"""The scheduling conformance tests share the unit tests' builders (pods, NodePools, nodes)."""

import sys
from pathlib import Path

_BUILDERS = Path(__file__).resolve().parents[2] / "unit" / "scheduling"
if str(_BUILDERS) not in sys.path:
    sys.path.insert(0, str(_BUILDERS))
