"""Tests for the LoCoMo (Maharana et al. 2024) benchmark loader, metrics and BM25."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.bm25_baseline import BM25, run, tokenize
from bench.locomo_data import (
    FALLBACK_DATE,
    Turn,
    load,
    normalise_evidence,
    normalise_evidence_id,
)
from bench.metrics import (
    LME_METRICS,
    METRICS,
    aggregate,
    percentile,
    score_longmemeval,
    score_question,
    session_of,
)

DEV_FILE = Path(__file__).resolve().parents[3] / "shared" / "bench" / "locomo-dev.json"


# --- metrics --------------------------------------------------------------------------


def test_worked_example() -> None:
    gold = frozenset({"D1:3", "D2:5"})
    ranking = ["D1:1", "D2:5", "D1:3", "D4:1", "D5:2"]
    s = score_question(ranking, gold)
    assert set(s) == set(METRICS)
    assert s["hit@1"] == 0.0
    assert s["hit@5"] == 1.0
    assert s["hit@10"] == 1.0
    assert s["recall_all@10"] == 1.0
    assert s["mrr"] == 0.5
    expected = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert s["ndcg@10"] == pytest.approx(expected)
    assert s["session_hit@5"] == 1.0


def test_perfect_ranking() -> None:
    s = score_question(["D1:3", "D2:5"], frozenset({"D1:3", "D2:5"}))
    assert all(s[name] == pytest.approx(1.0) for name in METRICS)


def test_no_gold_returned() -> None:
    s = score_question(["D3:1", "D3:2", "D4:1"], frozenset({"D1:3"}))
    assert all(value == 0.0 for value in s.values())


def test_empty_ranking() -> None:
    s = score_question([], frozenset({"D1:3"}))
    assert all(value == 0.0 for value in s.values())


def test_empty_gold_rejected() -> None:
    with pytest.raises(ValueError):
        score_question(["D1:1"], frozenset())


def test_fewer_than_ten_results() -> None:
    s = score_question(["D1:3"], frozenset({"D1:3", "D2:5"}))
    assert s["hit@1"] == s["hit@5"] == s["hit@10"] == 1.0
    assert s["recall_all@10"] == 0.0
    assert s["mrr"] == 1.0
    assert s["ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_gold_just_outside_cutoffs() -> None:
    ranking = [f"D9:{i}" for i in range(1, 11)] + ["D1:3"]  # gold at rank 11
    s = score_question(ranking, frozenset({"D1:3"}))
    assert s["hit@10"] == 0.0
    assert s["ndcg@10"] == 0.0
    assert s["recall_all@10"] == 0.0
    assert s["mrr"] == pytest.approx(1 / 11)  # mrr has no cut-off beyond the list
    ranking = [f"D9:{i}" for i in range(1, 6)] + ["D1:3"]  # rank 6
    s = score_question(ranking, frozenset({"D1:3"}))
    assert (s["hit@5"], s["hit@10"]) == (0.0, 1.0)
    assert s["ndcg@10"] == pytest.approx(1 / math.log2(7))


def test_ideal_dcg_capped_at_ten() -> None:
    gold = frozenset(f"D1:{i}" for i in range(1, 13))  # 12 gold ids
    s = score_question([f"D1:{i}" for i in range(1, 11)], gold)
    assert s["ndcg@10"] == pytest.approx(1.0)
    assert s["recall_all@10"] == 0.0  # two gold ids never returned


def test_duplicates_count_once() -> None:
    # Collapsed: D2:2 is the second distinct id, so rank 2.
    s = score_question(["D1:1"] * 5 + ["D2:2"], frozenset({"D2:2"}))
    assert s["hit@1"] == 0.0
    assert s["hit@5"] == 1.0
    assert s["mrr"] == 0.5
    assert s["ndcg@10"] == pytest.approx(1 / math.log2(3))
    # A repeated gold id earns its gain once.
    s = score_question(["D1:3", "D1:3", "D1:3"], frozenset({"D1:3", "D2:5"}))
    assert s["ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert s["recall_all@10"] == 0.0


def test_session_hit_uses_distinct_sessions() -> None:
    # Gold session D2 is the 2nd distinct session though its turn is at rank 7.
    ranking = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D1:6", "D2:9"]
    s = score_question(ranking, frozenset({"D2:1"}))
    assert s["hit@5"] == 0.0
    assert s["hit@10"] == 0.0
    assert s["session_hit@5"] == 1.0
    # Gold session D6 is the 6th distinct session: outside the first five.
    ranking = ["D1:1", "D2:1", "D3:1", "D4:1", "D5:1", "D6:1"]
    s = score_question(ranking, frozenset({"D6:1"}))
    assert s["hit@10"] == 1.0
    assert s["session_hit@5"] == 0.0


def test_session_of() -> None:
    assert session_of("D12:7") == "D12"
    assert session_of("weird") == "weird"


def test_aggregate() -> None:
    one = dict.fromkeys(METRICS, 1.0)
    zero = dict.fromkeys(METRICS, 0.0)
    result = aggregate([(1, one), (1, zero), (4, one), (5, zero), (5, zero)])
    assert result["pooled"] == pytest.approx(dict.fromkeys(METRICS, 2 / 3))
    assert list(result["by_category"]) == ["1", "4", "5"]
    assert result["by_category"]["1"]["mrr"] == 0.5
    assert result["by_category"]["4"]["hit@1"] == 1.0
    assert result["by_category"]["5"]["hit@1"] == 0.0
    assert result["count"] == {"pooled": 3, "1": 2, "4": 1, "5": 2}


def test_aggregate_without_pooled_categories() -> None:
    result = aggregate([(5, dict.fromkeys(METRICS, 1.0))])
    assert result["pooled"] == {}
    assert result["count"] == {"pooled": 0, "5": 1}
    empty = aggregate([])
    assert (empty["pooled"], empty["by_category"], empty["count"]) == (
        {},
        {},
        {"pooled": 0},
    )


def test_percentile_linear() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 95) == pytest.approx(3.85)
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


# --- evidence normalisation -----------------------------------------------------------

KNOWN = frozenset({"D1:1", "D1:2", "D4:4", "D8:6", "D9:1", "D9:17", "D11:26", "D30:5"})


def test_evidence_id_repairs() -> None:
    assert normalise_evidence_id("D3:7") == "D3:7"
    assert normalise_evidence_id("D:11:26") == "D11:26"
    assert normalise_evidence_id("D30:05") == "D30:5"
    assert normalise_evidence_id("D") is None
    assert normalise_evidence_id("") is None


@pytest.mark.parametrize(
    ("evidence", "expected"),
    [
        (["D8:6; D9:17"], {"D8:6", "D9:17"}),
        (["D9:1 D4:4"], {"D9:1", "D4:4"}),
        (["D1:1,D1:2"], {"D1:1", "D1:2"}),
        (["D:11:26"], {"D11:26"}),
        (["D30:05"], {"D30:5"}),
        (["D1:1", "D1:1"], {"D1:1"}),
        (["D2:3"], set()),  # names no turn
        (["D"], set()),  # malformed beyond repair
        ([], set()),
    ],
)
def test_normalise_evidence(evidence: list[str], expected: set[str]) -> None:
    assert normalise_evidence(evidence, KNOWN) == frozenset(expected)


# --- loader ---------------------------------------------------------------------------


def _turn(dia_id: str, speaker: str, text: str, **extra: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def _tiny() -> list[dict[str, Any]]:
    conversation: dict[str, Any] = {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            _turn("D1:1", "Ann", "I adopted a cat."),
            _turn("D1:2", "Bob", "Nice!", blip_caption="a photo of a cat"),
        ],
        "session_2_date_time": "9:05 am on 20 June, 2023",
        "session_2": [_turn("D2:1", "Bob", "I ran a marathon.")],
        "session_10_date_time": "11:00 pm on 1 December, 2023",
        "session_10": [_turn("D10:1", "Ann", "Snow today.")],
        # A date for a session without turns, and a session without a date.
        "session_3_date_time": "10:00 am on 1 July, 2023",
        "session_4": [_turn("D4:1", "Ann", "Back from holiday.")],
    }
    qa = [
        {"question": "What pet?", "answer": "cat", "evidence": ["D1:1"], "category": 4},
        {
            "question": "When?",
            "answer": 2023,
            "evidence": ["D1:1; D2:1"],
            "category": 2,
        },
        {
            "question": "Multi?",
            "answer": "x",
            "evidence": ["D:1:2", "D10:01"],
            "category": 1,
        },
        {"question": "Ghost?", "answer": "y", "evidence": ["D7:7", "D"], "category": 3},
        {"question": "None?", "answer": "z", "evidence": [], "category": 3},
        {
            "question": "Bob's cat?",
            "adversarial_answer": "a tabby",
            "evidence": ["D1:1"],
            "category": 5,
        },
    ]
    return [{"sample_id": "tiny-1", "conversation": conversation, "qa": qa}]


def _write(tmp_path: Path, data: Any, name: str = "tiny.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_load_tiny(tmp_path: Path) -> None:
    (sample,) = load(_write(tmp_path, _tiny()))
    assert sample.sample_id == "tiny-1"
    assert [t.dia_id for t in sample.turns] == ["D1:1", "D1:2", "D2:1", "D4:1", "D10:1"]
    assert [t.session for t in sample.turns] == [1, 1, 2, 4, 10]
    first = sample.turns[0]
    assert first.memory_text == "Ann: I adopted a cat."
    assert first.created == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert first.blip_caption is None
    assert sample.turns[1].blip_caption == "a photo of a cat"
    assert sample.turns[4].created == datetime(2023, 12, 1, 23, 0, tzinfo=UTC)
    # session_4 has no date: it inherits the nearest earlier dated session
    # (session 3, which has a date but no turns).
    assert sample.turns[3].created == datetime(2023, 7, 1, 10, 0, tzinfo=UTC)

    questions = {q.question: q for q in sample.questions}
    assert set(questions) == {"What pet?", "When?", "Multi?", "Bob's cat?"}
    assert sample.skipped_questions == 2
    assert questions["When?"].gold == {"D1:1", "D2:1"}
    assert questions["When?"].answer == "2023"
    assert questions["Multi?"].gold == {"D1:2", "D10:1"}
    adversarial = questions["Bob's cat?"]
    assert adversarial.category == 5
    assert adversarial.answer is None
    assert adversarial.adversarial_answer == "a tabby"


def test_date_fallbacks(tmp_path: Path) -> None:
    data = _tiny()
    conversation = data[0]["conversation"]
    del conversation["session_1_date_time"]  # no earlier date: take the next one (session 2)
    (sample,) = load(_write(tmp_path, data))
    assert sample.turns[0].created == datetime(2023, 6, 20, 9, 5, tzinfo=UTC)
    for key in [k for k in conversation if k.endswith("_date_time")]:
        del conversation[key]
    (sample,) = load(_write(tmp_path, data))
    assert {t.created for t in sample.turns} == {FALLBACK_DATE}


def test_turn_is_frozen() -> None:
    turn = Turn("D1:1", 1, "Ann", "hi", FALLBACK_DATE, None)
    with pytest.raises(AttributeError):
        turn.text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: {"not": "a list"}, "list of samples"),
        (lambda d: [{"conversation": {}, "qa": []}], "sample_id"),
        (lambda d: [{"sample_id": "x", "qa": []}], "conversation"),
        (lambda d: [{**d[0], "qa": {}}], "'qa' is not a list"),
        (
            lambda d: [
                {
                    **d[0],
                    "conversation": {
                        **d[0]["conversation"],
                        "session_1_date_time": "May",
                    },
                }
            ],
            "session_1_date_time",
        ),
        (
            lambda d: [{**d[0], "conversation": {**d[0]["conversation"], "session_2": "oops"}}],
            "session_2",
        ),
        (
            lambda d: [
                {
                    **d[0],
                    "conversation": {
                        **d[0]["conversation"],
                        "session_2": [_turn("D1:1", "Bob", "dup")],
                    },
                }
            ],
            "duplicate dia_id",
        ),
        (
            lambda d: [{**d[0], "qa": [{"question": "q", "evidence": ["D1:1"]}]}],
            "category",
        ),
        (lambda d: [d[0], d[0]], "duplicate sample_id"),
    ],
)
def test_load_errors(tmp_path: Path, mutate: Any, reason: str) -> None:
    path = _write(tmp_path, mutate(_tiny()), "bad.json")
    with pytest.raises(ValueError, match=reason) as info:
        load(path)
    assert "bad.json" in str(info.value)


def test_load_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("[{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json"):
        load(path)


# --- BM25 baseline --------------------------------------------------------------------


def test_tokenize() -> None:
    assert tokenize("Ann: What's UP, 2023?") == ["ann", "what", "s", "up", "2023"]


def test_bm25_ranks_matching_turn_first() -> None:
    index = BM25([("a", "the cat sat"), ("b", "the dog ran far"), ("c", "nothing here")])
    hits = index.search("where did the dog go", k=10)
    assert [doc for doc, _ in hits] == ["b", "a"]  # "c" shares no term and is left out
    assert hits[0][1] > hits[1][1] > 0


def test_run_on_tiny(tmp_path: Path) -> None:
    report = run(load(_write(tmp_path, _tiny())))
    assert report["count"] == {"pooled": 3, "1": 1, "2": 1, "4": 1, "5": 1}
    assert report["memories"] == 5


# --- the real dev split (evaluation only; not part of the repo) -----------------------


@pytest.mark.skipif(not DEV_FILE.exists(), reason="LoCoMo dev split not available")
def test_load_dev_split() -> None:
    samples = load(DEV_FILE)
    assert [s.sample_id for s in samples] == [
        "conv-26",
        "conv-30",
        "conv-41",
        "conv-42",
        "conv-43",
    ]
    for sample in samples:
        ids = {t.dia_id for t in sample.turns}
        assert len(ids) == len(sample.turns) > 300
        assert len(sample.questions) > 80
        assert all(q.gold <= ids for q in sample.questions)
        assert all(1 <= q.category <= 5 for q in sample.questions)
        assert all(t.created.tzinfo is not None for t in sample.turns)
        assert [t.session for t in sample.turns] == sorted(t.session for t in sample.turns)
    assert sum(len(s.turns) for s in samples) == 2760
    assert sum(s.skipped_questions for s in samples) == 2
    categories = [q.category for s in samples for q in s.questions]
    assert len(categories) == 997
    assert categories.count(5) == 237
    conv26 = samples[0]
    assert len({t.session for t in conv26.turns}) == 19  # 35 date keys, 19 sessions with turns
    (packed,) = [q for q in conv26.questions if q.gold == {"D8:6", "D9:17"}]
    assert packed.category in {1, 2, 3, 4}


def test_recall_swap_puts_the_other_checkouts_piece_in_place(tmp_path: Path) -> None:
    """bench.recall_swap loads another checkout's copy of a module beside this one and names
    the piece to swap."""
    from bench import recall_ahead
    from bench.recall_swap import swaps

    other = tmp_path / "bench"
    other.mkdir()
    (other / "recall_ahead.py").write_text("def median(values):\n    return -1.0\n")
    ((owner, attr, mine, theirs),) = swaps(tmp_path, ["bench.recall_ahead:median"])
    assert owner is recall_ahead and attr == "median" and mine is recall_ahead.median
    assert mine([1.0, 2.0, 3.0]) == 2.0 and theirs([1.0, 2.0, 3.0]) == -1.0
    with pytest.raises(SystemExit, match="MODULE:NAME"):
        swaps(tmp_path, ["bench.recall_ahead"])
    with pytest.raises(SystemExit, match="no "):
        swaps(tmp_path, ["bench.recall_kept:warmed"])


# --- LongMemEval's metrics, its question dates, memories over the size limit ----------


def test_longmemeval_metrics_as_its_evaluation_code_has_them() -> None:
    gold = frozenset({"D1:3", "D2:5"})
    s = score_longmemeval(["D1:1", "D2:5", "D3:1", "D1:3"], gold)
    assert set(s) == set(LME_METRICS)
    assert s["turn_recall_any@5"] == s["turn_recall_all@5"] == 1.0
    # Its DCG gives ranks 1 and 2 the same gain: rel_1 + sum rel_i / log2(i).
    assert s["turn_ndcg_any@5"] == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1))
    # Sessions: D1, D2, D3 in that order; both gold sessions in the top 5.
    assert s["session_ndcg_any@5"] == pytest.approx((1 + 1) / (1 + 1))
    missing = score_longmemeval(["D1:3"], gold)
    assert (missing["turn_recall_any@10"], missing["turn_recall_all@10"]) == (1.0, 0.0)


def _longmemeval_like() -> list[dict[str, Any]]:
    huge = "word " * 20_000  # 100 kB: over the default 64 KiB limit
    return [
        {
            "sample_id": "q1",
            "conversation": {
                "speaker_a": "user",
                "speaker_b": "assistant",
                "session_1_date_time": "9:00 am on 1 May, 2023",
                "session_1": [
                    {"dia_id": "D1:1", "speaker": "user", "text": "I planted tomatoes."},
                    {"dia_id": "D1:2", "speaker": "assistant", "text": huge},
                ],
                "session_2_date_time": "9:00 am on 20 May, 2023",
                "session_2": [
                    {"dia_id": "D2:1", "speaker": "user", "text": "I planted basil today."},
                ],
            },
            "qa": [
                {
                    "question": "What did I plant three weeks ago?",
                    "answer": "basil",
                    "evidence": ["D2:1"],
                    "category": 3,
                    "question_type": "temporal-reasoning",
                    "question_id": "q1",
                    "question_date": "2023/06/10 (Sat) 10:00",
                }
            ],
        }
    ]


def test_the_bench_asks_at_the_question_date_and_clips_what_is_too_long(tmp_path: Path) -> None:
    from bench import locomo

    path = _write(tmp_path, _longmemeval_like())
    (sample,) = load(path)
    assert sample.questions[0].asked == datetime(2023, 6, 10, 10, 0, tzinfo=UTC)
    out = tmp_path / "out.json"
    args = [str(path), "--out", str(out), "--embedder", "hashing", "--configs", "bm25,hybrid"]
    assert locomo.main(args) == 0
    report = json.loads(out.read_text())
    assert report["clipped"] == 1  # counted, not an abort
    assert report["pool"] == "all"  # LongMemEval's types are all pooled
    hybrid = report["configs"]["hybrid"]
    assert set(LME_METRICS) <= set(hybrid["pooled"])
    # Asked on 10 June, three weeks ago is mid-May: basil (20 May) first; asked at the last
    # memory's date (20 May) it would be late April, and tomatoes (1 May) would come first.
    assert hybrid["pooled"]["hit@1"] == 1.0
    assert report["configs"]["bm25"]["pooled"]["hit@10"] == 1.0


def test_a_bad_question_date_is_one_clear_error(tmp_path: Path) -> None:
    data = _longmemeval_like()
    data[0]["qa"][0]["question_date"] = "someday"
    with pytest.raises(ValueError, match="question_date"):
        load(_write(tmp_path, data))
