"""A memory's place in the ranking does not depend on how many are asked for; the question is
read once a recall."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import HashingSparse
from brain._recall import answers, names, question, when

WORDS = """lighthouse keeper weather dawn storm harbour boat fish net rope lamp oil tide rock
gull fog bell coast wind rain sail anchor mast deck cabin map compass star night""".split()
QUERIES = [
    "lighthouse keeper storm at dawn",
    "When did the boat leave the harbour?",
    "How many nets of fish came in on the tide?",
    "What did Ada say about the fog bell on 3 March?",
    "oil for the lamp",
]


@pytest.fixture
def busy(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    """A vault of 400 memories sharing a small vocabulary, so every list is cut at its depth."""
    brain = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    chance = random.Random(42)
    with brain.bulk():
        for i in range(400):
            clock.set(clock.now() + timedelta(minutes=chance.choice((0, 1, 90, 2000))))
            said = " ".join(chance.choice(WORDS) for _ in range(chance.randint(4, 14)))
            who = chance.choice(("Ada", "Bo", "Cy"))
            brain.remember(f"{who}: {said}", title=f"{who}: note {i}")
    brain._context.flush()
    yield brain
    brain.close()


@pytest.mark.parametrize("mode", ["hybrid", "text", "sparse"])
def test_the_top_ten_is_the_same_whatever_k(busy: Brain, mode: str) -> None:
    for query in QUERIES:
        ten = [h.id for h in busy.recall(query, k=10, mode=mode)]
        hundred = [h.id for h in busy.recall(query, k=100, mode=mode)]
        assert len(ten) == 10
        assert len(hundred) > 10
        assert hundred[:10] == ten, query
        three = [h.id for h in busy.recall(query, k=3, mode=mode)]
        assert three == ten[:3], query


def test_the_question_is_read_once_a_recall(busy: Brain, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, int] = {}

    def counted(module: Any, name: str) -> None:
        inner = getattr(module, name)

        def spy(*args: Any, **kwargs: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return inner(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)

    # Every parse of the query's text is made by question.read, which names them once each.
    for name in ("parse_time", "query_names", "asked_for", "mentions_of", "content_words"):
        counted(question, name)
    for module, name in ((when, "parse_time"), (names, "query_names"), (answers, "asked_for")):
        counted(module, name)  # any stage calling them directly would be counted here
    busy.recall("What did Ada say about the fog bell on 3 March?", k=10)
    assert calls == {
        "parse_time": 1,
        "query_names": 1,
        "asked_for": 1,
        "mentions_of": 1,
        "content_words": 1,
    }
