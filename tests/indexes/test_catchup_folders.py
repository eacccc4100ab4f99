"""Catch-up in proportion to the change: folders changed since the last walk, not every file."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes import catchup
from brain._indexes.catalog import Catalog
from brain._processes import process_mark
from brain._vault.store import NoteStore
from tests.daemon.test_watching import WAIT, eventually


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Full walks, files indexed (read), folders listed and lstat calls since the last reset;
    the folder check is on from the first file (QUICK_ABOVE 0)."""
    monkeypatch.setattr(catchup, "QUICK_ABOVE", 0)
    counts = {"walks": 0, "read": 0, "listed": 0, "lstat": 0}
    walk, index_file, entries = NoteStore.walk, catchup.index_file, NoteStore.entries
    lstat = os.lstat

    def counting_walk(self: NoteStore, folders: Any = None) -> Any:
        counts["walks"] += 1
        return walk(self, folders)

    def counting_index(*args: Any, **kwargs: Any) -> str:
        counts["read"] += 1
        return index_file(*args, **kwargs)

    def counting_entries(self: NoteStore, rel: str) -> Any:
        counts["listed"] += 1
        return entries(self, rel)

    def counting_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        counts["lstat"] += 1
        return lstat(path, *args, **kwargs)

    monkeypatch.setattr(NoteStore, "walk", counting_walk)
    monkeypatch.setattr(NoteStore, "entries", counting_entries)
    monkeypatch.setattr(catchup, "index_file", counting_index)
    monkeypatch.setattr(os, "lstat", counting_lstat)
    return counts


@pytest.fixture
def walked(brain: Brain, counted: dict[str, int]) -> Iterator[Brain]:
    """A vault of notes in two folders, walked once (so its folders are recorded)."""
    for n in range(30):
        brain.remember(f"Boiler note {n}", title=f"Boiler {n}", node="Home/Heating")
        brain.remember(f"Garden note {n}", title=f"Garden {n}", node="Projects/Garden")
    brain._context.catch_up(force=True)
    brain._context.catch_up()  # the folders brain itself wrote into since are looked at once
    counted.update(walks=0, read=0, listed=0, lstat=0)
    yield brain


def _folders(brain: Brain) -> int:
    return len(brain._context.caches.catalog.folders())


def test_nothing_changed_costs_one_stat_a_folder(walked: Brain, counted: dict[str, int]) -> None:
    assert walked._context.catch_up() == catchup.CatchUp()
    assert counted == {"walks": 0, "read": 0, "listed": 0, "lstat": _folders(walked)}
    assert walked._context.last_catch_up["how"] == "folders"
    assert walked._context.last_catch_up["listed"] == 0


def test_a_new_file_and_a_deleted_one_are_seen_by_their_folder(
    walked: Brain, vault: Path, counted: dict[str, int]
) -> None:
    heating = next(walked._context.store.walk_folder("main/Home/Heating"))[0]
    (vault / heating).unlink()
    (vault / "main/Home/Heating/by-hand.md").write_text("# By hand\n\nThe flue was swept.\n")
    found = walked._context.catch_up()
    assert found.removed == (heating,)
    assert found.changed == ("main/Home/Heating/by-hand.md",)
    assert counted["walks"] == 0 and counted["read"] == 1
    assert counted["listed"] == 1  # the garden's folder was not listed
    assert any("swept" in h.snippet for h in walked.recall("flue swept"))


def test_a_rename_save_is_seen_by_its_inode_even_at_the_same_size_and_mtime(
    walked: Brain, vault: Path, counted: dict[str, int]
) -> None:
    rel = next(walked._context.store.walk_folder("main/Projects/Garden"))[0]
    path = vault / rel
    before = path.stat()
    text = path.read_text()
    edited = text.replace("Garden note", "Garden jot!")  # the same length
    assert len(edited) == len(text)
    temp = path.with_name(".editor-save.tmp")
    temp.write_text(edited)
    os.utime(temp, ns=(before.st_atime_ns, before.st_mtime_ns))
    temp.replace(path)  # as editors save: a new file renamed over the old
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert walked._context.catch_up().changed == (rel,)
    assert counted["walks"] == 0 and counted["read"] == 1


def test_new_and_removed_folders(walked: Brain, vault: Path, counted: dict[str, int]) -> None:
    (vault / "main/Home/Car").mkdir()
    (vault / "main/Home/Car/tyres.md").write_text("# Tyres\n\nWinter tyres fitted.\n")
    shutil.rmtree(vault / "main/Projects/Garden")
    found = walked._context.catch_up()
    assert found.changed == ("main/Home/Car/tyres.md",)
    assert len(found.removed) == 30
    assert counted["walks"] == 0
    assert "main/Home/Car" in walked._context.caches.catalog.folders()
    assert "main/Projects/Garden" not in walked._context.caches.catalog.folders()
    assert all(h.node != "Projects/Garden" for h in walked.recall("Garden note"))
    assert walked._context.catch_up() == catchup.CatchUp()  # and the record stands after


