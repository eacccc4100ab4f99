"""A daemon stopped by SIGSTOP (Ctrl-Z, a debugger) holds no command hostage."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from brain._daemon.client import DaemonClient, DaemonLost, running_pid
from brain._daemon.wire import stopped
from tests.daemon.conftest import ROOT, brain, env, until


def _run(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The timeout only keeps a hung client from hanging the suite; it asserts no timing.
    command = [sys.executable, "-m", "brain", *args, "--vault", str(vault)]
    return subprocess.run(command, capture_output=True, text=True, env=env(), cwd=ROOT, timeout=120)


def test_commands_work_in_process_beside_a_stopped_daemon(daemon: Path) -> None:
    assert brain(daemon, "remember", "kayaks before the lid closed").returncode == 0
    pid = running_pid(daemon)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    until(lambda: stopped(pid), "the daemon to stop")
    try:
        listed = _run(daemon, "list")
        kept = _run(daemon, "remember", "kayaks while it is stopped")
        found = _run(daemon, "recall", "kayaks")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert listed.returncode == 0, listed.stderr
    assert "kayaks before the lid closed" in listed.stdout
    assert kept.returncode == 0, kept.stderr
    assert "kayaks while it is stopped" in found.stdout
    assert running_pid(daemon) == pid  # the same daemon, continued


def test_a_call_sent_to_a_daemon_then_stopped_says_so(daemon: Path) -> None:
    client = DaemonClient.connect(daemon)
    client.sock.settimeout(120)  # without the check, a bound on the wait, not an assertion
    pid = running_pid(daemon)
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    until(lambda: stopped(pid), "the daemon to stop")
    try:
        with pytest.raises(DaemonLost) as lost:
            client.call("ping")
    finally:
        os.kill(pid, signal.SIGCONT)
        client.close()
    assert f"kill -CONT {pid}" in str(lost.value)
