"""The daemon area's helpers: run `brain` as a client that may start the daemon, and wait."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brain._daemon.client import DaemonClient, running_pid, start
from brain._errors import BrainError

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0  # generous deadline for a process to appear or go (not a timing assertion)


def env(**extra: str) -> dict[str, str]:
    """The environment of a client that may use and start the daemon."""
    found = {k: v for k, v in os.environ.items() if k != "BRAIN_DAEMON"}
    return {**found, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **extra}


def brain(vault: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "brain", *args, "--vault", str(vault)],
        capture_output=True,
        text=True,
        env=env(**extra),
        cwd=ROOT,
        timeout=300,
    )


def until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def settle(vault: Path, text: str) -> None:
    """Replace the `daemon:` section of brain.yaml (the test vault's says `autostart: false`)."""
    settings = vault / "brain.yaml"
    kept = settings.read_text().split("daemon:\n", 1)[0]
    settings.write_text(kept + "daemon:\n" + text)


@pytest.fixture
def autostart(vault: Path) -> None:
    """Clients may start the daemon, as they do by default (a module asks with `pytestmark`)."""
    settle(vault, "  autostart: true\n")


def stop_daemon(vault: Path) -> None:
    pid = running_pid(vault)
    if pid is None:
        return
    try:
        client = DaemonClient.connect(vault)
        client.call("stop")
        client.close()
    except BrainError:
        os.kill(pid, signal.SIGKILL)
    until(lambda: running_pid(vault) is None, "the daemon to stop")


@pytest.fixture
def daemon(vault: Path) -> Iterator[Path]:
    """The test vault with its daemon started; stopped afterwards whatever happened."""
    start(vault).close()
    yield vault
    stop_daemon(vault)