def test_an_edit_in_place_waits_for_the_next_full_walk(
    walked: Brain, vault: Path, clock: FixedClock, counted: dict[str, int]
) -> None:
    rel = next(walked._context.store.walk_folder("main/Home/Heating"))[0]
    path = vault / rel
    with path.open("r+") as f:  # the same file (inode) rewritten in place: no folder changes
        text = f.read()
        f.seek(0)
        f.write(text.replace("Boiler note", "Boiler memo"))
    assert walked._context.catch_up() == catchup.CatchUp()  # what the folders cannot show
    clock.set(clock.now() + timedelta(seconds=catchup.FULL_WALK_EVERY + 1))
    assert walked._context.catch_up().changed == (rel,)
    assert counted["walks"] == 1
    assert walked._context.last_catch_up["how"] == "walk"


def test_a_small_vault_always_walks(brain: Brain, vault: Path) -> None:
    note = brain.remember("Boiler serviced", title="Boiler")
    brain._context.catch_up()
    with (vault / note.path).open("r+") as f:  # in place, and seen at once below QUICK_ABOVE
        f.write("~~~")
        f.seek(0, os.SEEK_END)
        f.write("\nMore.\n")
    found = brain._context.catch_up()
    assert note.path in found.changed + found.broken
    assert brain._context.last_catch_up["how"] == "walk"


def test_a_change_at_the_top_of_the_vault_makes_it_walk(
    walked: Brain, vault: Path, counted: dict[str, int]
) -> None:
    (vault / "Work/Notes").mkdir(parents=True)
    (vault / "Work/Notes/plan.md").write_text("# Plan\n\nShip it.\n")
    assert walked._context.catch_up().changed == ("Work/Notes/plan.md",)
    assert counted["walks"] == 1


def test_a_catalog_from_before_inodes_gains_the_column(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "catalog.sqlite")
    db.execute(
        "CREATE TABLE files (path TEXT PRIMARY KEY, note_id TEXT, hash TEXT NOT NULL, "
        "mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, error TEXT)"
    )
    db.execute("INSERT INTO files VALUES ('P/a.md', 'x', 'h', 5, 7, NULL)")
    db.commit()
    db.close()
    catalog = Catalog(tmp_path / "catalog.sqlite")
    row = catalog.file("P/a.md")
    assert row is not None and row.inode == 0
    catalog.close()


def test_reindex_records_the_folders(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock)
    brain.remember("Boiler serviced", title="Boiler", node="Home/Heating")
    brain.reindex()
    assert "main/Home/Heating" in brain._context.caches.catalog.folders()
    assert brain._context.caches.catalog.info(catchup.WALKED) is not None
    brain.close()


def test_a_running_watcher_is_trusted_and_stops_being_when_it_ends(
    brain: Brain, vault: Path, clock: FixedClock, counted: dict[str, int]
) -> None:
    from brain._sources.watching import Watcher

    stop, box = threading.Event(), []

    def work() -> None:
        own = open_vault(vault, clock=clock)
        box.append(Watcher(own._context, delay=0.2))
        try:
            box[0].run(stop)
        finally:
            own.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    assert eventually(lambda: bool(box)) and box[0].ready.wait(WAIT)
    assert eventually(lambda: catchup.watched(brain._context.caches.catalog, vault))
    counted.update(walks=0, read=0, listed=0, lstat=0)
    assert brain._context.catch_up() == catchup.CatchUp()
    assert brain._context.last_catch_up["how"] == "watcher"
    assert counted == {"walks": 0, "read": 0, "listed": 0, "lstat": 0}
    stop.set()
    thread.join(WAIT)
    assert not catchup.watched(brain._context.caches.catalog, vault)
    brain._context.catch_up()
    assert brain._context.last_catch_up["how"] in ("walk", "folders")


def test_a_watchers_mark_from_a_process_gone_is_not_trusted(brain: Brain) -> None:
    catalog = brain._context.caches.catalog
    catalog.set_info(catchup.WATCHER, "999999999 12345")
    assert not catchup.watched(catalog, brain.root)
    mark = process_mark(os.getpid())
    assert mark is not None
    pid, start = mark.split()
    catalog.set_info(catchup.WATCHER, f"{pid} {int(start) + 1}")  # the same pid, another process
    assert not catchup.watched(catalog, brain.root)
    brain._context.watched(True)
    assert catchup.watched(catalog, brain.root)
    brain._context.watched(False)
    assert catalog.info(catchup.WATCHER) is None
