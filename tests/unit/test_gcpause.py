"""The cycle collector pause around a solve and a Lambda's set-up restores whatever the caller had."""

from __future__ import annotations

import gc

import pytest

from nodewright.gcpause import paused_cycle_collector


@pytest.mark.parametrize("enabled", [True, False])
def test_the_callers_setting_is_restored_also_after_an_error(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with paused_cycle_collector():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), paused_cycle_collector():
            raise RuntimeError("set-up failed")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
