"""The chart's `logLevel` reaches the forwarder as LOG_LEVEL (Karpenter's names: debug, info, warn, error)."""

from __future__ import annotations

import logging

import pytest

from nodewright.forwarder import __main__ as forwarder_main
from nodewright.settings import CLUSTER


@pytest.fixture(autouse=True)
def _restore_root_logger() -> object:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield None
    root.handlers[:], root.level = handlers, level


@pytest.mark.parametrize(("given", "level"), [("debug", logging.DEBUG), ("warn", logging.WARNING), ("", logging.INFO)])
def test_the_forwarder_logs_at_the_level_given(monkeypatch: pytest.MonkeyPatch, given: str, level: int) -> None:
    monkeypatch.setenv("LOG_LEVEL", given)
    monkeypatch.delenv(CLUSTER, raising=False)  # stops at the settings, after logging is configured
    assert forwarder_main.main() == 2
    assert logging.getLogger().level == level


def test_an_unknown_level_is_a_configuration_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "verbose")
    assert forwarder_main.main() == 2
    assert "LOG_LEVEL='verbose'" in capsys.readouterr().err
