"""The fault-injection tests reuse the disruption tests' NodePool factory (one pool per test, torn down after)."""

from test_disruption import pool_factory  # noqa: F401 (a fixture, registered by being here)
