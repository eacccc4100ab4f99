"""The approximate (IVF) vector index: as good as exact search on a fixed set, forgetting
immediate under it, rebuilt in `brain sleep` without stopping searches."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from brain._brain import Brain, open_vault
from brain._indexes import approximate
from brain._indexes.vectors import VectorIndex

DIM = 32


def clustered(count: int, seed: int = 5) -> Any:
    """Unit vectors around 40 centres, as texts about a few dozen topics are."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM))
    rows = centres[rng.integers(0, 40, size=count)] + rng.normal(0, 0.35, size=(count, DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def filled(tmp_path: Path) -> tuple[VectorIndex, list[str], Any]:
    index = VectorIndex(tmp_path / "vectors", DIM, "hashing")
    names = [f"m{n}" for n in range(3000)]
    index.upsert(names, clustered(3000))
    return index, names, clustered(60, seed=9)


def top(index: VectorIndex, queries: Any, k: int = 10) -> list[list[str]]:
    return [[name for name, _ in index.search(q, k)] for q in queries]


def test_the_approximate_index_finds_what_exact_search_finds(
    filled: tuple[VectorIndex, list[str], Any],
) -> None:
    index, _names, queries = filled
    assert index.kind() == "flat"
    exact = top(index, queries)
    assert index.rebuild("ivf") and index.kind() == "ivf" and len(index) == 3000
    found = top(index, queries)
    hits = sum(len(set(a) & set(e)) for a, e in zip(found, exact, strict=True))
    assert hits / (10 * len(queries)) >= 0.98
    # Saved and read back by another process: still IVF, same answers.
    index.save()
    again = VectorIndex(index.folder, DIM, "hashing")
    assert again.kind() == "ivf" and top(again, queries) == found
    assert sorted(again.ids()) == sorted(index.ids())


def test_the_approximate_index_hands_back_vectors_by_id(
    filled: tuple[VectorIndex, list[str], Any],
) -> None:
    """Neighbour context (recall/neighbours.py) reads stored vectors by id: IVF keeps that."""
    index, names, _queries = filled
    exact = index.vectors(names[:5])
    assert index.rebuild("ivf") and index.kind() == "ivf"
    index.upsert(["late"], clustered(1, seed=11))
    index.remove([names[0]])
    got = index.vectors([*names[:5], "late"])
    assert sorted(got) == sorted([*names[1:5], "late"])
    assert all(np.allclose(got[n], exact[n]) for n in names[1:5])
    index.save()
    again = VectorIndex(index.folder, DIM, "hashing")
    assert again.kind() == "ivf" and np.allclose(again.vectors(["late"])["late"], got["late"])


def test_a_filter_to_few_ids_stays_exact_under_ivf(
    filled: tuple[VectorIndex, list[str], Any],
) -> None:
    index, names, queries = filled
    allowed = set(names[::50])  # 60 of 3000: spread over every list
    exact = [index.search(q, 5, allowed=allowed) for q in queries[:10]]
    index.rebuild("ivf")
    found = [index.search(q, 5, allowed=allowed) for q in queries[:10]]
    assert [[n for n, _ in row] for row in found] == [[n for n, _ in row] for row in exact]


def test_forgetting_is_immediate_under_ivf(filled: tuple[VectorIndex, list[str], Any]) -> None:
    index, names, queries = filled
    index.rebuild("ivf")
    gone = {name for row in top(index, queries[:5]) for name in row}
    assert index.remove(gone) == len(gone)
    # Not a single search returns them: not before a save, not with a filter, not read back.
    assert not gone & {name for row in top(index, queries, 50) for name in row}
    assert not gone & {n for n, _ in index.search(queries[0], 50, allowed=set(names))}
    index.save()
    assert not gone & set(VectorIndex(index.folder, DIM, "hashing").ids())
    assert len(index) == 3000 - len(gone)
    # A replaced vector is found once, at its new place.
    index.upsert(["m1"], queries[7:8])
    hits = [name for name, _ in index.search(queries[7], 10)]
    assert hits[0] == "m1" and hits.count("m1") == 1


def test_changes_during_a_rebuild_are_replayed_and_searches_go_on(
    filled: tuple[VectorIndex, list[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    index, _names, queries = filled
    real_build = approximate.build
    searched: list[list[str]] = []

    def build_while_others_work(matrix: Any, fids: Any, target: str) -> Any:
        # Another thread searches while the build runs: it must not wait for the build.
        thread = threading.Thread(target=lambda: searched.append(top(index, queries[:1])[0]))
        thread.start()
        thread.join(timeout=60)
        assert not thread.is_alive()
        index.remove(["m0", "m2"])  # a forget and a write that land mid-build
        index.upsert(["new"], queries[3:4])
        return real_build(matrix, fids, target)

    monkeypatch.setattr(approximate, "build", build_while_others_work)
    assert index.rebuild("ivf")
    assert len(searched) == 1 and len(searched[0]) == 10
    ids = set(index.ids())
    assert "m0" not in ids and "m2" not in ids and "new" in ids and len(index) == 2999
    assert index.search(queries[3], 1)[0][0] == "new"


def test_the_size_decides_the_kind(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    index = VectorIndex(tmp_path / "v", DIM, "hashing")
    index.upsert([f"m{n}" for n in range(400)], clustered(400))
    monkeypatch.setattr(approximate, "THRESHOLD", 1000)
    assert not index.rebuild()  # 400 < 1000: stays exact
    monkeypatch.setattr(approximate, "THRESHOLD", 300)
    assert index.rebuild() and index.kind() == "ivf"
    assert not index.rebuild()  # trained for this size already
    index.remove([f"m{n}" for n in range(300)])
    assert index.rebuild() and index.kind() == "flat" and len(index) == 100


def test_sleep_moves_a_large_vault_to_ivf_and_forget_stays_immediate(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = [brain.remember(f"note {n} about topic{n % 7} and thing{n}") for n in range(40)]
    brain._context.flush()
    assert brain._context.caches.vectors.kind() == "flat"
    monkeypatch.setattr(approximate, "THRESHOLD", 20)
    report = brain.sleep()
    assert dict(report.steps)["vectors"].startswith("ivf")
    assert brain._context.caches.vectors.kind() == "ivf"
    target = notes[5]

    def found(k: int) -> set[str]:
        return {h.id.split("#")[0] for h in brain.recall("topic5 thing5", k=k, mode="vector")}

    assert target.id in found(10)
    brain.forget(target.id)
    assert target.id not in found(40)
    assert all(not oid.startswith(target.id) for oid in brain._context.caches.vectors.ids())


def test_a_reindex_of_a_large_vault_builds_ivf_at_once(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(30):
        brain.remember(f"note {n} about topic{n % 5}")
    monkeypatch.setattr(approximate, "THRESHOLD", 20)
    brain.reindex()
    assert (
        brain._context.caches.vectors.kind() == "ivf" and len(brain._context.caches.vectors) >= 30
    )


def test_sleeps_rebuild_holds_no_writer_lock_and_keeps_what_others_did_meanwhile(
    brain: Brain, vault: Path, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (a second Brain: its own lock on its own file descriptor, as a process
    would have) remembers, forgets and recalls while sleep builds the IVF index: none of it
    waits for the build, and the swapped-in index holds what it did."""
    notes = [brain.remember(f"note {n} about topic{n % 7} and thing{n}") for n in range(40)]
    brain._context.flush()
    monkeypatch.setattr(approximate, "THRESHOLD", 20)
    other = open_vault(vault, clock=clock)
    other._context.lock.timeout = 2.0  # were the lock held for the build, this would fail, not hang
    during: dict[str, Any] = {}
    real_build = approximate.build

    def build_while_another_process_works(matrix: Any, fids: Any, target: str) -> Any:
        during["new"] = other.remember("the quince jelly set overnight", title="Quince")
        other.forget(notes[3].id)
        during["hits"] = [h.id for h in other.recall("quince jelly", mode="vector")]
        return real_build(matrix, fids, target)

    monkeypatch.setattr(approximate, "build", build_while_another_process_works)
    report = brain.sleep()
    assert dict(report.steps)["vectors"].startswith("ivf") and "rebuilt" in report.steps[-1][1]
    assert during["new"].id in during["hits"]
    ids = {oid.split("#")[0] for oid in brain._context.caches.vectors.ids()}
    assert during["new"].id in ids and notes[3].id not in ids
    assert during["new"].id in {h.id for h in brain.recall("quince jelly", mode="vector")}
    assert notes[3].id not in {h.id for h in brain.recall("topic3 thing3", k=40, mode="vector")}
    other.close()
