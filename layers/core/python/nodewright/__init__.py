"""nodewright: an event-driven, serverless node autoscaler for Amazon EKS."""

# The one place the version is written: pyproject.toml reads it, the chart's version and appVersion and the
# CHANGELOG's newest section must match it (tests/unit/test_release.py).
__version__ = "0.2.0"
