"""A daemon and a command that run different code: the daemon of code no longer installed
steps down, and the command starts a fresh one; an older command leaves a current daemon be.

The code is a copy of brain in a folder of the test's own, run as each process's PYTHONPATH,
and "upgraded" by an edit of one of its files: real processes, real files, nothing mocked.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain._daemon.client import DaemonClient, running_pid
from brain._version import fingerprint
from tests.daemon.conftest import ROOT, brain, env, stop_daemon, until

pytestmark = pytest.mark.usefixtures("autostart")


@pytest.fixture
def code(tmp_path: Path, vault: Path) -> Iterator[Path]:
    """A copy of this checkout's brain package (its models linked, not copied)."""
    folder = tmp_path / "code"
    ignored = shutil.ignore_patterns("__pycache__", "_models")
    shutil.copytree(ROOT / "brain", folder / "brain", ignore=ignored)
    (folder / "brain" / "_models").symlink_to(ROOT / "brain" / "_models")
    yield folder
    stop_daemon(vault)


def run(code: Path, vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`brain` run from the copy (cwd too: `-m` puts the working folder first on the path)."""
    command = [sys.executable, "-m", "brain", *args, "--vault", str(vault)]
    found = env(PYTHONPATH=str(code))
    # The timeout only keeps a hung client from hanging the suite; it asserts no timing.
    return subprocess.run(command, capture_output=True, text=True, env=found, cwd=code, timeout=120)


def upgrade(code: Path) -> None:
    """A new release of brain, as far as the files can tell."""
    with (code / "brain" / "_version.py").open("a") as module:
        module.write("# the next release\n")


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def test_a_daemon_of_code_no_longer_installed_steps_down(code: Path, vault: Path) -> None:
    assert run(code, vault, "daemon", "start").returncode == 0
    old = running_pid(vault)
    assert old is not None
    upgrade(code)
    kept = run(code, vault, "remember", "the ferry leaves at nine")
    assert kept.returncode == 0, kept.stderr
    assert "Traceback" not in kept.stderr
    new = running_pid(vault)
    assert new is not None and new != old  # served by a fresh daemon, of the new code
    until(lambda: not alive(old), "the old daemon to exit")
    client = DaemonClient.connect(vault, agree=False)
    try:
        assert client.call("ping")["build"] == fingerprint(code / "brain")
    finally:
        client.close()
    listed = run(code, vault, "list")
    assert "the ferry leaves at nine" in listed.stdout
    assert "code changed since this daemon started" in (vault / ".brain/daemon.log").read_text()


def test_a_command_of_other_code_leaves_the_installed_daemon_be(code: Path, vault: Path) -> None:
    upgrade(code)  # the daemon runs the copy, as installed now; the command this checkout
    assert run(code, vault, "daemon", "start").returncode == 0
    pid = running_pid(vault)
    kept = brain(vault, "remember", "the ferry leaves at ten")
    assert kept.returncode == 0, kept.stderr
    assert running_pid(vault) == pid  # no daemon stepped down for an older command
    assert "the ferry leaves at ten" in run(code, vault, "list").stdout
