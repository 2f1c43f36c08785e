"""Process handling: start-up is bounded and failures carry the component's log."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nodewright.localworld import procs


def test_a_component_that_exits_fails_fast_with_its_log(tmp_path: Path) -> None:
    proc = procs.start("crashy", [sys.executable, "-c", "print('bad flag --x'); raise SystemExit(3)"], tmp_path)
    with pytest.raises(procs.StartupError, match="crashy exited during start-up") as caught:
        procs.wait_ready(proc, lambda: False, timeout=20)
    assert "bad flag --x" in str(caught.value)


def test_a_component_that_never_gets_ready_times_out_and_can_be_stopped(tmp_path: Path) -> None:
    proc = procs.start("sleepy", [sys.executable, "-c", "import time; print('waiting'); time.sleep(60)"], tmp_path)
    try:
        with pytest.raises(procs.StartupError, match="sleepy not ready after 1s"):
            procs.wait_ready(proc, lambda: False, timeout=1)
        assert procs.alive(proc.pid)
    finally:
        procs.stop(proc.pid, grace=5)
    assert not procs.alive(proc.pid)


def test_readiness_probe_errors_mean_not_yet(tmp_path: Path) -> None:
    proc = procs.start("ok", [sys.executable, "-c", "import time; time.sleep(30)"], tmp_path)
    calls = []

    def probe() -> bool:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionRefusedError
        return True

    try:
        procs.wait_ready(proc, probe, timeout=20, interval=0.01)
    finally:
        procs.stop(proc.pid, grace=5)
    assert len(calls) == 3


def test_free_ports_are_bindable() -> None:
    port = procs.free_port()
    assert 1024 < port < 65536
    assert not procs.port_open(port)
