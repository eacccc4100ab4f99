"""A daemon stopped by SIGSTOP (Ctrl-Z, a debugger) holds no command hostage."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from brain._daemon.client import DaemonClient, DaemonLost, running_pid
from brain._indexes import catchup
from brain._indexes.catalog import Catalog
from brain._processes import stopped
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


def _stop(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    until(lambda: stopped(pid), "the daemon to stop")


def test_status_says_a_stopped_daemon_is_there(daemon: Path) -> None:
    pid = running_pid(daemon)
    assert pid is not None
    _stop(pid)
    try:
        said = _run(daemon, "daemon", "status")
        as_json = _run(daemon, "daemon", "status", "--json")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert said.returncode == 1
    assert f"(pid {pid})" in said.stdout and "is stopped" in said.stdout
    assert f"kill -CONT {pid}" in said.stdout
    assert json.loads(as_json.stdout) == {
        "running": True,
        "stopped": True,
        "pid": pid,
        "vault": str(daemon),
    }


def test_stop_ends_a_stopped_daemon(daemon: Path) -> None:
    pid = running_pid(daemon)
    assert pid is not None
    _stop(pid)
    try:
        stopping = _run(daemon, "daemon", "stop")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)  # a hung `stop` leaves no stopped daemon behind
    assert stopping.returncode == 0, stopping.stderr
    assert running_pid(daemon) is None


def test_a_hand_edit_made_while_the_daemon_is_stopped_is_seen(daemon: Path) -> None:
    assert brain(daemon, "remember", "the lighthouse keeper's log").returncode == 0
    pid = running_pid(daemon)
    assert pid is not None
    catalog = Catalog(daemon / ".brain" / "catalog.sqlite")
    try:  # its watcher follows the files: other processes trust it while it lives
        until(lambda: catchup.watched(catalog, daemon), "the daemon's watcher to follow the vault")
    finally:
        catalog.close()
    note = next((daemon / "main").rglob("the lighthouse keeper's log.md"))
    _stop(pid)
    try:
        with note.open("a") as text:
            text.write("\nA storm petrel landed on the rail.\n")
        found = _run(daemon, "recall", "petrel")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert found.returncode == 0, found.stderr
    assert "the lighthouse keeper's log" in found.stdout
