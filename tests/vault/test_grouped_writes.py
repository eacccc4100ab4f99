"""A bulk block makes its note files durable a group at a time: one sync, then the renames.

Inside the block a note not yet in place is still seen by brain (read, exists, stat); it is in
place before the catalog commits a row that names it; a failed sync loses the group's notes,
never a note in place, and leaves no row naming a missing file.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._git.autocommit import Operation
from brain._indexes import catalog as catalog_module
from brain._vault import files
from brain._vault import store as store_module


def hidden_temps(root: Path) -> list[Path]:
    return [p for p in root.rglob(".*.tmp") if ".brain" not in p.parts]


def test_notes_wait_in_the_group_and_brain_still_sees_them(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_module, "BATCH_SECONDS", 3600.0)  # no commit inside the block
    with brain.bulk():
        first = brain.remember("Pears ripen off the tree.", title="Pears", node="Garden")
        assert not (brain.root / first.path).exists()  # written, not yet in place
        assert brain._context.store.exists(first.path)
        assert brain._context.store.read(first.path).body == "Pears ripen off the tree.\n"
        assert brain._context.store.stat(first.path).st_size > 0
        # The same title again: the pending note is read and extended, not written twice.
        again = brain.remember("Pick them hard and green.", title="Pears", node="Garden")
        assert again.path == first.path
        # Untitled, named by their first words: the name a pending note took is not free.
        jam = brain.remember("Pear jam needs lemon and time.", node="Garden")
        other = brain.remember("Pear jam needs lemon and time, said Ana.", node="Garden")
        assert other.path != jam.path and brain._context.store.exists(other.path)
        assert len(hidden_temps(brain.root)) == 3  # one a note: the rewrite replaced its own
    on_disk = (brain.root / first.path).read_text()
    assert "Pears ripen off the tree." in on_disk and "Pick them hard and green." in on_disk
    assert (brain.root / other.path).exists() and not hidden_temps(brain.root)
    # The catalog's stamps are those of the files now in place: a full catch-up finds nothing.
    found = brain._context.catch_up(force=True)
    assert not found.changed and not found.removed and not found.broken
    assert {h.id for h in brain.recall("pear jam lemon", mode="text")} >= {jam.id, other.id}


def test_the_group_is_in_place_before_each_catalog_commit(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_module, "BATCH_SECONDS", 0.0)  # a commit after each write
    with brain.bulk():
        for n in range(3):
            note = brain.remember(f"Apple {n} keeps till spring.", title=f"Apple {n}")
            assert (brain.root / note.path).is_file()  # put in place by the commit
            assert not hidden_temps(brain.root)


def test_anything_that_lists_or_moves_files_sees_the_group_in_place(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog_module, "BATCH_SECONDS", 3600.0)
    with brain.bulk():
        note = brain.remember("Quinces want a long summer.", title="Quinces", node="Garden")
        assert not (brain.root / note.path).exists()
        walked = [rel for rel, _st in brain._context.store.walk()]
        assert note.path in walked and (brain.root / note.path).exists()


def test_a_failed_sync_loses_the_group_and_leaves_no_row_without_its_file(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = open_vault(vault, clock=clock)
    kept = brain.remember("The plum tree was planted in March.", title="Plum")
    monkeypatch.setattr(catalog_module, "BATCH_SECONDS", 3600.0)

    def failing(temps: list[Path]) -> None:
        raise OSError(errno.EIO, "injected: the disk said no", str(temps[0]))

    monkeypatch.setattr(store_module, "make_durable", failing)
    with pytest.raises(OSError, match="injected"), brain.bulk():
        lost = brain.remember("The fig tree needs a warm wall.", title="Fig")
    monkeypatch.undo()
    assert not (vault / lost.path).exists() and not hidden_temps(vault)
    assert (vault / kept.path).is_file()
    # The rows that named the lost note were rolled back with its batch.
    assert brain._context.caches.catalog.get(lost.id) is None
    brain.close()
    again = open_vault(vault, clock=clock)
    try:
        assert again.recall("plum tree planted", mode="text")[0].id == kept.id
        assert lost.id not in {h.id for h in again.recall("fig tree warm wall", mode="text")}
        again._context.flush(vectors=False)
        assert again._context.caches.catalog.count() == len(again._context.caches.fulltext)
    finally:
        again.close()


def test_with_git_each_operation_puts_its_files_in_place(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git commits each operation's own files, so a bulk block under autocommit groups none."""
    brain = open_vault(vault, clock=clock)
    monkeypatch.setattr(brain._context.changes, "enabled", True)
    monkeypatch.setattr(catalog_module, "BATCH_SECONDS", 3600.0)
    monkeypatch.setattr(type(brain._context.changes), "operation", lambda self, **kw: _no_git())
    try:
        with brain.bulk():
            note = brain.remember("Walnuts drop in October.", title="Walnuts")
            assert (vault / note.path).is_file()
    finally:
        brain.close()


def _no_git() -> contextlib.AbstractContextManager[Operation]:
    """An operation that commits nothing: the test looks at the files, not at git."""
    return contextlib.nullcontext(Operation())


def test_a_group_is_made_durable_by_one_sync_or_an_fsync_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temps = [files.write_temp(tmp_path / f"n{i}.md", f"note {i}", durable=False) for i in range(3)]
    synced: list[int] = []

    def syncfs(fd: int) -> int:
        synced.append(fd)
        return 0

    monkeypatch.setattr(files, "_syncfs", lambda: syncfs)
    files.make_durable(temps)
    assert len(synced) == 1  # one sync of the file system for the whole group
    monkeypatch.setattr(files, "_syncfs", lambda: lambda fd: -1)
    with pytest.raises(OSError, match="syncfs"):
        files.make_durable(temps)
    fsynced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        fsynced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(files, "_syncfs", lambda: None)  # a system without syncfs
    monkeypatch.setattr(os, "fsync", fsync)
    files.make_durable(temps)
    assert len(fsynced) == 3
