"""The disruption conformance tests share the disruption unit tests' cluster builder (`cluster_builder.Cluster`)."""

import sys
from pathlib import Path

_BUILDERS = Path(__file__).resolve().parents[2] / "unit" / "disruption"
if str(_BUILDERS) not in sys.path:
    sys.path.insert(0, str(_BUILDERS))
