"""`brain serve` started by a person at a terminal (a real pseudo-terminal): one line on stderr
says what it is and how to connect a host, and Ctrl-C stops it with exit code 0."""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0  # generous deadline for the process (not a timing assertion)


def _read(fd: int, seconds: float) -> bytes:
    """What the terminal shows within `seconds` (less if the process ends)."""
    got = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the process ended: its side of the terminal is gone
                break
            if not chunk:
                break
            got += chunk
    return got


def _ended(pid: int) -> int | None:
    """The exit code of the child, or None (and it is killed) if it did not end in time."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


def test_serve_at_a_terminal_says_how_to_connect_and_stops_on_ctrl_c(vault: Path) -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: brain serve with the terminal as stdin, stdout and stderr
        os.chdir(ROOT)
        os.environ["BRAIN_DAEMON"] = "off"
        os.execv(sys.executable, [sys.executable, "-m", "brain", "serve", "--vault", str(vault)])
    try:
        shown = b""
        deadline = time.monotonic() + WAIT
        while b"Ctrl-C stops" not in shown:
            assert time.monotonic() < deadline, shown
            shown += _read(fd, 0.5)
        line = shown.decode().strip()
        assert "speaks MCP on stdio" in line and "brain mcp-config HOST" in line
        assert len(line.splitlines()) == 1
        os.write(fd, b"\x03")  # Ctrl-C, as the terminal's line discipline sends it
        rest = _read(fd, WAIT)
        status = _ended(pid)
    finally:
        os.close(fd)
    assert status == 0, rest
    assert b"Traceback" not in rest
