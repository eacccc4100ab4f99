"""A time the query names is a place to look: each retriever lists its best memories of that
time too, so one that every list cut off can still be found (recall/pipeline.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.fulltext import Filters
from brain._indexes.sparse import HashingSparse
from brain._recall import pipeline
from brain._recall.rank import Briefs, TextRetriever, VectorRetriever, fuse, scales

QUERY = "What did the keeper log about the lighthouse weather on 9 May, 2023?"
THEN = datetime(2023, 5, 9, 18, 0, tzinfo=UTC)


def _vault(vault: Path, clock: FixedClock) -> tuple[Brain, str]:
    """70 memories that match the query's words well, written in April, and one of 9 May that
    matches only two of them: below the cut of every list."""
    brain = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    clock.set(datetime(2023, 4, 1, 8, 0, tzinfo=UTC))
    for i in range(70):
        clock.set(clock.now() + timedelta(minutes=5))
        brain.remember(f"Keeper {i} logs the lighthouse weather at dawn", title=f"Log {i}")
    clock.set(THEN)
    said = brain.remember("Fog rolled over the lighthouse all evening", title="Evening fog")
    clock.set(datetime(2023, 6, 1, 9, 0, tzinfo=UTC))
    return brain, said.id


def test_a_memory_of_the_named_day_is_found_though_every_list_cut_it(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain, said = _vault(vault, clock)
    try:
        hits = brain.recall(QUERY, k=5, explain=True)
        assert said in [h.id for h in hits]
        why = next(h.explain for h in hits if h.id == said)
        assert why is not None and why["time"] > 1.0
        # It was in no retriever's first list: only the lists of the named day held it.
        monkeypatch.setattr(pipeline, "WINDOW_MOST", 0)  # never look at the named time
        assert said not in [h.id for h in brain.recall(QUERY, k=5)]
        assert said not in [h.id for h in brain.recall(QUERY, k=50)]
    finally:
        brain.close()


def test_shares_add_up_with_the_lists_of_a_named_time(vault: Path, clock: FixedClock) -> None:
    brain, _ = _vault(vault, clock)
    try:
        for hit in brain.recall(QUERY, k=10, explain=True):
            assert hit.explain is not None
            shares = [e["share"] for e in hit.explain["retrievers"].values()]
            assert sum(shares) == pytest.approx(hit.explain["fused"], abs=1e-3)
            assert all(s >= -1e-9 for s in shares)
    finally:
        brain.close()


def test_a_broad_time_is_left_to_the_prior(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More memories than WINDOW_MOST in the window: no second search (its cost would grow
    with the vault), only the prior."""
    brain, _ = _vault(vault, clock)
    asked: list[Filters] = []
    search = TextRetriever.search

    def counted(self: TextRetriever, query: str, k: int, filters: Filters) -> object:
        asked.append(filters)
        return search(self, query, k, filters)

    monkeypatch.setattr(TextRetriever, "search", counted)
    try:
        brain.recall("What did the keepers log in April 2023?", k=5)
        assert any(f.ids is not None for f in asked)  # 70 memories: looked at
        asked.clear()
        monkeypatch.setattr(pipeline, "WINDOW_MOST", 60)
        brain.recall("What did the keepers log in April 2023?", k=5)
        assert all(f.ids is None for f in asked)
    finally:
        brain.close()


def test_each_retriever_keeps_to_the_ids_it_is_given(vault: Path, clock: FixedClock) -> None:
    brain, said = _vault(vault, clock)
    try:
        brain._context.flush()  # what recall does first: the queued text and vectors indexed
        some = {o.id for o in brain._context.caches.catalog.select("title IN ('Log 3', 'Log 40')")}
        allowed = Filters(partition=brain.partition, ids=frozenset({*some, said}))
        briefs = Briefs(brain._context.caches.catalog)
        text = TextRetriever(brain._context.caches.fulltext, briefs=briefs)
        vector = VectorRetriever(brain._context.caches, HashingEmbedder(), briefs=briefs)
        for retriever in (text, vector):
            found = retriever.search("lighthouse weather", 50, allowed)
            assert found and {oid for oid, _ in found} <= allowed.ids  # type: ignore[operator]
        assert brain._context.caches.catalog.ids_matching(allowed) == allowed.ids
    finally:
        brain.close()


def test_the_named_days_are_read_by_the_catalogs_index(vault: Path, clock: FixedClock) -> None:
    brain, said = _vault(vault, clock)
    try:
        catalog = brain._context.caches.catalog
        found = catalog.written_between(brain.partition, "2023-05-09", "2023-05-17", 10)
        assert [b.id for b in found] == [said]
        plan = " ".join(
            str(row)
            for row in catalog.db.execute(
                "EXPLAIN QUERY PLAN SELECT id FROM objects "
                "WHERE partition=? AND created>=? AND created<?",
                ("main", "2023-05-09", "2023-05-17"),
            )
        )
        assert "objects_created" in plan
    finally:
        brain.close()


def test_a_memory_of_a_whole_list_counts_from_the_floor() -> None:
    """A list of a named time shorter than its depth held every memory of that time: nothing
    below it was cut off, so its memories count from the floor, as any short list's do."""
    first = {"text": [("a", 10.0), ("b", 6.0)]}
    scaled = scales(first, depth=2)  # full: cut at 6
    later = {"text": [("a", 10.0), ("b", 6.0), ("then", 3.0)]}
    there = {"text": (frozenset({"then"}), 0.0)}
    fused = dict(fuse(later, scaled=scaled, then=there))
    assert fused["then"] == pytest.approx(0.6 * 3.0 / 10.0)
    assert fused["b"] == 0.0  # the first list's cut
