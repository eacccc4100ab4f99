"""A question asked in the first person lifts what its asker said of themselves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import HashingSparse
from brain._recall import persons, pipeline
from brain._recall.persons import FIRST_PERSON, asks_of_asker, with_speaker
from brain._recall.question import read

_register()

TOLD = "user: I got my beagle Rex in March. Any tips for walking him?"
ANSWERED = "assistant: Walks suit a beagle: give your dog a routine for the first weeks."
QUESTION = "When did I get my beagle?"


@pytest.mark.parametrize(
    ("question", "of_asker"),
    [
        ("When did I get my beagle?", True),
        ("What's the name of my dog?", True),
        ("What did you suggest for my trip?", False),  # what was said to the asker
        ("What did Caroline research?", False),  # third person: the name prior's
        # "you" asked for something new: the question is of the asker's own camera
        ("Can you suggest accessories for my current camera setup?", True),
        ("Could you help me plan meals for my week?", True),
        # "you" asked back for what they said
        ("Can you remind me what the fifth bottle was?", False),
        ("Can you suggest more places like the ones you listed for my trip?", False),
    ],
)
def test_a_question_asks_of_its_asker(question: str, of_asker: bool) -> None:
    assert asks_of_asker(question) is of_asker


def test_a_question_about_asking_is_not_of_the_askers_own_words() -> None:
    now = datetime.now(UTC)
    assert read("Which classes did I ask about?", now).of_asker is False
    assert read("Which classes did I take?", now).of_asker is True


def test_the_askers_own_words_are_lifted_in_the_head_only() -> None:
    ranked = [("said-to", 1.0), ("own", 0.8), ("other", 0.5)]
    texts = {"said-to": ANSWERED, "own": TOLD, "other": "assistant: Sure."}
    out, factors = with_speaker(ranked, texts, of_asker=True)
    assert factors == {"own": FIRST_PERSON}
    assert [oid for oid, _ in out] == ["own", "said-to", "other"]
    assert with_speaker(ranked, texts, of_asker=False) == (ranked, {})


@pytest.fixture
def chat(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    brain = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    for text in (TOLD, ANSWERED, "user: What should I cook tonight?", "assistant: Try a risotto."):
        clock.set(clock.now() + timedelta(hours=2))  # apart: no neighbour context between them
        brain.remember(text)
    yield brain
    brain.close()


def test_recall_finds_the_askers_own_words_first(
    chat: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    hits = chat.recall(QUESTION, k=3, explain=True)
    assert hits[0].title.startswith("user: I got")
    assert hits[0].explain is not None and hits[0].explain["speaker"] == FIRST_PERSON
    # Without the stage every retriever and prior puts what was said to the asker first.
    monkeypatch.setattr(pipeline, "with_speaker", lambda ranked, _t, _o: (list(ranked), {}))
    assert chat.recall(QUESTION, k=3)[0].title.startswith("assistant:")
    assert persons.FIRST_PERSON > 1


def test_cli_explain_shows_the_askers_own_words(chat: Brain, cli: CliRunner) -> None:
    chat.close()
    res = cli.invoke(app, ["recall", QUESTION, "--explain"])
    assert res.exit_code == 0, res.output
    assert f"asker's own words ×{FIRST_PERSON}" in res.output
    res = cli.invoke(app, ["recall", QUESTION, "--explain", "--json"])
    assert json.loads(res.output)["hits"][0]["explain"]["speaker"] == FIRST_PERSON
