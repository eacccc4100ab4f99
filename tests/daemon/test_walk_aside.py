"""A watcher's first catch-up of a big vault: folders first, so calls are served at once, then a
full walk on the watcher's own thread for edits in place, applied where the Brain lives."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from brain import Brain
from brain._errors import BrainError
from brain._indexes import catchup
from brain._sources.watching import Watcher
from brain._vault.store import NoteStore
from tests.daemon.test_watching import WAIT

Job = tuple[Callable[[], None], threading.Event]


@dataclass
class Started:
    """A watcher on its own thread whose jobs the test runs, one at a time, on its own."""

    watcher: Watcher
    jobs: queue.Queue[Job]
    walked_on: list[str] = field(default_factory=list)  # the threads NoteStore.walk ran on

    def run_next(self) -> None:
        job, done = self.jobs.get(timeout=WAIT)
        try:
            job()
        finally:
            done.set()


@pytest.fixture
def walked(brain: Brain) -> Brain:
    """Notes in two folders, walked once (so the folders and the count are recorded)."""
    for n in range(6):
        brain.remember(f"Boiler note {n}", title=f"Boiler {n}", node="Home/Heating")
        brain.remember(f"Garden note {n}", title=f"Garden {n}", node="Projects/Garden")
    brain._context.catch_up(force=True)
    brain._context.walks = 0  # counted from here
    brain._context.catch_up_every = 600.0  # as the daemon with a watcher sets it
    return brain


@contextlib.contextmanager
def watching(brain: Brain, above: int, monkeypatch: pytest.MonkeyPatch) -> Iterator[Started]:
    jobs: queue.Queue[Job] = queue.Queue()
    stop = threading.Event()

    def via(job: Callable[[], None]) -> None:  # as the daemon's submit: wait for the Brain
        done = threading.Event()
        jobs.put((job, done))
        while not done.wait(0.05):
            if stop.is_set():
                return

    watcher = Watcher(brain._context, delay=0.2, via=via, walk_aside_above=above)
    started = Started(watcher, jobs)
    walk = NoteStore.walk

    def noted_walk(self: NoteStore, folders: Any = None) -> Any:
        started.walked_on.append(threading.current_thread().name)
        return walk(self, folders)

    monkeypatch.setattr(NoteStore, "walk", noted_walk)
    thread = threading.Thread(target=watcher.run, args=(stop,), name="watch", daemon=True)
    thread.start()
    yield started
    stop.set()
    thread.join(WAIT)
    while not jobs.empty():  # its last job (watched off) handed over as it stopped
        started.run_next()


def _hash(brain: Brain, rel: str) -> str | None:
    row = brain._context.caches.catalog.file(rel)
    return None if row is None else row.hash


def _found(brain: Brain, query: str) -> list[str]:
    return [h.snippet for h in brain.recall(query, mode="text")]


def test_calls_are_served_before_the_walk_which_then_finds_an_edit_in_place(
    walked: Brain, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    heating, garden = vault / "main/Home/Heating", vault / "main/Projects/Garden"
    edited = sorted(garden.glob("*.md"))[0]
    rel_edited = edited.relative_to(vault).as_posix()
    before = _hash(walked, rel_edited)
    deleted = sorted(heating.glob("*.md"))[0]
    deleted.unlink()
    (heating / "Dropped in.md").write_text("A note about the chimney sweep, dropped in by hand.\n")
    inode = edited.stat().st_ino
    edited.write_text(edited.read_text().replace("Garden note", "Greenhouse note"))
    assert edited.stat().st_ino == inode  # an edit in place: its folder shows nothing

    with watching(walked, 0, monkeypatch) as watch:
        watch.run_next()  # the first job: the folders only
        assert watch.walked_on == []  # no walk on the Brain's thread
        rels = set(walked._context.caches.catalog.files())
        assert "main/Home/Heating/Dropped in.md" in rels
        assert deleted.relative_to(vault).as_posix() not in rels
        assert _hash(walked, rel_edited) == before  # not seen yet
        # A read meanwhile does not walk either: the walk aside brings the edit.
        assert walked._context.catch_up() == catchup.CatchUp() and walked._context.walks == 0
        assert any("chimney sweep" in s for s in _found(walked, "chimney sweep"))
        assert _found(walked, "greenhouse") == []

        watch.run_next()  # the walk's result, applied here once it ran on the watcher's thread
        assert watch.walked_on == ["watch"]
        assert _hash(walked, rel_edited) != before
        assert any("Greenhouse note" in s for s in _found(walked, "greenhouse"))
        assert walked._context.walks == 1 and catchup.watched(
            walked._context.caches.catalog, walked.root
        )
        assert watch.watcher.last_catch_up["how"] == "walk aside"
        assert watch.watcher.last_catch_up["changed"] == 1
        assert watch.watcher.ready.wait(WAIT)


def test_a_file_changed_again_after_the_walk_is_taken_as_it_is_then(
    walked: Brain, vault: Path
) -> None:
    garden = sorted((vault / "main/Projects/Garden").glob("*.md"))
    first, second = garden[0], garden[1]
    first.write_text(first.read_text().replace("Garden note", "Walked note"))
    second.write_text(second.read_text().replace("Garden note", "Doomed note"))
    stamp = walked._context.caches.catalog.info(catchup.WALKED)
    walk = walked._context.walk_aside()
    assert sorted(walk.suspects) == sorted(p.relative_to(vault).as_posix() for p in garden[:2])
    assert (
        walked._context.caches.catalog.info(catchup.WALKED) == stamp
    )  # the walk itself wrote nothing
    first.write_text(first.read_text().replace("Walked note", "Rewritten note"))
    second.unlink()
    found = walked._context.catch_up_walked(walk)
    assert found.removed == (second.relative_to(vault).as_posix(),)
    assert any("Rewritten note" in s for s in _found(walked, "rewritten"))
    assert _found(walked, "walked") == [] and _found(walked, "doomed") == []
    assert walked._context.caches.catalog.info(catchup.WALKED) != stamp


def test_a_small_vault_is_walked_before_any_call(
    walked: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    with watching(walked, catchup.QUICK_ABOVE, monkeypatch) as watch:
        watch.run_next()
        assert watch.walked_on == [threading.current_thread().name]  # on the Brain's thread
        assert watch.watcher.last_catch_up["how"] == "walk"
        assert walked._context.walks == 1 and catchup.watched(
            walked._context.caches.catalog, walked.root
        )


def test_a_vault_whose_folders_were_never_recorded_is_walked_before_any_call(
    walked: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    walked._context.caches.catalog.put_folders([], whole=True)  # as a catalog from before folders
    with watching(walked, 0, monkeypatch) as watch:
        watch.run_next()
        assert watch.walked_on == [threading.current_thread().name]
        assert watch.watcher.last_catch_up["how"] == "walk"


def test_the_walk_aside_finds_what_the_full_comparison_finds(walked: Brain, vault: Path) -> None:
    heating = sorted((vault / "main/Home/Heating").glob("*.md"))
    garden = sorted((vault / "main/Projects/Garden").glob("*.md"))
    heating[0].unlink()
    (vault / "main/Home/Heating/Dropped in.md").write_text("Chimney sweep on Monday.\n")
    garden[0].write_text(garden[0].read_text() + "\nOne more line.\n")
    old = garden[1].relative_to(vault).as_posix()  # a row from before inodes were kept
    walked._context.caches.catalog.db.execute("UPDATE files SET inode = 0 WHERE path = ?", (old,))
    found = catchup.compare(walked._context.store, walked._context.caches.catalog)
    walk = walked._context.walk_aside()
    assert sorted(walk.suspects) == sorted([*found.out_of_step, *found.missing])
    assert len(walk.suspects) == 3 and walk.files == len(found.on_disk)
    assert [rel for _inode, rel, _mtime, _size in walk.unknown] == [old]
    walked._context.catch_up_walked(walk)
    row = walked._context.caches.catalog.file(old)
    assert row is not None and row.inode == garden[1].stat().st_ino
    assert catchup.compare(walked._context.store, walked._context.caches.catalog).out_of_step == []


def test_a_walk_aside_that_fails_is_made_where_the_brain_lives(
    walked: Brain, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = sorted((vault / "main/Projects/Garden").glob("*.md"))[0]
    edited.write_text(edited.read_text().replace("Garden note", "Greenhouse note"))
    errors: list[BrainError] = []

    def broken(*_args: Any) -> catchup.Walk:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(catchup, "walk_against", broken)
    with watching(walked, 0, monkeypatch) as watch:
        watch.watcher.on_error = errors.append
        watch.run_next()  # the folders
        watch.run_next()  # the walk aside failed: the full walk, here
        assert "could not walk the vault aside" in errors[0].message
        assert watch.walked_on == [threading.current_thread().name]
        assert any("Greenhouse note" in s for s in _found(walked, "greenhouse"))
        assert catchup.watched(walked._context.caches.catalog, walked.root)
