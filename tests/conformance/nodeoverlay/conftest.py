"""The NodeOverlay conformance tests share `overlay_kit` (a catalog of Karpenter's fake instance types and the
planner's overlay pass)."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
