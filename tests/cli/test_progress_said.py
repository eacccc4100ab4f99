"""Nothing silent: an index build says how far it is (a bar on a terminal, one stderr line
elsewhere), and a client kept waiting by the daemon's start or work says why."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from brain._brain import open_vault
from brain._cli import _register, app
from brain._cli.progress import BIG, Shown
from brain._daemon import client as daemon_client
from brain._vault.files import WriterLock
from tests.daemon.conftest import autostart, stop_daemon

_register()
__all__ = ["autostart"]  # a fixture from tests/daemon/conftest.py, imported to be used here
pytestmark = pytest.mark.usefixtures("autostart")  # clients may start the daemon here


def many_notes(vault: Path, count: int) -> None:
    folder = vault / "main/Knowledge/Many"
    folder.mkdir(parents=True)
    for n in range(count):
        (folder / f"n{n}.md").write_text(f"---\ntitle: Note {n}\n---\nbody of note {n}\n")


def test_reindex_off_a_terminal_says_one_line_per_job(vault: Path, cli: CliRunner) -> None:
    open_vault(vault).close()  # its caches built while small: the reindex is the one job
    many_notes(vault, BIG + 50)
    res = cli.invoke(app, ["reindex"])
    assert res.exit_code == 0, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 2, res.stderr
    assert lines[0].startswith("brain: indexing ") and "files" in lines[0]
    assert lines[1].startswith("brain: embedding ") and str(vault) in lines[1]
    assert lines[1].endswith(
        "(once; if stopped, what is done is kept; recall --mode text needs none)"
    )
    assert "Reindexed" in res.stdout


def test_the_first_build_of_a_big_vault_is_said_by_any_command(vault: Path, cli: CliRunner) -> None:
    many_notes(vault, BIG + 50)
    res = cli.invoke(app, ["list", "--json"])
    assert res.exit_code == 0, res.output
    assert res.stderr.startswith("brain: indexing ")
    again = cli.invoke(app, ["list", "--json"])  # built: nothing more to say
    assert again.exit_code == 0 and again.stderr == ""


def test_a_small_quick_job_is_not_said(vault: Path, cli: CliRunner) -> None:
    many_notes(vault, 5)
    res = cli.invoke(app, ["reindex"])
    assert res.exit_code == 0 and res.stderr == ""


def test_on_a_terminal_a_bar_runs_and_is_gone_when_done(tmp_path: Path) -> None:
    screen = io.StringIO()
    shown = Shown(tmp_path, Console(file=screen, force_terminal=True, width=100))
    shown("indexing", 1, BIG * 2)
    assert shown.bar is not None and shown.tasks
    shown("indexing", BIG * 2, BIG * 2)
    assert shown.bar is None and not shown.tasks
    assert "Indexing" in screen.getvalue()


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every wait the client says, with no moment of grace (so any wait counts)."""
    said: list[str] = []
    monkeypatch.setattr(daemon_client, "SLOW", 0.0)
    return said


def recorder(said: list[str]) -> daemon_client.Waiting:
    @contextlib.contextmanager
    def waiting(message: str) -> Iterator[None]:
        said.append(message)
        yield

    return waiting


def test_a_daemon_start_and_a_slow_reply_are_said(vault: Path, told: list[str]) -> None:
    try:
        client = daemon_client.start(vault, waiting=recorder(told))
        assert told and told[0].startswith("starting brain's daemon for ")
        client.call("status")
        client.close()
        assert told[-1].startswith("waiting for brain's daemon (pid ")
    finally:
        stop_daemon(vault)


def test_a_wait_for_another_process_writing_is_said(vault: Path) -> None:
    from tests.daemon.conftest import ROOT

    open_vault(vault).close()
    lock = WriterLock(vault / ".brain/writer.lock")
    with lock.hold():  # another brain process, writing for as long as it likes
        proc = subprocess.Popen(
            [sys.executable, "-m", "brain", "remember", "patience", "--vault", str(vault)],
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "BRAIN_DAEMON": "off"},
        )
        assert proc.stderr is not None
        line = proc.stderr.readline()  # said while it waits: this returns before we let go
    out, rest = proc.communicate(timeout=300)
    assert line.startswith("brain: waiting for another brain process writing to ")
    assert proc.returncode == 0 and "patience" not in rest and rest == "", (out, rest)
