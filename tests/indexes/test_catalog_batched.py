"""Bulk writes commit the catalog a batch at a time; a failed write undoes itself alone."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from brain._brain import Brain, open_vault
from brain._indexes import catalog as catalogs
from brain._indexes.catalog import Catalog


def _commits(brain: Brain) -> list[str]:
    seen: list[str] = []
    brain._context.caches.catalog.db.set_trace_callback(
        lambda sql: seen.append(sql) if sql.strip().upper() == "COMMIT" else None
    )
    return seen


def test_a_bulk_block_commits_the_catalog_once_not_per_write(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalogs, "BATCH_SECONDS", 3600.0)
    commits = _commits(brain)
    with brain.bulk():
        for n in range(30):
            brain.remember(f"Memory {n} about the orchard", node="Garden")
        assert commits == []  # each write was a savepoint of the batch's transaction
    assert len(commits) == 1
    outside = _commits(brain)
    brain.remember("One more about the orchard", node="Garden")
    assert len(outside) >= 1  # outside a block, a write commits at once, as before
    assert len(brain.recall("orchard", mode="text", k=50)) == 31


def test_other_readers_see_bulk_writes_a_batch_at_a_time(
    brain: Brain, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = Catalog(vault / ".brain" / "catalog.sqlite")
    before = reader.count("node='Garden'")
    monkeypatch.setattr(catalogs, "BATCH_SECONDS", 3600.0)
    with brain.bulk():
        brain.remember("A pear tree by the wall", node="Garden")
        assert reader.count("node='Garden'") == before  # not committed yet
        monkeypatch.setattr(catalogs, "BATCH_SECONDS", 0.0)  # the batch is now old enough
        brain.remember("An apple tree by the gate", node="Garden")
        assert reader.count("node='Garden'") == before + 2  # committed with the second write
    reader.close()


def test_a_failed_write_inside_a_batch_undoes_itself_alone(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    with catalog.batched():
        with catalog.transaction():
            catalog.set_info("kept", "1")
        with pytest.raises(RuntimeError), catalog.transaction():
            catalog.set_info("undone", "1")
            with catalog.transaction():  # nested deeper: undone with its parent
                catalog.set_info("undone too", "1")
            raise RuntimeError("the write failed halfway")
        with catalog.transaction():
            catalog.set_info("after", "1")
    assert not catalog.db.in_transaction
    assert (catalog.info("kept"), catalog.info("after")) == ("1", "1")
    assert catalog.info("undone") is None and catalog.info("undone too") is None
    catalog.close()


class _NoSecondBegin:
    """The catalog's connection, refusing to begin its second transaction (as a database
    locked for a moment by another process would)."""

    def __init__(self, db: Any) -> None:
        self.db, self.begun = db, 0

    @property
    def in_transaction(self) -> bool:
        return bool(self.db.in_transaction)

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "BEGIN IMMEDIATE":
            self.begun += 1
            if self.begun == 2:
                raise sqlite3.OperationalError("database is locked")
        return self.db.execute(sql, *args)


def test_a_batch_that_cannot_begin_again_commits_each_later_write_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    real = catalog.db
    catalog.db = _NoSecondBegin(real)  # type: ignore[assignment]
    monkeypatch.setattr(catalogs, "BATCH_SECONDS", 0.0)
    with catalog.batched():
        with catalog.transaction():
            catalog.set_info("first", "1")  # committed, then the batch cannot begin again
        assert not real.in_transaction
        with catalog.transaction():
            catalog.set_info("second", "1")  # a transaction of its own, committed at once
        assert not real.in_transaction
    catalog.db = real
    assert (catalog.info("first"), catalog.info("second")) == ("1", "1")
    catalog.close()


def test_an_error_out_of_a_bulk_block_keeps_the_writes_before_it(brain: Brain) -> None:
    with pytest.raises(RuntimeError), brain.bulk():
        for n in range(3):
            brain.remember(f"Kept memory {n} about the beehive", node="Garden")
        raise RuntimeError("the import stopped")
    assert not brain._context.caches.catalog.db.in_transaction
    assert len(brain.recall("beehive", mode="text", k=10)) == 3


KILLED = """
import os, sys
from pathlib import Path
from brain._brain import open_vault
from brain._indexes import catalog
catalog.BATCH_SECONDS = float(sys.argv[2])  # 0: a commit after each write; else none
brain = open_vault(Path(sys.argv[1]))
with brain.bulk():
    for n in range(5):
        brain.remember(f"Written before the crash {n}, about the greenhouse", node="Garden")
    os._exit(9)
