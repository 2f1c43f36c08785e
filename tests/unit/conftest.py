"""The unit tests' shared builders live beside the tests that made them: `tests/unit/service/service_fakes.py` (an
in-memory cloud, manifests) and `tests/unit/disruption/cluster_builder.py` (clusters as the API server serves them).
Both folders are put on the path so a test in either can use the other's."""

import sys
from pathlib import Path

for folder in ("service", "disruption"):
    path = str(Path(__file__).parent / folder)
    if path not in sys.path:
        sys.path.insert(0, path)
