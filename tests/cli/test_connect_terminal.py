"""`brain connect` asks the person on the controlling terminal: through a real pty, and never
without one (a plain subprocess with no terminal is refused, whatever is on its stdin)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from brain._brain import open_vault
from brain._sources.connectors import State, declared, identity
from brain.testing import tree_digest

ROOT = Path(__file__).resolve().parents[2]


def _env(vault: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "BRAIN_VAULT": str(vault), "NO_COLOR": "1"}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    (folder / "deep").mkdir(parents=True)
    (folder / "plan.md").write_text("# Plan\n\nThe orchard gets pear trees in March.\n")
    (folder / "deep" / "todo.txt").write_text("Order the pear saplings.\n")
    (folder / "photo.jpg").write_bytes(b"\xff\xd8\xff" + bytes(100))
    return folder


def _read_until(fd: int, marker: bytes, seen: bytearray, limit: float = 60.0) -> None:
    """Read the pty until marker appears (or the child is done); bounded so a bug cannot hang."""
    deadline = time.monotonic() + limit
    while marker not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if not ready:
            continue
        try:
            piece = os.read(fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            return
        if not piece:
            return
        seen += piece


def _code(shown: bytearray) -> str:
    """The code the question shows on the terminal, read as the person reads it."""
    found = re.search(rb"Type the code ([A-Z0-9]+) to let brain read it", bytes(shown))
    assert found, shown.decode("utf-8", "replace")
    return found.group(1).decode()


def _connect_in_pty(vault: Path, folder: Path, answer: str | None) -> tuple[int, str]:
    """`brain connect` in a pty; answer None types the code shown (a person reading it)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: a session leader whose controlling terminal is the pty
        try:
            os.chdir(ROOT)
            args = [sys.executable, "-m", "brain", "connect", str(folder)]
            os.execve(sys.executable, args, _env(vault))
        finally:
            os._exit(127)
    seen = bytearray()
    _read_until(fd, b"to let brain read it", seen)
    typed = _code(seen).lower() if answer is None else answer
    os.write(fd, typed.encode() + b"\n")
    _read_until(fd, b"\0never", seen)  # to the end of output
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), seen.decode("utf-8", "replace")


def test_connect_confirmed_at_a_real_terminal(vault: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    code, shown = _connect_in_pty(vault, folder, None)
    assert code == 0, shown
    # The summary: folder, count by type, size, and what is skipped.
    assert str(folder) in shown and "2 files (1 .md, 1 .txt)" in shown
    assert "bytes" in shown and "1 × not a supported type" in shown
    assert "notes: 2 added" in shown
    assert declared(vault)["notes"].path == str(folder)
    assert State.load(vault).confirmation("notes") is not None
    brain = open_vault(vault)
    try:
        hits = brain.recall("pear trees orchard")
        assert hits and hits[0].title == "Plan" and hits[0].kind == "chunk"
    finally:
        brain.close()


def test_a_wrong_answer_reads_nothing(vault: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    before = tree_digest(vault)
    code, shown = _connect_in_pty(vault, folder, "yes")
    assert code == 2 and "not confirmed" in shown
    assert tree_digest(vault) == before
    assert State.load(vault).confirmation("notes") is None


def test_a_blind_answer_through_a_pseudo_terminal_is_refused(vault: Path, tmp_path: Path) -> None:
    """The issue's script: the folder's name typed into a pty by a program that never reads it.
    The question's code is random and shown only on the terminal, so the guess is wrong."""
    folder = _folder(tmp_path)
    before = tree_digest(vault)
    code, shown = _connect_in_pty(vault, folder, "notes")
    assert code == 2 and "not confirmed" in shown
    assert tree_digest(vault) == before
    assert State.load(vault).confirmation("notes") is None


@pytest.mark.skipif(
    shutil.which("script") is None or shutil.which("setsid") is None,
    reason="needs util-linux script and setsid",
)
def test_the_scripted_consent_of_the_issue_is_refused(vault: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    before = tree_digest(vault)
    brain_cmd = shlex.join([sys.executable, "-m", "brain", "connect", str(folder)])
    blind = f"(sleep 4; echo notes) | setsid script -qec {shlex.quote(brain_cmd)} /dev/null"
    result = subprocess.run(
        ["sh", "-c", blind],
        capture_output=True,
        text=True,
        env=_env(vault),
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0, result.stdout
    assert "not confirmed" in result.stdout + result.stderr
    assert tree_digest(vault) == before
    assert State.load(vault).confirmation("notes") is None


def test_a_hand_written_confirmation_does_not_count(vault: Path, tmp_path: Path) -> None:
    """connectors.json written by hand with the folder's real path, device and inode (and a
    made-up seal) leaves the connector pending: only `brain connect` seals one here."""
    folder = _folder(tmp_path)
    settings = vault / "brain.yaml"
    text = settings.read_text().replace("connectors: {}", f"connectors:\n  notes: {folder}\n")
    settings.write_text(text)
    ident = identity(folder)
    assert ident is not None
    forged = {**ident.to_json(), "at": "2026-12-02T10:31:00Z", "mac": "0" * 64}
    for entry in ({k: v for k, v in forged.items() if k != "mac"}, forged):
        state = {
            "version": 1,
            "connectors": {"notes": {"confirmed": entry, "files": {}, "excluded": []}},
        }
        (vault / ".brain").mkdir(exist_ok=True)
        (vault / ".brain" / "connectors.json").write_text(json.dumps(state))
        brain = open_vault(vault)
        try:
            [status] = brain.connectors()
            assert status.state == "pending" and "brain connect" in status.reason
            [report] = brain.sync()
            assert report.state == "pending" and not report.added
        finally:
            brain.close()


def test_no_controlling_terminal_is_refused_even_with_the_answer_on_stdin(
    vault: Path, tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    before = tree_digest(vault)
    result = subprocess.run(
        [sys.executable, "-m", "brain", "connect", str(folder)],
        input="notes\n",  # stdin says the right thing: it must not count
        capture_output=True,
        text=True,
        env=_env(vault),
        cwd=ROOT,
        start_new_session=True,  # a new session has no controlling terminal
        check=False,
    )
    assert result.returncode == 2
    assert "confirmed by you at a terminal" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert tree_digest(vault) == before
    assert not (vault / ".brain" / "connectors.json").exists()
    text = (vault / "brain.yaml").read_text()
    assert (yaml.safe_load(text)["connectors"] or {}) == {}


def test_no_terminal_refusal_with_stdin_closed(vault: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "brain", "connect", str(folder)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**_env(vault), "BRAIN_YES": "1", "CI": "1"},  # no variable overrides it
        cwd=ROOT,
        start_new_session=True,
        check=False,
    )
    assert result.returncode == 2 and "terminal" in result.stderr
