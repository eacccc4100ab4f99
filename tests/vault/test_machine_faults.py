"""What the machine refuses (a full disk, a read-only file) is said in one line, and the vault
recovers by itself once it no longer refuses."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain._errors import boundary, machine_fault
from brain._vault.files import atomic_write
from brain.testing import new_vault


def _said(exc: BaseException) -> tuple[list[str], int]:
    lines: list[str] = []
    with pytest.raises(SystemExit) as ended, boundary(lines.append):
        raise exc
    return lines, int(str(ended.value.code))


def test_a_full_disk_is_one_line_and_exit_2() -> None:
    with pytest.raises(OSError) as full, open("/dev/full", "wb") as sink:  # a real ENOSPC
        sink.write(b"x")
        sink.flush()
    lines, code = _said(full.value)
    assert code == 2
    assert len(lines) == 1
    assert lines[0].startswith("the disk is full")


def test_a_full_catalog_is_one_line(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "catalog.sqlite")
    db.execute("CREATE TABLE t (x TEXT)")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(sqlite3.OperationalError) as full:
        db.executemany("INSERT INTO t VALUES (?)", [("y" * 4000,)] * 50)
    lines, code = _said(full.value)
    assert (code, lines) == (2, [lines[0]])
    assert lines[0].startswith("the disk is full: no room for brain's caches")


def test_a_file_in_the_way_is_named(tmp_path: Path) -> None:
    target = tmp_path / "Note.md"
    target.mkdir()  # a note file replaced by a folder
    with pytest.raises(OSError) as refused:
        atomic_write(target, "text")
    lines, code = _said(refused.value)
    assert code == 2
    assert lines == [f"Is a directory: {target}"]
    assert [p.name for p in tmp_path.iterdir()] == ["Note.md"]  # no temp file left


def test_a_model_is_not_told_the_file() -> None:
    refused = PermissionError(errno.EACCES, "Permission denied", "/v/Private/Secret plan.md")
    said = machine_fault(refused, named=False)
    assert said is not None
    assert "Secret" not in str(said)


def test_a_bug_keeps_its_traceback() -> None:
    with pytest.raises(KeyError), boundary(print):
        raise KeyError("bug")
    with pytest.raises(BrokenPipeError), boundary(print):  # the entry point ends it quietly
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


# A real full disk: a small tmpfs (root only, as `mount` needs).
@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "small"
    disk.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)])
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def _brain(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BRAIN_DAEMON": "off", "BRAIN_VAULT": str(vault)}
    command = [sys.executable, "-m", "brain", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, check=False)


def _fill(disk: Path, leave: int) -> Path:
    filler = disk / "filler"
    filler.unlink(missing_ok=True)
    os.sync()
    free = shutil.disk_usage(disk).free
    with filler.open("wb") as out:
        os.posix_fallocate(out.fileno(), 0, max(free - leave, 1))
    return filler


def _export(folder: Path) -> Path:
    folder.mkdir()
    chats = [
        {
            "uuid": f"chat-{n}",
            "name": f"Boats {n}",
            "created_at": "2026-01-01T10:00:00+00:00",
            "updated_at": "2026-01-01T10:05:00+00:00",
            "chat_messages": [
                {
                    "uuid": f"chat-{n}-{who}",
                    "sender": who,
                    "text": f"harbour {n} " * 60,
                    "content": [],
                    "created_at": "2026-01-01T10:00:01+00:00",
                }
                for who in ("human", "assistant")
            ],
        }
        for n in range(60)
    ]
    (folder / "conversations.json").write_text(json.dumps(chats))
    (folder / "users.json").write_text("[]")
    return folder


def test_an_import_on_a_full_disk_says_so_and_recovers(small_disk: Path, tmp_path: Path) -> None:
    export = _export(tmp_path / "export")
    failed = 0
    for leave in (40_000, 150_000, 600_000):
        vault = new_vault(small_disk / f"v{leave}")
        assert _brain(vault, "remember", "a first note").returncode == 0
        filler = _fill(small_disk, leave)
        done = _brain(vault, "import", "claude", str(export))
        filler.unlink()
        if done.returncode != 0:
            failed += 1
            assert done.returncode == 2
            assert "Traceback" not in done.stderr
            said = done.stderr.split()
            assert said[:5] == ["error:", "the", "disk", "is", "full:"], done.stderr
            assert len(done.stderr.strip().splitlines()) == 1
        again = _brain(vault, "import", "claude", str(export))  # space freed: it completes
        assert again.returncode == 0, again.stderr
        assert len(list((vault / "main/Memory/Recalls/Claude").glob("*.md"))) == 60
        assert _brain(vault, "doctor").returncode == 0
        assert not list(vault.rglob("*.tmp"))
        shutil.rmtree(vault)
    assert failed
