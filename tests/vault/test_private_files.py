"""Privacy on disk and leftovers: cache modes under umask 022, temp files of killed writes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._git.repo import REGENERATE_FLAG, flag_regeneration
from brain._vault.files import owner_only

ROOT = Path(__file__).resolve().parents[2]


def run_brain(vault: Path, *args: str, daemon: bool = False) -> subprocess.CompletedProcess[str]:
    """A real `brain` process started with the usual umask 022."""
    env = {k: v for k, v in os.environ.items() if k != "BRAIN_DAEMON"}
    if not daemon:
        env["BRAIN_DAEMON"] = "off"
    return subprocess.run(
        [sys.executable, "-m", "brain", *args, "--vault", str(vault)],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=ROOT,
        timeout=300,
        preexec_fn=lambda: os.umask(0o022),
    )


def loose(folder: Path) -> list[str]:
    """Everything under `folder` (itself included) that anyone but its owner could read."""
    found = []
    for path in [folder, *sorted(folder.rglob("*"))]:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode):
            continue
        want = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) & ~want:
            found.append(f"{path.relative_to(folder)} {stat.S_IMODE(st.st_mode):o}")
    return found


def test_every_cache_file_is_the_owners_alone_under_umask_022(vault: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    turns = [
        {"role": "user", "content": "where is the spare key"},
        {"role": "assistant", "content": "under the blue flowerpot"},
    ]
    chat.write_text(
        json.dumps(
            {
                "recall_id": "k1",
                "created_at": "2026-01-01T10:00:00Z",
                "platform": "claude.ai",
                "transcript": turns,
            }
        )
    )
    steps = [
        ("remember", "The bank pin is not written anywhere", "--title", "Bank"),
        ("recall", "bank pin"),  # hybrid: vectors and the embedding cache too
        ("ingest", str(chat)),
        ("reindex",),
        ("sleep",),
        ("doctor",),
    ]
    for step in steps:
        done = run_brain(vault, *step)
        assert done.returncode == 0, (step, done.stderr)
    # The daemon's own files: pid, socket, log.
    (vault / "brain.yaml").write_text(
        (vault / "brain.yaml").read_text().replace("autostart: false", "autostart: true")
    )
    try:
        assert run_brain(vault, "daemon", "start", daemon=True).returncode == 0
        made = run_brain(vault, "remember", "Through the daemon", daemon=True)
        assert made.returncode == 0, made.stderr
        assert loose(vault / ".brain") == []
    finally:
        run_brain(vault, "daemon", "stop", daemon=True)
    assert {p.name for p in (vault / ".brain").iterdir()} >= {
        "catalog.sqlite",
        "fulltext",
        "vectors",
        "embeddings",
        "writer.lock",
        "daemon.log",
    }
    assert loose(vault / ".brain") == []


def test_an_existing_vault_is_tightened_on_open(vault: Path, clock: FixedClock) -> None:
    open_vault(vault, clock=clock).close()
    for path in [vault / ".brain", *(vault / ".brain").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # what umask 022 used to leave
    assert loose(vault / ".brain")
    open_vault(vault, clock=clock).close()
    assert loose(vault / ".brain") == []


def test_owner_only_restores_the_umask_after_nested_use() -> None:
    old = os.umask(0o022)
    try:
        with owner_only():
            with owner_only():
                assert os.umask(0o077) & 0o077 == 0o077
            assert os.umask(0o077) & 0o077 == 0o077
        assert os.umask(0o022) == 0o022
    finally:
        os.umask(old)


# leftovers ------------------------------------------------------------------------------
def _leftover(brain: Brain, name: str, age: timedelta) -> Path:
    """A temp file as a killed `atomic_write` leaves it, last changed `age` before the clock."""
    path = brain._context.store.path("main/Inbox") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\nid: x\n---\nhalf a note\n")
    when = (brain.clock.now() - age).timestamp()
    os.utime(path, (when, when))
    return path


def test_doctor_reports_old_temp_files_and_sleep_removes_only_those(brain: Brain) -> None:
    old = _leftover(brain, ".Groceries.md.k2j4_9ab.tmp", timedelta(hours=3))
    in_flight = _leftover(brain, ".Letter.md.a8b7c6d5.tmp", timedelta(seconds=5))
    mine = _leftover(brain, ".notes.tmp", timedelta(days=3))  # not a name brain makes
    report = brain.doctor()
    assert report.leftovers == ("main/Inbox/.Groceries.md.k2j4_9ab.tmp",) and not report.ok
    dry = brain.sleep(dry_run=True)
    assert dry.leftovers == ["main/Inbox/.Groceries.md.k2j4_9ab.tmp"] and old.exists()
    done = brain.sleep()
    assert done.leftovers == ["main/Inbox/.Groceries.md.k2j4_9ab.tmp"]
    assert not old.exists() and in_flight.exists() and mine.exists()
    assert brain.doctor().leftovers == ()


def test_doctor_lists_leftovers_in_its_text_and_json(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock)
    _leftover(brain, ".Old.md.zzzzzzzz.tmp", timedelta(days=2))
    brain.close()
    # The real clock is later than the test clock's: the file is older still by it.
    text = run_brain(vault, "doctor")
    assert text.returncode == 1 and ".Old.md.zzzzzzzz.tmp" in text.stdout
    data = json.loads(run_brain(vault, "doctor", "--json").stdout)
    assert data["leftovers"] == ["main/Inbox/.Old.md.zzzzzzzz.tmp"]


# a daemon whose home is deleted ------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"  # a zombie has exited; only its parent has not looked yet


def _until_gone(pid: int) -> None:
    deadline = time.monotonic() + 60  # a generous deadline, not a timing assertion
    while _alive(pid):
        assert time.monotonic() < deadline, f"daemon {pid} is still running"
        time.sleep(0.1)


@pytest.mark.parametrize("deleted", [".brain", "the vault"])
def test_a_daemon_whose_home_is_deleted_exits(vault: Path, deleted: str) -> None:
    from brain._daemon.client import running_pid

    started = run_brain(vault, "daemon", "start", daemon=True)
    assert started.returncode == 0, started.stderr
    pid = running_pid(vault)
    assert pid is not None and _alive(pid)
    if deleted == ".brain":
        _remove(vault / ".brain")
        _until_gone(pid)
        again = run_brain(vault, "daemon", "start", daemon=True)  # one writer again, not two
        try:
            assert again.returncode == 0, again.stderr
            assert running_pid(vault) not in (None, pid)
        finally:
            run_brain(vault, "daemon", "stop", daemon=True)
    else:
        _remove(vault)
        _until_gone(pid)


def _remove(folder: Path) -> None:
    """The daemon may still be writing its caches (its first walk, the watcher's mark) as
    they are deleted, so an rmtree can meet a file born meanwhile: again, until gone."""
    deadline = time.monotonic() + 60
    while folder.exists():
        assert time.monotonic() < deadline, f"{folder} could not be removed"
        shutil.rmtree(folder, ignore_errors=True)


def test_the_merge_drivers_flag_is_born_private(vault: Path) -> None:
    (vault / ".brain").mkdir(exist_ok=True)
    old = os.umask(0o022)
    try:
        flag_regeneration(vault)  # what git's merge driver calls, at the top of the work tree
    finally:
        os.umask(old)
    assert stat.S_IMODE((vault / REGENERATE_FLAG).stat().st_mode) == 0o600
