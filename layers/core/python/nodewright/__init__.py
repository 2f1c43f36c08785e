"""nodewright: an event-driven, serverless node autoscaler for Amazon EKS."""

# The one place the version is written: pyproject.toml reads it, the chart's version and appVersion and the
# CHANGELOG's newest section must match it (tests/unit/test_release.py).
__version__ = "0.2.0"

# Before any module of the package defines its dataclasses: their methods compiled ahead, when the layer's build
# wrote them (nothing happens in a checkout); see dataclass_methods.
from nodewright import dataclass_methods as _dataclass_methods

_dataclass_methods.install()
