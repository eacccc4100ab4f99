"""bench/rescore.py: the screens' rules and the anatomy of the misses, on made-up hits."""

from typing import Any

import pytest

from bench.rescore import asking_topical, core_words, misses, names_in, rescored, who_named
from brain._recall.answers import asking_share


def _hit(key: str, speaker: str, body: str, score: float, **f: float) -> dict[str, Any]:
    return {
        "key": key,
        "speaker": speaker,
        "body": body,
        "text": f"{speaker}: {body}",
        "speakers": {"melanie", "caroline"},
        "f": {"score": score, "asks": 1.0, **f},
    }


def test_only_a_closing_question_on_the_querys_words_counts_as_asking() -> None:
    text = "It was Matt Patterson, he is so talented! What's up with you?"
    query = {"perfo", "conce"}  # the bench's five-letter stems of "performed", "concert"
    assert asking_share(text) > 0.3
    assert asking_topical(text, query) == 0.0
    assert asking_topical("Was the concert good? I hope so!", query) == 0.0  # not closing
    assert asking_topical("We went. Which concert was it?", query) == pytest.approx(
        21 / 29
    )  # of 8 + 21 characters


def test_names_are_capitalised_words_past_a_sentences_first() -> None:
    assert names_in("It was Matt Patterson, he sang. Then Anna came.") == {
        "matt",
        "patterson",
        "anna",
    }


def test_who_lifts_a_memory_naming_someone_new_only() -> None:
    question = "Who performed at Melanie's concert?"
    named = _hit("D1:3", "Melanie", "Thanks! It was Matt Patterson.", 1.0)
    unnamed = _hit("D1:1", "Melanie", "We had a concert with Caroline.", 1.0)
    assert who_named(question, named) == 1.2
    assert who_named(question, unnamed) == 1.0
    assert who_named("What did Melanie hear?", named) == 1.0


def test_the_core_ends_at_the_first_setting_word_past_the_third() -> None:
    assert core_words("Which city in Ireland will Tim be staying in during his semester?") == {
        "city",
        "irela",
        "tim",
        "stayi",
    }
    assert core_words("Who is in the photo?") == {"photo"}  # "in" is the third word: kept


def test_a_rescore_reorders_the_head_and_keeps_the_rest() -> None:
    hits = [_hit(f"D1:{i}", "Melanie", "x", 100.0 - i) for i in range(25)]
    line = {"question": "q", "hits": hits}
    new = rescored(line, lambda _q, hit: 2.0 if hit["key"] == "D1:19" else 1.0)
    keys = [hit["key"] for hit in new["hits"]]
    assert keys[0] == "D1:19" and keys[20:] == [f"D1:{i}" for i in range(20, 25)]


def test_the_misses_say_where_the_first_hit_is() -> None:
    hits = [
        _hit("D2:4", "Melanie", "We celebrated with a concert.", 3.0),
        _hit("D2:5", "Caroline", "Who performed?", 2.0),
        _hit("D2:6", "Melanie", "Matt Patterson!", 1.0),
    ]
    lines = [
        {
            "category": 4,
            "gold": ["D2:6"],
            "hits": hits,
            "question": "Who?",
            "answer": "the concert",
        },
        {"category": 4, "gold": ["D2:4"], "hits": hits, "question": "Who?", "answer": "a concert"},
        {"category": 4, "gold": ["D2:4"], "hits": []},
        {"category": 5, "gold": ["D2:6"], "hits": hits},  # not pooled
    ]
    counts = misses(lines, frozenset({1, 2, 3, 4}))
    assert counts["first"] == 1 and counts["evidence 2nd-10th"] == 1
    assert counts["nothing shown (the relevance floor)"] == 1
    assert counts["same speaker"] == 1
    # the evidence the file marks is D2:6, yet the first hit says what the answer says
    assert counts["the first hit holds the answer's words"] == 1
    assert counts["two apart, evidence after, the turn between asks"] == 1
