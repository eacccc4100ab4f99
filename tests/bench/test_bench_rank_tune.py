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
