"""Tests for the faiss vector index and its id map."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from brain._indexes.vectors import IDS_FILE, INDEX_FILE, StaleIndex, VectorIndex, faiss_id

DIM = 8


def unit(*rows: Any) -> Any:
    matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def basis(i: int, lean: int | None = None) -> Any:
    """The i-th axis, tilted towards axis `lean` if given."""
    row = np.zeros(DIM, dtype=np.float32)
    row[i] = 1.0
    if lean is not None:
        row[lean] = 0.5
    return unit(row)[0]


@pytest.fixture
def index(tmp_path: Path) -> VectorIndex:
    vectors = VectorIndex(tmp_path / "vectors", DIM, "hashing")
    vectors.upsert(["a", "b", "c"], np.stack([basis(0), basis(1), basis(0, lean=1)]))
    return vectors


def test_search_ranks_by_inner_product(index: VectorIndex) -> None:
    hits = index.search(basis(0), 3)
    assert [name for name, _ in hits] == ["a", "c", "b"]
    assert hits[0][1] == pytest.approx(1.0, abs=1e-6)
    assert hits[2][1] == pytest.approx(0.0, abs=1e-6)
    assert index.search(basis(0), 1) == hits[:1]
    assert index.search(basis(0), 0) == []
    assert len(index.search(basis(0), 50)) == 3


def test_upsert_replaces_without_duplicates(index: VectorIndex) -> None:
    index.upsert(["a"], [basis(2)])
    index.upsert(["a", "a"], [basis(3), basis(2)])  # repeated in one call: last wins
    assert len(index) == 3
    hits = index.search(basis(2), 5)
    assert [name for name, _ in hits].count("a") == 1
    assert hits[0][0] == "a"
    assert hits[0][1] == pytest.approx(1.0, abs=1e-6)


def test_new_ids_are_added_without_a_removal_scan(index: VectorIndex, tmp_path: Path) -> None:
    """A removal scans every id the index holds, so a bulk flush that removed before each
    batch cost batches × size; only ids named before (maybe in the index) are removed."""
    faiss_index = index._ensure()
    removed: list[list[int]] = []
    real = faiss_index.remove_ids

    def counting(fids: Any) -> Any:
        removed.append(sorted(int(f) for f in fids))
        return real(fids)

    faiss_index.remove_ids = counting
    index.upsert(["d", "e"], [basis(4), basis(5)])
    assert removed == []  # all new: nothing to take out
    index.upsert(["e", "f"], [basis(6), basis(7)])
    assert removed == [[faiss_id("e")]]  # the one named before
    assert len(index) == 6
    assert [name for name, _ in index.search(basis(6), 1)] == ["e"]
    index.save()
    again = VectorIndex(tmp_path / "vectors", DIM, "hashing")  # names read back from disk
    again.upsert(["a", "g"], [basis(7), basis(3)])
    assert len(again) == 7
    assert [name for name, _ in again.search(basis(7), 2)] == ["a", "f"]
    again.remove(["g"])
    again.save()
    again.upsert(["g"], [basis(3)])  # its name went with the save: added as new, once
    assert [name for name, _ in again.search(basis(3), 5)].count("g") == 1


def test_remove(index: VectorIndex) -> None:
    assert index.remove(["a", "nope"]) == 1
    assert index.remove(["a"]) == 0
    assert index.remove([]) == 0
    assert len(index) == 2
    assert "a" not in [name for name, _ in index.search(basis(0), 5)]
    assert index.ids() == ["b", "c"]


def test_allowed_limits_the_results(index: VectorIndex) -> None:
    hits = index.search(basis(0), 5, allowed={"b", "c", "unknown"})
    assert [name for name, _ in hits] == ["c", "b"]
    ((name, score),) = index.search(basis(0), 1, allowed={"b"})
    assert name == "b"
    assert score == pytest.approx(0.0, abs=1e-6)
    assert index.search(basis(0), 5, allowed=set()) == []
    assert index.search(basis(0), 5, allowed={"unknown"}) == []


def test_allowed_scales_to_many_ids(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    vectors = VectorIndex(tmp_path, 32, "hashing")
    names = [f"note-{i}" for i in range(5000)]
    matrix = unit(*rng.normal(size=(5000, 32)))
    vectors.upsert(names, matrix)
    allowed = set(names[::7])
    hits = vectors.search(matrix[0], 10, allowed=allowed)
    assert len(hits) == 10
    assert {name for name, _ in hits} <= allowed
    scores = matrix @ matrix[0]
    best = sorted(allowed, key=lambda n: -scores[names.index(n)])[:10]
    assert [name for name, _ in hits] == best


def test_saved_index_reloads(index: VectorIndex, tmp_path: Path) -> None:
    index.save()
    again = VectorIndex(tmp_path / "vectors", DIM, "hashing")
    assert len(again) == 3
    assert again.ids() == ["a", "b", "c"]
    assert again.search(basis(0), 3) == index.search(basis(0), 3)
    assert sorted(p.name for p in (tmp_path / "vectors").iterdir()) == [INDEX_FILE, IDS_FILE]


def test_unsaved_changes_are_not_on_disk(index: VectorIndex, tmp_path: Path) -> None:
    index.save()
    index.remove(["a"])
    index.upsert(["d"], [basis(4)])
    assert len(VectorIndex(tmp_path / "vectors", DIM, "hashing")) == 3
    index.save()
    assert VectorIndex(tmp_path / "vectors", DIM, "hashing").ids() == ["b", "c", "d"]


def test_a_reader_sees_another_writers_save(index: VectorIndex, tmp_path: Path) -> None:
    index.save()
    reader = VectorIndex(tmp_path / "vectors", DIM, "hashing")
    assert len(reader) == 3
    index.upsert(["d"], [basis(4)])
    index.save()
    ((name, score),) = reader.search(basis(4), 1)
    assert name == "d"
    assert score == pytest.approx(1.0, abs=1e-6)


def test_removed_ids_leave_the_id_map_after_save(index: VectorIndex, tmp_path: Path) -> None:
    index.save()
    index.remove(["b"])
    index.save()
    with sqlite3.connect(tmp_path / "vectors" / IDS_FILE) as db:
        names = {name for (name,) in db.execute("SELECT object_id FROM ids")}
    assert names == {"a", "c"}


def test_other_embedder_or_dim_is_stale(index: VectorIndex, tmp_path: Path) -> None:
    index.save()
    folder = tmp_path / "vectors"
    for dim, name in ((DIM, "minilm"), (DIM * 2, "hashing")):
        other = VectorIndex(folder, dim, name)
        with pytest.raises(StaleIndex) as caught:
            other.search(np.ones(dim), 1)
        assert "brain reindex" in str(caught.value)
        other.close()
    rebuilt = VectorIndex(folder, DIM * 2, "minilm")
    rebuilt.clear()
    assert len(rebuilt) == 0
    rebuilt.upsert(["z"], unit(np.ones(DIM * 2)))
    rebuilt.save()
    assert VectorIndex(folder, DIM * 2, "minilm").ids() == ["z"]
    with pytest.raises(StaleIndex):
        len(VectorIndex(folder, DIM, "hashing"))


def test_a_reader_checks_what_the_index_was_built_for_as_it_reads_it(
    index: VectorIndex, tmp_path: Path
) -> None:
    """A long-lived reader reads the id map's info when it reads an index file, not at every
    search; an index another process rebuilt for another embedder is stale at the next one."""
    index.save()
    reader = VectorIndex(tmp_path / "vectors", DIM, "hashing")
    assert reader.search(basis(0), 1)
    asked: list[str] = []
    reader._connect(check=False).set_trace_callback(asked.append)
    for _ in range(3):
        assert reader.search(basis(0), 1) and len(reader) == 3
    assert not [sql for sql in asked if "FROM info" in sql]
    other = VectorIndex(tmp_path / "vectors", DIM, "minilm")  # another process rebuilds
    other.clear()
    other.upsert(["z"], basis(1).reshape(1, -1))
    other.save()
    with pytest.raises(StaleIndex, match="embedder 'minilm'"):
        reader.search(basis(0), 1)
    reader.close()
    other.close()


def test_wrong_sized_vectors_are_stale(index: VectorIndex) -> None:
    with pytest.raises(StaleIndex):
        index.upsert(["x"], np.ones((1, DIM + 1)))
    with pytest.raises(StaleIndex):
        index.search(np.ones(DIM + 1), 1)
    with pytest.raises(ValueError):
        index.upsert(["x", "y"], np.ones((1, DIM)))


def test_an_index_without_its_id_map_is_stale(index: VectorIndex, tmp_path: Path) -> None:
    index.save()
    index.close()
    (tmp_path / "vectors" / IDS_FILE).unlink()
    with pytest.raises(StaleIndex):
        len(VectorIndex(tmp_path / "vectors", DIM, "hashing"))


def test_an_empty_folder_is_an_empty_index(tmp_path: Path) -> None:
    vectors = VectorIndex(tmp_path / "new", DIM, "hashing")
    assert len(vectors) == 0
    assert vectors.ids() == []
    assert vectors.search(basis(0), 5) == []
    vectors.save()  # nothing changed: nothing written
    assert not (tmp_path / "new" / INDEX_FILE).exists()


def test_faiss_ids_are_stable_and_non_negative() -> None:
    assert faiss_id("note-1") == faiss_id("note-1")
    assert faiss_id("note-1") != faiss_id("note-2")
    assert all(0 <= faiss_id(f"id-{i}") < 2**63 for i in range(1000))


def test_vectors_are_kept_in_half_precision_and_a_single_precision_file_still_reads(
    tmp_path: Path,
) -> None:
    import faiss

    rng = np.random.default_rng(3)
    rows = rng.standard_normal((200, 64)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    names = [f"n{i}" for i in range(200)]
    index = VectorIndex(tmp_path / "half", 64, "hashing")
    index.upsert(names, rows)
    index.save()
    assert (tmp_path / "half" / INDEX_FILE).stat().st_size < 200 * 64 * 3  # 2 bytes a number
    assert [n for n, _ in index.search(rows[17], 1)] == ["n17"]
    back = index.vectors(["n17"])["n17"]
    assert float(np.dot(back, rows[17])) > 0.9999
    index.close()
    # An index saved before, in single precision, is read and searched as it was.
    old = VectorIndex(tmp_path / "single", 64, "hashing")
    old.upsert(names[:1], rows[:1])
    old.save()
    flat = faiss.IndexIDMap2(faiss.IndexFlatIP(64))
    flat.add_with_ids(rows, np.array([faiss_id(n) for n in names], dtype=np.int64))
    faiss.write_index(flat, str(tmp_path / "single" / INDEX_FILE))
    again = VectorIndex(tmp_path / "single", 64, "hashing")
    again._name(names, [faiss_id(n) for n in names])
    assert [n for n, _ in again.search(rows[42], 1)] == ["n42"]
    again.close()
