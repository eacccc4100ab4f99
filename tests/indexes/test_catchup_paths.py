"""Catch-up in proportion to the change: the watcher's paths are checked by stat, only changed
files are read, and the vault is walked only when a folder changed."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes import catchup
from brain._vault.store import NoteStore
from tests.daemon.test_watching import WAIT, eventually


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many full walks and how many files read (indexed) since the last reset."""
    counts = {"walks": 0, "read": 0}
    walk, index_file = NoteStore.walk, catchup.index_file

    def counting_walk(self: NoteStore, folders: Any = None) -> Any:
        counts["walks"] += 1
        return walk(self, folders)

    def counting_index(*args: Any, **kwargs: Any) -> str:
        counts["read"] += 1
        return index_file(*args, **kwargs)

    monkeypatch.setattr(NoteStore, "walk", counting_walk)
    monkeypatch.setattr(catchup, "index_file", counting_index)
    return counts


def test_is_note_path() -> None:
    assert catchup.is_note_path("Personal/inbox/a.md")
    assert catchup.is_note_path("local-only/Personal/a.md")
    assert catchup.is_note_path("cold/Personal/a.md.zst")
    for rel in (
        "a.md",
        "Personal/.a.md",
        ".brain/x.md",
        "Personal/a.txt",
        "cold/a.md",
        "local-only/a.md",
        "Personal/../x.md",
    ):
        assert not catchup.is_note_path(rel), rel


def test_paths_catch_up_reads_only_the_changed_file(
    brain: Brain, vault: Path, counted: dict[str, int]
) -> None:
    notes = [brain.remember(f"Note {n} about the boiler", title=f"Boiler {n}") for n in range(20)]
    edited, deleted, same = notes[3], notes[4], notes[5]
    path = vault / edited.path
    path.write_text(path.read_text().replace("Note 3", "Note three, serviced by Ana"))
    (vault / deleted.path).unlink()
    counted.update(walks=0, read=0)
    found = brain._context.catch_up_paths(
        [edited.path, deleted.path, same.path, "Personal/notes.txt", ".brain/x.md"]
    )
    assert found.changed == (edited.path,) and found.removed == (deleted.path,)
    assert counted == {"walks": 0, "read": 1}  # the unchanged file was only stat'ed
    assert brain._context.catch_up_paths([edited.path, same.path]) == catchup.CatchUp()
    assert counted["read"] == 1
    assert any("serviced by Ana" in h.snippet for h in brain.recall("serviced Ana"))
    assert brain._context.caches.catalog.file(deleted.path) is None


@pytest.fixture
def watcher(vault: Path, clock: FixedClock) -> Iterator[list[Any]]:
    """A watcher on its own thread with its own Brain; yields the catch-ups it reports."""
    from brain._sources.watching import Watcher

    stop, found, box = threading.Event(), [], []

    def work() -> None:
        brain = open_vault(vault, clock=clock)
        box.append(Watcher(brain._context, delay=0.2, on_catch_up=found.append))
        try:
            box[0].run(stop)
        finally:
            brain.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    assert eventually(lambda: bool(box)) and box[0].ready.wait(WAIT)
    yield [found, box[0]]
    stop.set()
    thread.join(WAIT)


def test_a_hand_edit_reaches_the_caches_through_the_watchers_path_without_a_walk(
    brain: Brain, vault: Path, counted: dict[str, int], watcher: list[Any]
) -> None:
    found, running = watcher
    notes = [brain.remember(f"Note {n} on the garden", title=f"Garden {n}") for n in range(15)]
    # The watcher sees brain's own writes by their paths too, and finds nothing to do.
    assert eventually(lambda: running.last_catch_up.get("how") == "paths")
    assert not found and counted["read"] == 0
    counted.update(walks=0, read=0)
    path = vault / notes[7].path
    path.write_text(path.read_text().replace("Note 7", "Note 7: the plum tree needs a stake"))
    assert eventually(lambda: any(f.changed == (notes[7].path,) for f in found))
    assert counted["walks"] == 0 and counted["read"] == 1
    assert running.last_catch_up["how"] == "paths"
    assert any("plum tree" in h.snippet for h in brain.recall("plum tree stake"))


def test_a_folder_moved_into_the_vault_makes_the_watcher_walk(
    brain: Brain, vault: Path, tmp_path: Path, counted: dict[str, int], watcher: list[Any]
) -> None:
    found, running = watcher
    outside = tmp_path / "Trips"
    outside.mkdir()
    (outside / "lisbon.md").write_text("# Lisbon\n\nThe tram 28 goes up to the castle.\n")
    counted.update(walks=0, read=0)
    shutil.move(outside, vault / "Personal" / "Trips")
    assert eventually(lambda: any("Personal/Trips/lisbon.md" in f.changed for f in found))
    assert counted["walks"] >= 1 and running.last_catch_up["how"] == "walk"


def test_paths_reached_through_a_link_are_not_notes(
    brain: Brain, vault: Path, tmp_path: Path
) -> None:
    """As the walk does, catch-up by path follows no link: neither a linked file nor a file
    under a linked folder reaches the caches (a link may lead out of the vault)."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nThe safe's code is 4711.\n")
    part = brain.partition
    (vault / part / "Linked").symlink_to(outside, target_is_directory=True)
    (vault / part / "alias.md").symlink_to(outside / "secret.md")
    rels = [f"{part}/Linked/secret.md", f"{part}/alias.md"]
    assert all(catchup.is_note_path(rel) for rel in rels)
    assert brain._context.catch_up_paths(rels) == catchup.CatchUp()
    assert all(brain._context.caches.catalog.file(rel) is None for rel in rels)
    assert not brain.recall("safe code 4711")
