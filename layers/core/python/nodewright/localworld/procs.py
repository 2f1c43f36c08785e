"""Background processes of the local world: start each in its own process group with a log file,
wait for readiness with a deadline, and stop them by process group.

A process group per component means stopping it also stops anything it forked, and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


class StartupError(RuntimeError):
    """A component did not become ready in time; the message carries the tail of its log."""


@dataclass(frozen=True)
class Proc:
    """A started component: its name, process id (also its process group id) and log file."""

    name: str
    pid: int
    log: Path


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago.

    The kernel picks it, so two worlds on one machine do not collide; the tiny window before the
    component binds it is acceptable for a development tool.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start(
    name: str,
    argv: Sequence[str],
    log_dir: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Proc:
    """Start `argv` detached in a new session (hence its own process group), output to a log."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    with log.open("ab") as out:
        out.write(f"### {time.strftime('%H:%M:%S')} starting: {' '.join(argv)}\n".encode())
        out.flush()
        process = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    return Proc(name=name, pid=process.pid, log=log)


def alive(pid: int) -> bool:
    """True when the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # A zombie child of ours still answers kill(0); reap it so it reads as dead.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def log_tail(log: Path, lines: int = 40) -> str:
    """The last `lines` lines of a log file, for error messages."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def wait_ready(proc: Proc, probe: Callable[[], bool], timeout: float, interval: float = 0.2) -> None:
    """Poll `probe` until it returns True; raise StartupError with the log tail if the process
    exits first or the deadline passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(proc.pid):
            raise StartupError(f"{proc.name} exited during start-up; last log lines:\n{log_tail(proc.log)}")
        try:
            if probe():
                return
        except Exception:
            pass  # any probe failure just means "not yet"
        time.sleep(interval)
    raise StartupError(f"{proc.name} not ready after {timeout:.0f}s; last log lines:\n{log_tail(proc.log)}")


def stop(pid: int, grace: float = 10.0) -> None:
    """Stop the process group led by `pid`: SIGTERM, then SIGKILL after `grace` seconds."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.05)


def port_open(port: int) -> bool:
    """True when something accepts TCP connections on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0