"""


@pytest.mark.parametrize("committed", [True, False])
def test_a_process_killed_inside_a_bulk_block_keeps_what_was_committed(
    vault: Path, committed: bool
) -> None:
    """A bulk block's notes are durable a group at a time, each group before the catalog
    commits it (NoteStore.grouped): a crash keeps the notes committed, loses those since the
    last commit (an import run again brings them back), and never leaves a torn note or a row
    naming a missing file."""
    seconds = "0" if committed else "3600"
    done = subprocess.run(
        [sys.executable, "-c", KILLED, str(vault), seconds], timeout=300, check=False
    )
    assert done.returncode == 9
    written = [p for p in (vault / "main").rglob("*.md") if "greenhouse" in p.read_text()]
    assert len(written) == (5 if committed else 0)
    raw = Catalog(vault / ".brain" / "catalog.sqlite")
    assert raw.count("node='Garden'") == (5 if committed else 0)
    raw.close()
    brain = open_vault(vault)
    assert len(brain.recall("greenhouse crash", mode="text", k=10)) == (5 if committed else 0)
    for rel, _st in brain._context.store.walk():
        brain._context.store.read(rel)  # every note in place parses: none is torn
    assert brain.doctor().ok
    brain.close()


_WRITER = """
import sys
from pathlib import Path
from brain._indexes.catalog import Catalog
from brain._indexes.rows import ObjectRow

catalog = Catalog(Path(sys.argv[1]))
action = sys.argv[2]
if action == "grow":
    rows = [
        ObjectRow(
            id=f"0A{n:08d}", note_id=f"0A{n:08d}", path=f"Garden/{n}.md", partition="main",
            node="Garden", title=f"Note {n} " + "words " * 40, norm_title=f"note {n}",
            kind="note", status="active", visibility="normal", created="2026-01-01T00:00:00Z",
            touched="2026-01-01T00:00:00Z", parent=None, supersedes=None, defining=None,
            tags=(), source={}, heading_path=(), text_hash=str(n),
        )
        for n in range(4000)
    ]
    with catalog.transaction():
        catalog.put_objects(rows)
    catalog.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # into the mapped file itself
else:
    with catalog.transaction():
        for n in range(10, 4000):
            catalog.drop_note(f"0A{n:08d}")
    catalog.compact()
catalog.close()
"""


def test_a_mapped_catalog_reads_what_another_process_grew_and_shrank(tmp_path: Path) -> None:
    """The catalog is read through a memory map (catalog.MAPPED_BYTES); another process's writes,
    which grow the file, and its compaction, which shrinks it, are read as they are."""
    path = tmp_path / "catalog.sqlite"
    reader = Catalog(path)
    assert reader.db.execute("PRAGMA mmap_size").fetchone()[0] == catalogs.MAPPED_BYTES >= 1 << 28
    assert reader.briefs(["0A00000001"]) == {}
    size = path.stat().st_size

    def write(action: str) -> None:
        subprocess.run([sys.executable, "-c", _WRITER, str(path), action], check=True)

    write("grow")
    assert path.stat().st_size > size + 1_000_000  # past what was mapped at the first read
    ids = [f"0A{n:08d}" for n in range(4000)]
    assert set(reader.briefs(ids)) == set(ids)
    assert reader.said_titles(["0A00003999"])["0A00003999"].startswith("Note 3999 ")
    grown = path.stat().st_size
    write("shrink")
    assert path.stat().st_size < grown // 4  # compacted: the mapped tail is gone
    assert set(reader.briefs(ids)) == set(ids[:10])
    assert reader.count("1") == 10
    reader.close()
