"""`brain watch`: live, debounced sync of connected folders (rename saves included) and of hand
edits to vault notes, run for a bounded time in a thread that owns its own Brain."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._sources.documents import documents_of
from brain._sources.watching import Watcher
from tests.ingest.test_documents import attach

WAIT = 30.0  # an upper bound so a broken watcher fails instead of hanging; not a timing claim


def eventually(check: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.fixture
def running(vault: Path, clock: FixedClock) -> Iterator[list[object]]:
    """Start a watcher thread (after the test attaches folders) and stop it at the end."""
    stop = threading.Event()
    events: list[object] = []
    ready: list[threading.Event] = []
    threads: list[threading.Thread] = []

    def work() -> None:
        brain = open_vault(vault, clock=clock)  # SQLite connections belong to one thread
        watcher = Watcher(
            brain._context, delay=0.2, on_sync=events.extend, on_catch_up=events.append
        )
        ready.append(watcher.ready)
        try:
            watcher.run(stop)
        finally:
            brain.close()

    def start() -> None:
        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        threads.append(thread)
        assert eventually(lambda: bool(ready)) and ready[0].wait(WAIT)  # first sync done

    events.append(start)
    yield events
    stop.set()
    for thread in threads:
        thread.join(WAIT)


def _start(running: list[object]) -> None:
    start = running.pop(0)
    assert callable(start)
    start()


def test_watch_follows_edits_renames_and_deletions(
    brain: Brain, tmp_path: Path, running: list[object]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plan.md").write_text("# Plan\n\nPlant the cherry tree in autumn.\n")
    attach(brain, folder)
    _start(running)
    assert eventually(lambda: "plan.md" in documents_of(brain._context, "notes"))

    (folder / "new.md").write_text("# New\n\nThe greenhouse needs a vent.\n")
    assert eventually(lambda: "new.md" in documents_of(brain._context, "notes"))

    # An editor's save: write a temp file, then rename it over the real name.
    tmp = folder / ".plan.md.swp"
    tmp.write_text("# Plan\n\nPlant the walnut tree in spring.\n")
    os.replace(tmp, folder / "plan.md")

    def renamed() -> bool:
        row = documents_of(brain._context, "notes").get("plan.md")
        return row is not None and "walnut" in brain._context.get(row.id).body

    assert eventually(renamed)
    assert eventually(lambda: any("walnut" in h.snippet for h in brain.recall("walnut spring")))
    assert eventually(lambda: not [h for h in brain.recall("cherry autumn") if h.kind == "chunk"])

    (folder / "new.md").unlink()
    assert eventually(lambda: "new.md" not in documents_of(brain._context, "notes"))


def test_watch_picks_up_hand_edits_to_vault_notes(
    brain: Brain, running: list[object], vault: Path
) -> None:
    note = brain.remember("The boiler was serviced in May", title="Boiler")
    _start(running)
    path = vault / note.path
    path.write_text(path.read_text().replace("in May", "in June by Ana"))
    seen = running

    def caught() -> bool:
        return any(getattr(e, "changed", None) == (note.path,) for e in seen)

    assert eventually(caught)
    # The watcher's catch-up updated the shared caches: a fresh reader sees it at once.
    assert brain._context.caches.catalog.file(note.path) is not None
    assert eventually(lambda: any("June by Ana" in h.snippet for h in brain.recall("June Ana")))


def test_watch_shows_a_skipped_file_once_not_at_every_sync(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from brain._cli.ingestion import render_syncs
    from brain._sources.documents import SyncReport

    photos = [(f"photo{n}.jpg", "not text (.jpg)") for n in range(3)]
    told: dict[tuple[str, str], str] = {}
    render_syncs([SyncReport("notes", added=["a.md"], skipped=list(photos))], told)
    first = capsys.readouterr().out
    assert first.count("skipped photo") == 3
    render_syncs([SyncReport("notes", updated=["a.md"], skipped=list(photos))], told)
    second = capsys.readouterr().out
    assert "notes: 0 added, 1 updated" in second and "skipped photo" not in second
    render_syncs([SyncReport("notes", unchanged=1, skipped=list(photos))], told)  # nothing new
    assert capsys.readouterr().out == ""
    changed = [("photo0.jpg", "cannot be read (Permission denied)"), *photos[1:]]
    render_syncs([SyncReport("notes", added=["b.md"], skipped=changed)], told)
    assert capsys.readouterr().out.count("skipped photo") == 1  # a new reason is shown
    render_syncs([SyncReport("other", added=["c.md"], skipped=list(photos))], told)
    assert capsys.readouterr().out.count("skipped photo") == 3  # another folder's own


def test_reads_look_for_themselves_once_the_watcher_fell_behind(
    vault: Path, clock: FixedClock
) -> None:
    """A live watcher is trusted to keep the caches in step. When its catch-up failed (a full
    disk: docs/lab/probe-harsh.md), a read trusted it all the same and answered "nothing
    relevant" of files it had never indexed; now reads walk until a catch-up succeeds."""
    brain = open_vault(vault, clock=clock)
    try:
        brain.running().watched(True)  # as the daemon's watcher marks the caches
        note = vault / "main/Knowledge/Inbox/Harbour.md"
        note.write_text("The harbour lights are green tonight.\n")
        assert brain.recall("harbour lights") == []  # trusted: its catch-up would bring it
        brain._context.by_hand.fell_behind()  # what the watcher does when a catch-up fails
        assert [h.title for h in brain.recall("harbour lights")][:1] == ["Harbour"]
    finally:
        brain.running().watched(False)
        brain.close()


def test_a_watched_sync_is_committed_not_left_as_a_hand_change(
    gbrain: Brain, tmp_path: Path, running: list[object]
) -> None:
    """A document the watcher (the daemon's, `brain watch`) brings in is brain's change: it is
    committed like `brain sync`'s, never left in git status as the person's."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plan.md").write_text("# Plan\n\nPlant the cherry tree in autumn.\n")
    attach(gbrain, folder)
    for args in (["add", "brain.yaml"], ["commit", "-qm", "connect notes"]):  # as connect does
        subprocess.run(["git", "-C", str(gbrain.root), *args], check=True)
    _start(running)
    (folder / "kayak.md").write_text("# Kayak\n\nThe kayak trip is on Saturday.\n")
    assert eventually(lambda: "kayak.md" in documents_of(gbrain._context, "notes"))

    def status() -> str:
        done = subprocess.run(
            ["git", "-C", str(gbrain.root), "status", "--porcelain"],
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    assert eventually(lambda: status() == ""), status()
    subjects = subprocess.run(
        ["git", "-C", str(gbrain.root), "log", "--format=%s"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "brain: sync notes" in subjects
