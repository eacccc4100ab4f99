"""The memory that opens a sitting says what the sitting was for."""

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
from brain._recall import openers
from brain._recall.answers import ANSWER_DEPTH
from brain._recall.openers import OPENER, first_after, opens, speaker, with_openers
from brain._recall.question import read
from brain.testing import T0

_register()

SITTING = (
    "Nate: Guess what Joanna, my turtles are going to a reptile show in Tampa next month!",
    "Joanna: No way! Which of your turtles are going to the reptile show?",
    "Nate: Shelly and Tank, my two show turtles. The reptile show judges turtles by shell.",
    "Joanna: They will win for sure.",
)
ELSEWHERE = (
    "Nate: I cleaned the turtle tank this morning, the water was murky.",
    "Joanna: My screenplay got a reply from a studio.",
)
QUESTION = "Where is the reptile show Nate's turtles are going to?"


def test_a_memory_opens_its_sitting_when_every_neighbour_came_after_it() -> None:
    around = {"02": ("03", "04"), "03": ("02", "04"), "05": (), "x#0": ("x#1", "x#2")}
    around |= {"x#1": ("x#0", "x#2"), "x#10": ("x#9",)}
    assert first_after("02", around) == "03"  # ids are ULIDs: their order is write order
    assert first_after("03", around) is None  # "02" came before it
    assert first_after("05", around) is None  # written alone: no sitting to open
    assert first_after("x#0", around) == "x#1"  # a transcript's first turn, by number
    assert first_after("x#1", around) is None
    assert first_after("x#10", around) is None  # #9 came before it (not "#10" < "#9")
    assert first_after("09", around) is None  # no neighbourhood read for it


@pytest.mark.parametrize(
    ("title", "who"),
    [
        ("Caroline: I went to a support group", "caroline"),
        ("user: I'm planning a trip to Kyoto", "user"),
        ("Dr. Lee : the results are fine", "dr. lee"),
        ("Meeting at 10:30 with Sam", None),  # a time, not a label
        ("https://example.com: a link", None),
        ("Bought milk and eggs", None),
    ],
)
def test_the_speaker_a_title_opens_with(title: str, who: str | None) -> None:
    assert speaker(title) == who


def test_only_the_first_turn_of_a_dialogue_opens_it() -> None:
    titles = {"a": "Nate: big news!", "b": "Joanna: tell me", "c": "Nate: and more", "n": "note"}
    assert opens("a", "b", titles)
    assert not opens("a", "c", titles)  # one speaker twice: not a dialogue
    assert not opens("n", "b", titles)  # a note without a speaker
    assert not opens("a", None, titles)


def test_only_the_head_is_lifted_and_reordered() -> None:
    head = [("b", 2.0), ("a", 1.8), ("c", 1.0)]
    tail = [(f"t{n:02}", 0.5) for n in range(ANSWER_DEPTH)]  # "t.." follow "a", "b", "c"
    around = {"a": ("b", "c"), "b": ("a", "c"), "c": ("a", "b"), "t19": ("t20",)}
    said = {"a": "Ann: hi", "b": "Bo: hey", "c": "Ann: so", "t19": "Ann: x", "t20": "Bo: y"}
    asked: list[list[str]] = []

    def titles(ids: Sequence[str]) -> dict[str, str]:
        asked.append(sorted(ids))
        return {oid: said[oid] for oid in ids if oid in said}

    out, factors = with_openers([*head, *tail], around, titles)
    assert factors == {"a": OPENER}  # "t19" opens a dialogue too, but is not in the head
    assert out[:3] == [("a", pytest.approx(1.8 * OPENER)), ("b", 2.0), ("c", 1.0)]
    assert out[3:] == tail
    assert asked == [["a", "b"]]  # one read, of the openers and the turns after them
    assert with_openers(head, {}, titles) == (head, {})


def test_a_question_that_speaks_to_someone_is_told_so() -> None:
    assert read("What did you recommend for my trip?", T0).to_someone
    assert read("Can you remind me which hotel you suggested?", T0).to_someone
    assert not read(QUESTION, T0).to_someone
    # asked for something new, "you" is only who is asked: not what was said to the asker
    assert not read("Can you suggest a hotel for my trip?", T0).to_someone


@pytest.fixture
def chat(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    brain = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    for text in ELSEWHERE:
        clock.set(clock.now() + timedelta(hours=3))  # apart: no neighbours of the sitting
        brain.remember(text)
    clock.set(clock.now() + timedelta(hours=3))
    for text in SITTING:  # one conversation, a turn every few seconds
        clock.set(clock.now() + timedelta(seconds=5))
        brain.remember(text)
    yield brain
    brain.close()


def test_recall_puts_the_opening_first(chat: Brain, monkeypatch: pytest.MonkeyPatch) -> None:
    hits = chat.recall(QUESTION, k=5, explain=True)
    assert hits[0].title.startswith("Nate: Guess what")
    assert hits[0].explain is not None and hits[0].explain["opens"] == OPENER
    # Without the stage, the turn that says the question's words most, and not where, leads.
    monkeypatch.setattr(openers, "with_openers", lambda ranked, *_a: (list(ranked), {}))
    assert not chat.recall(QUESTION, k=5)[0].title.startswith("Nate: Guess what")


def test_notes_written_together_are_no_dialogue(brain: Brain) -> None:
    """A batch of notes (an assistant saving facts in one go) has no opening to lift."""
    for n in range(6):
        brain.remember(f"tomato seedling number {n} in the raised bed")
    hits = brain.recall("tomato seedling number 4", k=3, explain=True)
    assert hits[0].title.startswith("tomato seedling number 4")
    assert all((h.explain or {}).get("opens", 1.0) == 1.0 for h in hits)


def test_a_question_to_someone_lifts_no_opening(chat: Brain) -> None:
    hits = chat.recall("Where did you say the reptile show is?", k=5, explain=True)
    assert all((h.explain or {}).get("opens", 1.0) == 1.0 for h in hits)


def test_cli_explain_shows_the_opening(chat: Brain, cli: CliRunner) -> None:
    chat.close()
    res = cli.invoke(app, ["recall", QUESTION, "--explain"])
    assert res.exit_code == 0, res.output
    assert f"opens its sitting ×{OPENER}" in res.output
    res = cli.invoke(app, ["recall", QUESTION, "--explain", "--json"])
    opened = [h for h in json.loads(res.output)["hits"] if h["explain"].get("opens") == OPENER]
    assert [h["title"][:16] for h in opened] == ["Nate: Guess what"]
