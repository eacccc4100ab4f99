"""Compact cache rows: sparse terms that round-trip, forget and outlive a reindex; the
embedding cache's rows of an older layout kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import EmbeddingCache, HashingEmbedder
from brain._indexes.postings import SparseIndex, StaleSparse, pack, unpack
from brain._indexes.sparse import VOCABULARY, HashingSparse
from tests.indexes.conftest import Counting


def _rows(vault: Path) -> dict[str, tuple[bytes, bytes]]:
    db = sqlite3.connect(vault / ".brain" / "sparse" / "sparse.sqlite")
    try:
        rows = db.execute("SELECT object_id, content_hash, terms FROM terms").fetchall()
    finally:
        db.close()
    return {oid: (h, blob) for oid, h, blob in rows}


def test_a_row_is_one_blob_of_16_bit_ids_and_8_bit_weights(tmp_path: Path) -> None:
    ids = np.array([0, 7, 1999, 2000, VOCABULARY - 1], dtype=np.int32)
    weights = np.array([0.001, 0.5, 1.2345678, 0.02, 3.75], dtype=np.float32)
    blob = pack((ids, weights))
    # a step, then two bytes an id and one a weight; 0.001 is under half a step: left out
    assert len(blob) == 4 + 3 * 4
    back_ids, back_weights = unpack(blob)
    assert back_ids.tolist() == [7, 1999, 2000, VOCABULARY - 1] and back_ids.dtype == np.int32
    step = 3.75 / 255
    assert back_weights.dtype == np.float32 and back_weights[-1] == pytest.approx(3.75)
    assert np.abs(back_weights - weights[1:]).max() <= step / 2 + 1e-6
    assert unpack(pack((ids[:0], weights[:0])))[0].tolist() == []
    with pytest.raises(ValueError, match="16 bits"):
        pack((np.array([1 << 16], dtype=np.int32), np.array([1.0], dtype=np.float32)))

    index = SparseIndex(tmp_path, "hashing")
    index.upsert([("a", "ab" * 32, (ids, weights))])
    assert index.hashes(["a", "b"]) == {"a": "ab" * 8}  # 64 bits of the text's hash are kept
    query = (np.array([7, 1999], dtype=np.int32), np.array([1.0, 2.0], dtype=np.float32))
    ((oid, score),) = index.search(query, 5)
    assert oid == "a" and score == pytest.approx(0.5 + 2 * 1.2345678, abs=3 * step)
    index.close()
    again = SparseIndex(tmp_path, "hashing")  # read back by another process: the same score
    assert again.search(query, 5) == [("a", score)]
    db = sqlite3.connect(tmp_path / "sparse.sqlite")
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'terms'").fetchone()
    indexes = db.execute(
        "SELECT name FROM sqlite_master WHERE tbl_name = 'terms' AND type = 'index'"
    ).fetchall()
    db.close()
    assert "WITHOUT ROWID" in sql and indexes == []  # the ids are kept once, in the table


def test_an_index_of_the_old_row_format_is_stale_and_rebuilt(
    sbrain: Brain, vault: Path, clock: FixedClock
) -> None:
    note = sbrain.remember("Quokkas smile at tourists on Rottnest", title="Quokka")
    sbrain.recall("quokka")
    sbrain.close()
    path = vault / ".brain" / "sparse" / "sparse.sqlite"
    path.unlink()
    db = sqlite3.connect(path)  # a file as schema 1 wrote it
    db.executescript(
        """
        CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE terms (object_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL,
                            ids BLOB NOT NULL, weights BLOB NOT NULL);
        INSERT INTO info VALUES ('schema', '1'), ('encoder', 'hashing');
        """
    )
    ids, weights = HashingSparse().encode(["quokkas smile"])[0]
    db.execute(
        "INSERT INTO terms VALUES (?, 'h', ?, ?)",
        (note.id, ids.astype("<i4").tobytes(), weights.astype("<f4").tobytes()),
    )
    db.commit()
    db.close()
    with pytest.raises(StaleSparse, match=r"schema 1"):
        len(SparseIndex(vault / ".brain" / "sparse", "hashing"))
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    assert b._context.caches.sparse_problem() is not None
    assert [h.id for h in b.recall("quokkas smile", mode="sparse")] == [note.id]
    assert b._context.caches.sparse_problem() is None
    b.close()


def test_reindex_encodes_no_unchanged_text_again(
    sbrain: Brain, vault: Path, encoder: Counting
) -> None:
    notes = [
        sbrain.remember(f"Memory {n} about the allotment's beans", title=f"Beans {n}")
        for n in range(6)
    ]
    sbrain.recall("beans")
    before, encoded = _rows(vault), len(encoder.seen)
    assert set(before) == set(sbrain._context.caches.catalog.object_ids())
    sbrain.reindex()
    assert len(encoder.seen) == encoded  # every term read back by its text's hash
    assert _rows(vault) == before
    # A hand edit: that note alone is encoded again by the next reindex.
    path = vault / sbrain._context.caches.catalog.get(notes[2].id).path  # type: ignore[union-attr]
    path.write_text(path.read_text().replace("beans", "courgettes"))
    sbrain.reindex()
    fresh = encoder.seen[encoded:]
    assert fresh and all("courgettes" in text for text in fresh)
    assert [h.id for h in sbrain.recall("courgettes", mode="sparse")] == [notes[2].id]


def test_forget_and_a_file_deleted_by_hand_leave_no_term_row(
    sbrain: Brain, vault: Path, encoder: Counting
) -> None:
    keep = sbrain.remember("Herons stand still in the shallows", title="Herons")
    gone = sbrain.remember("Otters hold hands while they sleep", title="Otters")
    dropped = sbrain.remember("Moths circle the porch light", title="Moths")
    sbrain.recall("herons")
    assert {keep.id, gone.id, dropped.id} <= set(_rows(vault))
    sbrain.forget(gone.id)
    assert gone.id not in _rows(vault)  # at once, no flush and no model needed
    # A note deleted behind brain's back is found by the reindex's walk: its row goes too.
    (vault / sbrain._context.caches.catalog.get(dropped.id).path).unlink()  # type: ignore[union-attr]
    encoded = len(encoder.seen)
    sbrain.reindex()
    assert set(_rows(vault)) == set(sbrain._context.caches.catalog.object_ids())
    assert dropped.id not in _rows(vault) and keep.id in _rows(vault)
    assert len(encoder.seen) == encoded
    assert sbrain.recall("moths porch", mode="sparse") == []
    assert sbrain._context.caches.sparse_problem() is None


def test_reindex_starts_an_index_of_another_encoder_over(
    vault: Path, clock: FixedClock, encoder: Counting
) -> None:
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=encoder)
    note = b.remember("Lighthouse keepers log the weather at dawn", title="Keepers")
    b.recall("lighthouse")
    b.close()
    db = sqlite3.connect(vault / ".brain" / "sparse" / "sparse.sqlite")
    db.execute("UPDATE info SET value = 'elsewhere' WHERE key = 'encoder'")
    db.commit()
    db.close()
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=encoder)
    encoded = len(encoder.seen)
    b.reindex()
    assert len(encoder.seen) > encoded  # nothing of the other encoder's is reused
    assert set(_rows(vault)) == set(b._context.caches.catalog.object_ids())
    assert [h.id for h in b.recall("keepers weather", mode="sparse")] == [note.id]
    b.close()


def test_the_embedding_cache_of_the_last_layout_is_kept_and_its_vectors_become_marks(
    tmp_path: Path,
) -> None:
    db = sqlite3.connect(tmp_path / "embeddings.sqlite")
    db.executescript(
        """
        CREATE TABLE vectors (
            embedder TEXT NOT NULL, object_id TEXT NOT NULL, content_hash TEXT NOT NULL,
            vector BLOB NOT NULL, PRIMARY KEY (embedder, object_id));
        CREATE INDEX vectors_object ON vectors(object_id);
        PRAGMA user_version = 2;
        """
    )
    embedder = HashingEmbedder()
    kept = embedder.embed(["the quince tree"])[0].astype("<f2")
    rows = [("A", "ab" * 32, kept.tobytes())]  # a whole vector, as the cache held them once
    with db:
        db.executemany(f"INSERT INTO vectors VALUES ('hashing/{embedder.dim}', ?, ?, ?)", rows)
    db.close()

    class Counting(HashingEmbedder):
        texts = 0

        def embed(self, texts):  # type: ignore[no-untyped-def]
            Counting.texts += len(texts)
            return super().embed(texts)

    counting = Counting()
    with EmbeddingCache(tmp_path) as cache:
        got = cache.embed_cached(counting, [("A", "ab" * 32, "the quince tree")], lambda ids: {})
        assert Counting.texts == 0 and np.array_equal(got[0], kept.astype(np.float32))
        (row,) = cache._db.execute("SELECT content_hash, length(vector) FROM vectors")
        assert row == ("ab" * 8, 8)  # now a mark of the vector the index is given
        held = {"A": got[0]}  # what the vector index holds
        item = ("A", "ab" * 32, "the quince tree")
        again = cache.embed_cached(counting, [item], lambda ids: {i: held[i] for i in ids})
        assert Counting.texts == 0 and np.array_equal(again[0], got[0])
        changed = cache.embed_cached(counting, [("A", "cd" * 32, "the quince jam")], lambda ids: {})
        assert Counting.texts == 1 and not np.array_equal(changed[0], got[0])
