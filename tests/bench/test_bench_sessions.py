"""bench/sessions.py: a session as one document, and the prior it lends its hits."""

from __future__ import annotations

from bench.sessions import SessionHit, bm25_scores, fused_with, lifted, normalised, shuffled


def test_a_question_spread_over_a_sitting_finds_the_sitting() -> None:
    # No single turn of D1 holds both "guitar" and "brand"; the session as a whole does.
    sessions = {
        "D1": ["Ann: I bought a guitar", "Bob: Which brand?", "Ann: A Fender, second hand"],
        "D2": ["Ann: The guitar lesson was fun", "Bob: Great"],
        "D3": ["Ann: Pizza tonight?", "Bob: Sure"],
    }
    scores = bm25_scores(sessions, "Which brand of guitar did Ann buy?")
    assert max(scores, key=scores.__getitem__) == "D1"
    assert scores["D3"] < scores["D2"] < scores["D1"]


def test_normalised_by_the_best_and_by_rank() -> None:
    out = normalised({"D1": 1.0, "D2": 4.0, "D3": 0.0})
    assert out["max"] == {"D1": 0.25, "D2": 1.0, "D3": 0.0}
    assert out["rank"] == {"D2": 1.0, "D1": 0.5, "D3": 1 / 3}
    assert normalised({"D1": 0.0})["max"] == {"D1": 0.0}


def test_the_control_deals_the_same_scores_again() -> None:
    scores = {f"D{i}": float(i) for i in range(20)}
    dealt = shuffled(scores, "q")
    assert sorted(dealt.values()) == sorted(scores.values()) and dealt != scores
    assert dealt == shuffled(scores, "q")


def _hit(key: str, score: float, prior: float) -> SessionHit:
    return SessionHit(key, score, 10.0, session=key.split(":")[0], prior={"bm25/max": prior})


def test_a_hit_of_the_better_session_moves_up_within_the_depth_only() -> None:
    head = [_hit("D2:1", 1.0, 0.0), _hit("D1:4", 0.9, 1.0), _hit("D1:5", 0.8, 1.0)]
    assert [h.key for h in lifted("bm25/max", 0.2, 3)(list(head))] == ["D1:4", "D2:1", "D1:5"]
    assert [h.key for h in lifted("bm25/max", 0.2, 1)(list(head))] == ["D2:1", "D1:4", "D1:5"]
    assert [h.key for h in lifted("bm25/max", 0.0, 3)(list(head))] == ["D2:1", "D1:4", "D1:5"]


def test_rank_fusion_keeps_todays_order_within_a_session() -> None:
    head = [_hit("D2:1", 1.0, 0.0), _hit("D1:4", 0.9, 0.0), _hit("D1:5", 0.8, 0.0)]
    for h, rank in zip(head, (0.5, 1.0, 1.0), strict=True):
        h.prior["bm25/rank"] = rank
    order = [h.key for h in fused_with("bm25", 3)(list(head))]
    assert order.index("D1:4") < order.index("D1:5")
