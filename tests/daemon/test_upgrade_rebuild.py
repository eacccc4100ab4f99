"""The first command after an upgrade that changed the catalog's schema: the daemon it starts
rebuilds the caches before it listens, and says so in its log and to the command waiting."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from brain._daemon import OPENING, log_path, opening_said
from brain._daemon.client import DaemonUnavailable, _started
from tests.daemon.conftest import brain, settle, stop_daemon


@pytest.fixture
def older(vault: Path) -> Path:
    """The test vault with a note, its catalog as a brain of schema 2 left it."""
    kept = brain(vault, "remember", "The ferry leaves at nine", BRAIN_DAEMON="off")
    assert kept.returncode == 0, kept.stderr
    db = sqlite3.connect(vault / ".brain" / "catalog.sqlite")
    db.execute("ALTER TABLE objects DROP COLUMN updated")
    db.execute("UPDATE info SET value = '2' WHERE key = 'schema'")
    db.commit()
    db.close()
    return vault


def test_a_daemon_that_rebuilds_an_older_catalog_before_it_listens_logs_it(older: Path) -> None:
    settle(older, "  autostart: true\n")
    try:
        listed = brain(older, "list")
        assert listed.returncode == 0, listed.stderr
        assert "The ferry leaves at nine" in listed.stdout
    finally:
        stop_daemon(older)
    lines = log_path(older).read_text().splitlines()
    said = [line.partition(OPENING)[2] for line in lines if OPENING in line]
    assert said[0].startswith("indexing ") and said[0].endswith(" files")
    assert said[-1] == "indexing done"


def test_a_waiting_command_is_told_the_job_a_starting_daemon_began_after_it_was_started(
    vault: Path,
) -> None:
    log = log_path(vault)
    log.parent.mkdir(exist_ok=True)
    log.write_text(f"2026-12-07T10:00:00Z {OPENING}indexing 12 files\n")  # an older start's
    since = log.stat().st_size
    assert opening_said(vault, since) is None
    with log.open("a") as out:
        out.write(f"2026-12-08T00:29:12Z {OPENING}indexing 10,006 files\n")
    assert opening_said(vault, since) == "indexing 10,006 files"
    with log.open("a") as out:
        out.write(f"2026-12-08T00:29:33Z {OPENING}indexing done\n")
    assert opening_said(vault, since) is None


def test_a_command_waits_past_the_start_wait_for_a_daemon_that_says_it_is_rebuilding(
    vault: Path,
) -> None:
    """Not served in this process meanwhile: it would only wait for the vault's lock, and
    give up after a minute when a large vault's rebuild takes longer."""
    log = log_path(vault)
    log.parent.mkdir(exist_ok=True)
    log.write_text(f"2026-12-08T00:29:12Z {OPENING}indexing 10,006 files\n")
    # A process that says it indexes and never listens, then ends: the command waits for it
    # (not for the 0 s start wait), and learns only from its end that it did not start.
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        with contextlib.ExitStack() as told, pytest.raises(DaemonUnavailable) as ended:
            _started(vault, busy, 0.0, told, None, 0)
    finally:
        busy.kill()
        busy.wait()
    assert "could not start (exit code 0)" in str(ended.value)
