"""A short reply to a question borrows the relevance of the question it answers."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import HashingSparse
from brain._recall import replies
from brain._recall.replies import REPLY, previous, with_replies

_register()

SITTING = (
    "John: Guess what, Tim! Big news from last week, a dream come true.",
    "Tim: Congrats John! Which team did you sign with?",
    "John: The Minnesota Wolves! Can't wait to play.",
    "Tim: Awesome, they're lucky to have you.",
)
ELSEWHERE = (
    "John: Our team trained hard for the season opener, the new coach is strict.",
    "Tim: I signed up for a pottery class, the teacher is great.",
)
QUESTION = "Which team did John sign with?"


def test_the_memory_before_is_the_nearest_earlier_neighbour() -> None:
    around = {"03": ("01", "02", "04", "05")}  # ids are ULIDs: their order is write order
    assert previous("03", around) == "02"
    assert previous("01", around) is None  # no neighbourhood read for it
    assert previous("x#2", {"x#2": ("x#1", "x#3")}) == "x#1"  # a note's sections in order


def test_only_a_short_reply_to_a_question_in_the_head_gains() -> None:
    ranked = [("setup", 2.0), ("asks", 1.5), ("reply", 1.0), ("long", 0.9), ("told", 0.8)]
    bodies = {
        "setup": "I signed with a new team",
        "asks": "Which team did you sign with?",
        "reply": "The Minnesota Wolves!",
        "long": "x" * (replies.SHORT + 1),
        "told": "The Wolves.",
    }
    before = {"reply": "asks", "long": "asks", "told": "setup"}  # "setup" asks nothing
    held = {"asks": 0.9, "setup": 0.9}
    out, gained = with_replies(ranked, bodies, before, lambda oid: held.get(oid, 0.0))
    assert gained == {"reply": pytest.approx(REPLY * 0.9 * 2.0)}
    assert [oid for oid, _ in out] == ["setup", "reply", "asks", "long", "told"]
    assert with_replies(ranked, bodies, {}, lambda _oid: 1.0) == (ranked, {})


def test_a_reply_gains_only_when_it_gives_the_kind_of_answer_asked() -> None:
    ranked = [("asks", 2.0), ("yes", 1.0), ("when", 0.9), ("when-asks", 0.8)]
    bodies = {
        "asks": "When are you going camping?",
        "yes": "Sure, I'd love to!",
        "when-asks": "And when is the trip?",
        "when": "Next month, in July.",
    }
    before = {"yes": "asks", "when": "when-asks"}
    held = {"asks": 1.0, "when-asks": 1.0}.get
    _, gained = with_replies(ranked, bodies, before, lambda oid: held(oid, 0.0), {"when"})
    assert set(gained) == {"when"}  # "Sure" tells nothing of when
    _, gained = with_replies(ranked, bodies, before, lambda oid: held(oid, 0.0))
    assert set(gained) == {"yes", "when"}  # a question that asks for no kind


def _vault_of(
    vault: Path, clock: FixedClock, apart: Sequence[str], sitting: Sequence[str]
) -> Brain:
    """A vault of memories written hours apart (no neighbours), then one sitting, a turn every
    few seconds."""
    brain = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    for text in apart:
        clock.set(clock.now() + timedelta(hours=3))
        brain.remember(text)
    clock.set(clock.now() + timedelta(hours=3))
    for text in sitting:
        clock.set(clock.now() + timedelta(seconds=5))
        brain.remember(text)
    return brain


@pytest.fixture
def chat(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    brain = _vault_of(vault, clock, ELSEWHERE, SITTING)
    yield brain
    brain.close()


def test_recall_finds_the_reply_that_holds_the_answer(
    chat: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    hits = chat.recall(QUESTION, k=5, explain=True)
    assert hits[0].title.startswith("John: The Minnesota Wolves")
    assert hits[0].explain is not None and hits[0].explain["reply"] > 0
    # Without the stage the reply, which holds none of the question's words, is not first.
    monkeypatch.setattr(replies, "with_replies", lambda ranked, *_a: (list(ranked), {}))
    assert not chat.recall(QUESTION, k=5)[0].title.startswith("John: The Minnesota Wolves")


def test_cli_explain_shows_what_the_reply_borrowed(chat: Brain, cli: CliRunner) -> None:
    chat.close()
    res = cli.invoke(app, ["recall", QUESTION, "--explain"])
    assert res.exit_code == 0, res.output
    assert "reply to a question +" in res.output
    res = cli.invoke(app, ["recall", QUESTION, "--explain", "--json"])
    hits = {h["title"][:26]: h["explain"] for h in json.loads(res.output)["hits"]}
    assert hits["John: The Minnesota Wolves"]["reply"] > 0


def test_asked_what_was_said_to_the_asker_any_reply_to_another_speaker_gains() -> None:
    ranked = [("request", 2.0), ("answer", 1.0), ("more", 0.9), ("note", 0.8)]
    long_answer = "1. Virtual tutor 2. Bookkeeper " + "and more " * 60
    bodies = {
        "request": "Brainstorm work from home jobs for seniors",  # asks without a "?"
        "answer": long_answer,
        "more": "Also check local libraries for job boards",  # the same speaker going on
        "note": "Jobs for seniors, a list",
    }
    before = {"answer": "request", "more": "answer", "note": "request"}
    said = {"request": "user", "answer": "assistant", "more": "assistant", "note": None}
    held = {"request": 0.9, "answer": 0.5}.get
    out, gained = with_replies(ranked, bodies, before, lambda o: held(o, 0.0), None, said)
    assert gained == {"answer": pytest.approx(REPLY * 0.9 * 2.0)}  # not "more", not "note"
    assert [oid for oid, _ in out][:2] == ["request", "answer"]  # 1.0 + 0.54 < 2.0
    # Asked of the conversation, not to someone: a long answer to no question gains nothing.
    assert with_replies(ranked, bodies, before, lambda o: held(o, 0.0)) == (ranked, {})


CHAT = (
    "user: Brainstorm ideas for work from home jobs for seniors",
    "assistant: Work from home jobs for seniors: 1. Virtual customer service 2. Telehealth 3. "
    "Remote bookkeeper 4. Online tutor 5. Freelance editor 6. Survey taker 7. Transcriber 8. "
    "Social media manager. Each of these can be done from a laptop at home, with flexible "
    "hours that suit a retired person who wants some income and a routine without a commute. "
    "Many employers value the experience and reliability older workers bring to the job.",
    "user: Thanks, that list helps a lot.",
)
TO_YOU = "Can you remind me what the 7th of the work from home jobs for seniors you listed was?"


@pytest.fixture
def assistant_chat(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    brain = _vault_of(
        vault, clock, ["user: Which laptop suits working from home on a budget?"], CHAT
    )
    yield brain
    brain.close()


def test_a_question_to_someone_finds_the_long_reply_it_asks_for(
    assistant_chat: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    hits = assistant_chat.recall(TO_YOU, k=5, explain=True)
    assert hits[0].title.startswith("assistant: Work from home jobs")
    assert hits[0].explain is not None and hits[0].explain["reply"] > 0
    # Without speakers to tell a reply from a request, the request the words match is first.
    monkeypatch.setattr(replies, "speaker", lambda _title: None)
    assert assistant_chat.recall(TO_YOU, k=5)[0].title.startswith("user: Brainstorm")
