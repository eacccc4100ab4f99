"""`brain connect` asks the person on the controlling terminal: through a real pty, and never
without one (a plain subprocess with no terminal is refused, whatever is on its stdin)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import yaml

from brain.brain import open_vault
from brain.sources.connectors import State, declared
from tests.conftest import tree_digest

ROOT = Path(__file__).resolve().parents[1]


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


def _connect_in_pty(vault: Path, folder: Path, answer: str) -> tuple[int, str]:
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
    os.write(fd, answer.encode() + b"\n")
    _read_until(fd, b"\0never", seen)  # to the end of output
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), seen.decode("utf-8", "replace")


def test_connect_confirmed_at_a_real_terminal(vault: Path, tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    code, shown = _connect_in_pty(vault, folder, "notes")
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
