"""The bulk write path and the scale benchmark's helpers (bench/scale.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bench.scale import disk_usage, memories, queries, summarise
from brain._brain import Brain
from brain._vault import files
from brain._vault.files import atomic_write, deferred_dir_sync


def test_bulk_writes_node_indexes_once_at_the_end(brain: Brain, vault: Path) -> None:
    index = vault / "main/Projects/Garden/index.json"
    with brain.bulk():
        for n in range(12):
            brain.remember(f"tomato seedling number {n} in the raised bed", node="Projects/Garden")
        # Ten memories make a nested node's index: not yet, the block has not ended.
        assert not index.exists()
        assert brain._context.lock.held
    assert index.exists()
    assert not brain._context.lock.held
    hits = brain.recall("tomato seedling number 7", k=3)
    assert hits and "number 7" in hits[0].snippet


def test_bulk_notes_are_whole_files_and_in_every_cache(brain: Brain, vault: Path) -> None:
    with brain.bulk():
        for n in range(5):
            brain.remember(f"boiler service note {n}", node="Home/Heating")
    for n in range(5):
        text = (vault / f"main/Home/Heating/boiler service note {n}.md").read_text()
        assert text.endswith(f"---\nboiler service note {n}\n")
    assert brain.doctor().ok
    assert len(brain.list(node="Home/Heating")) == 5


def _spy_fsync(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        seen.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(files.os, "fsync", fsync)
    return seen


def test_deferred_dir_sync_syncs_each_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _spy_fsync(monkeypatch)
    with deferred_dir_sync():
        for n in range(4):
            atomic_write(tmp_path / "a" / f"{n}.md", f"note {n}")
        atomic_write(tmp_path / "b" / "x.md", "other folder")
        assert seen == ["file"] * 5  # every file is still fsynced before its rename
    assert seen == ["file"] * 5 + ["dir", "dir"]  # then each folder once
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["0.md", "1.md", "2.md", "3.md"]


def test_a_single_write_still_syncs_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _spy_fsync(monkeypatch)
    atomic_write(tmp_path / "one.md", "x")
    assert seen == ["file", "dir"]


def test_generated_memories_are_deterministic_and_in_range() -> None:
    first = list(memories(200, seed=3))
    assert first == list(memories(200, seed=3))
    assert first != list(memories(200, seed=4))
    assert all(10 <= len(m.text.split()) <= 80 for m in first)
    assert len({m.node for m in first}) > 5
    assert any(m.node is None for m in first) and any(m.title for m in first)
    assert queries(20) == queries(20) and len(set(queries(20))) > 15


def test_disk_usage_splits_notes_other_files_and_caches(tmp_path: Path) -> None:
    (tmp_path / "main/Node").mkdir(parents=True)
    (tmp_path / "main/Node/a.md").write_bytes(b"x" * 10)
    (tmp_path / "main/Node/index.json").write_bytes(b"y" * 7)
    (tmp_path / ".brain/fulltext").mkdir(parents=True)
    (tmp_path / ".brain/catalog.sqlite").write_bytes(b"z" * 5)
    (tmp_path / ".brain/fulltext/seg").write_bytes(b"z" * 3)
    assert disk_usage(tmp_path) == {"markdown": 10, "other_vault": 7, "cache": 8}


def test_summarise_gives_known_percentiles() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    assert summarise(values) == {"p50": 50.5, "p95": 95.05, "max": 100.0, "n": 100}


def test_bulk_still_finds_a_hand_written_note_of_the_same_title(brain: Brain, vault: Path) -> None:
    folder = vault / "main/Knowledge/Inbox"
    (folder / "Boiler.md").write_text("Written by hand: the boiler is a Vaillant.\n")
    with brain.bulk():
        brain.remember("Serviced in March.", title="boiler", node="Knowledge/Inbox")
        brain.remember("Pressure at 1.2 bar.", title="Boiler", node="Knowledge/Inbox")
    text = (folder / "Boiler.md").read_text()
    assert "Vaillant" in text and "March" in text and "1.2 bar" in text
    assert not (folder / "boiler.md").exists() and not (folder / "Boiler 2.md").exists()


def test_embedding_cache_keeps_vectors_from_the_old_layout(tmp_path: Path) -> None:
    import sqlite3

    import numpy as np

    from brain._indexes.embedder import EmbeddingCache, HashingEmbedder

    folder = tmp_path / "embeddings"
    folder.mkdir()
    old = sqlite3.connect(folder / "embeddings.sqlite")
    old.executescript(
        """
        CREATE TABLE vectors (
            embedder TEXT NOT NULL, object_id TEXT NOT NULL, content_hash TEXT NOT NULL,
            vector BLOB NOT NULL, PRIMARY KEY (embedder, object_id)) WITHOUT ROWID;
        CREATE INDEX vectors_object ON vectors(object_id);
        PRAGMA user_version = 1;
        """
    )
    kept = np.arange(256, dtype="<f4") / 1000
    with old:
        old.execute("INSERT INTO vectors VALUES ('hashing/256', 'A', 'h1', ?)", (kept.tobytes(),))
    old.close()

    class Counting(HashingEmbedder):
        calls = 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            Counting.calls += len(texts)
            return super().embed(texts)

    with EmbeddingCache(folder) as cache:
        got = cache.embed_cached(Counting(), [("A", "h1", "some text"), ("B", "h2", "other")])
        assert Counting.calls == 1  # only B: A's vector came through the migration
        assert np.array_equal(got[0], kept)
        ddl = cache._db.execute("SELECT sql FROM sqlite_master WHERE name='vectors'").fetchone()
        assert "PRIMARY KEY (object_id, embedder)) WITHOUT ROWID" in ddl[0]
        assert (
            cache._db.execute(
                "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='vectors'"
            ).fetchall()
            == []
        )
        assert len(cache) == 2
