"""How each retriever's list is scaled before fusion: a list cut at its depth counts a memory
it did not return as its last score, not as nothing."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import HashingSparse
from brain._recall.rank import fuse, scales

# The learned-sparse terms score almost every memory: their list is always full, its scores
# close together. BM25 finds `answer` first; sparse ranks it just below its cut.
SPARSE = [("a", 10.0), ("b", 9.0), ("last", 8.5)]
TEXT = [("answer", 6.0), ("last", 1.0)]


def test_a_memory_below_a_full_lists_cut_counts_as_its_last() -> None:
    lists = {"text": TEXT, "sparse": SPARSE}
    # Cut at depth 3: `last` is worth no more to the sparse list than `answer`, just below it.
    assert scales(lists, depth=3)["sparse"] == (8.5, 10.0)
    fused = dict(fuse(lists, depth=3))
    assert fused["answer"] > fused["last"]
    assert fused["last"] == pytest.approx(0.6 * 1.0 / 6.0)  # its sparse share is nothing
    # Counted from the floor (0), as before, `last` is lifted by 0.85 for being found at all.
    floor = dict(fuse(lists))
    assert floor["last"] > floor["answer"]


def test_a_list_shorter_than_its_depth_counts_from_the_floor() -> None:
    lists = {"text": TEXT, "sparse": SPARSE}
    # Everything the sparse terms matched is there: an absent memory truly scores nothing.
    assert scales(lists, depth=50) == {"text": (0.0, 6.0), "sparse": (0.0, 10.0)}
    assert fuse(lists, depth=50) == fuse(lists)
    # The vectors' floor is a similarity that means nothing; a full list is cut above it.
    vector = [("a", 0.8), ("b", 0.5)]
    assert scales({"vector": vector}, {"vector": 0.2}, depth=5) == {
        "vector": (0.2, 0.6000000000000001)
    }
    assert scales({"vector": vector}, {"vector": 0.2}, depth=2) == {
        "vector": (0.5, 0.6000000000000001)
    }


def test_explain_shows_each_lists_share_of_the_fused_score(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    try:
        for i in range(60):  # more than the 50 candidates a retriever gives: the lists are cut
            clock.set(clock.now() + timedelta(minutes=5))
            brain.remember(f"Keeper {i} logs the lighthouse weather at dawn", title=f"Log {i}")
        hits = brain.recall("lighthouse weather at dawn", k=10, explain=True)
        assert len(hits) == 10
        for hit in hits:
            assert hit.explain is not None
            shares = [e["share"] for e in hit.explain["retrievers"].values()]
            assert sum(shares) == pytest.approx(hit.explain["fused"], abs=1e-3)
            assert all(s >= 0 for s in shares)
    finally:
        brain.close()
