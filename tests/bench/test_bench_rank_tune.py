"""bench/rank_tune.py: a variant named by its fusion weights sets them while it is asked."""

import pytest

from bench.rank_tune import _parts, _variant
from brain._recall import rank


def test_weights_are_set_inside_the_variant_and_restored_after() -> None:
    before = dict(rank.WEIGHTS), rank.CONTEXT_WEIGHT
    parts = _parts("w_sparse=1.5+w_context=0.25")
    assert parts == ("w_sparse=1.5", "w_context=0.25")
    with _variant(parts):
        inside = dict(rank.WEIGHTS), rank.CONTEXT_WEIGHT
    after = dict(rank.WEIGHTS), rank.CONTEXT_WEIGHT
    assert inside == ({**before[0], "sparse": 1.5}, 0.25)
    assert after == before
    assert _parts("today") == ()


def test_an_unknown_weight_is_named() -> None:
    with pytest.raises(ValueError, match="'bm25'"):
        _variant(("w_bm25=1",))


def test_context_kept_from_long_memories_only() -> None:
    from bench import rank_tune
    from brain._indexes.rows import Brief
    from brain._recall import pipeline

    def row(oid: str) -> Brief:
        return Brief(oid, "main", "Inbox", "active", "private", "memory", "2026-12-07T10:00", None)

    fused = [("long", 1.0), ("short", 0.5)]
    rows = {oid: row(oid) for oid, _ in fused}
    lent = dict(rank.with_context(fused, rows))  # one sitting: both gain the same context
    assert lent["long"] - 1.0 == pytest.approx(lent["short"] - 0.5)
    assert lent["short"] > 0.5
    rank_tune._LENGTHS.update({"long": 2000, "short": 100})
    try:
        with _variant(("context_long=0.0",)):
            kept = dict(pipeline.with_context(fused, rows))
    finally:
        rank_tune._LENGTHS.clear()
    assert kept == {"long": 1.0, "short": lent["short"]}
