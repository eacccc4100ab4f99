"""bench/dated.py (dated questions against the rest) and bench/rank_tune.py's variants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from bench.dated import main, split
from bench.locomo_data import Sample, Turn
from bench.rank_tune import _QUESTION_TEXT, _first_named, qa_map
from brain._indexes.embedder import HashingEmbedder

NOW = datetime(2023, 11, 20, tzinfo=UTC)


def _scores(hit: float) -> dict[str, float]:
    return {"hit@1": hit, "hit@10": hit, "ndcg@10": hit}


def test_a_question_that_names_a_time_is_dated_and_the_gap_is_dated_minus_rest() -> None:
    questions = [
        ("What did Nate cook on 9 November, 2023?", NOW),
        ("What did Gina do last week?", NOW),
        ("What is Nate's favourite dish?", NOW),
        ("Where does Gina work?", NOW),
        ("What did Jon buy in May 2023?", NOW),  # category 5: out of the pool
    ]
    scored = [(4, _scores(1.0)), (2, _scores(1.0)), (4, _scores(0.0)), (1, _scores(1.0))]
    scored.append((5, _scores(0.0)))
    parts = split(questions, scored, {1, 2, 3, 4})
    assert parts["dated"]["n"] == 2 and parts["rest"]["n"] == 2
    assert parts["dated"]["hit@1"] == 1.0 and parts["rest"]["hit@1"] == 0.5
    assert parts["gap"]["ndcg@10"] == pytest.approx(0.5)


def test_a_report_of_another_file_is_refused() -> None:
    with pytest.raises(ValueError, match="1 scored questions for 2"):
        split([("a", NOW), ("b", NOW)], [(1, _scores(1.0))], {1})


def test_of_two_speakers_named_apart_only_the_first_is_asked_about() -> None:
    both = _first_named(lambda people, talking, owned, pairs: tuple(people))
    people, talking = ("Gina", "Jon"), ("Gina", "Jon")
    _QUESTION_TEXT[0] = "How does Gina describe the studio that Jon has opened?"
    assert both(people, talking, frozenset(), frozenset()) == ("Gina",)
    _QUESTION_TEXT[0] = "How do Gina and Jon like to destress?"
    assert both(people, talking, frozenset(), frozenset()) == ("Gina", "Jon")
    _QUESTION_TEXT[0] = "What did Gina say about Paris?"  # one speaker: as it was
    assert both(("Gina", "Paris"), ("Gina",), frozenset(), frozenset()) == ("Gina", "Paris")


def _sample(pairs: int) -> Sample:
    turns, start = [], datetime(2023, 1, 1, tzinfo=UTC)
    for i in range(pairs):
        created = start + timedelta(minutes=i)
        turns.append(Turn(f"D1:{2 * i + 1}", 1, "Ann", f"Which colour is box {i}?", created))
        turns.append(Turn(f"D1:{2 * i + 2}", 1, "Bob", f"Box {i} is painted red", created))
    return Sample("s", tuple(turns), ())


def test_the_map_leads_a_question_toward_the_answers_said_after_questions() -> None:
    embedder = HashingEmbedder()
    assert qa_map(_sample(5), embedder) is None  # too few questions answered to learn from
    mapped = qa_map(_sample(40), embedder)
    assert mapped is not None and mapped.shape == (embedder.dim, embedder.dim)
    question, answer = embedder.embed(["Which colour is box 3?", "Box 3 is painted red"])
    moved = question @ mapped
    moved = moved / np.linalg.norm(moved)
    assert float(moved @ answer) > float(question @ answer)


def test_a_report_that_is_not_of_the_file_is_a_clear_error(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text('{"pool": "locomo", "configs": {"today": {"questions": []}}}')
    with pytest.raises(SystemExit) as exited:
        main([str(Path(__file__)), str(report)])  # not a LoCoMo-format file
    assert exited.value.code == 2
