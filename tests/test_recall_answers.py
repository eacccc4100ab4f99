"""A question's type matched to its answer's: asked when, a memory that says when comes first."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from brain.brain import Brain
from brain.cli import _register, app
from brain.recall.answers import ANSWER_TYPE, HOW_MANY, WHEN, Asked, asked_for
from brain.recall.when import asks_when, tells_time

_register()


@pytest.mark.parametrize(
    ("query", "asks"),
    [
        ("When did Jon go to the fair?", True),
        ("when is the launch", True),
        ("When Jon has lost his job as a banker?", True),  # as people type it
        ("Which month was John in Italy?", True),
        ("What time is the dentist?", True),
        ("How long ago did we move?", True),
        ("When I was in Paris, what did I eat?", False),  # a clause, not the question
        ("What did I eat in Paris?", False),
        ("Where is the launch party?", False),
    ],
)
def test_a_question_that_asks_when(query: str, asks: bool) -> None:
    assert asks_when(query) is asks


@pytest.mark.parametrize(
    ("text", "tells"),
    [
        ("Yesterday, I went to a fair to show off my studio.", True),
        ("I met back up with my teammates on the 15th.", True),
        ("Dinner is at 7pm; the table is booked.", True),
        ("The review moved to 3 March.", True),
        ("Back in May we painted the fence.", True),
        ("I started two weeks ago.", True),
        ("I may go if it does not rain.", False),  # "may" the verb
        ("Dance is my go-to for stress relief.", False),
        ("We marched through the streets with flags.", False),
    ],
)
def test_a_memory_that_tells_a_time(text: str, tells: bool) -> None:
    assert tells_time(text) is tells


PARTY = [
    "The launch party is at the office.",
    "The launch party moved to Tuesday the 14th, with a cake from the bakery on the corner.",
]


def test_a_question_that_asks_when_prefers_a_memory_that_says_when(
    cli: CliRunner, brain: Brain
) -> None:
    where, when = (brain.remember(text).id for text in PARTY)
    # Its words match the shorter memory better; asked when, the one that tells a time leads.
    assert [h.id for h in brain.recall("Where is the launch party?", k=2, mode="text")] == [
        where,
        when,
    ]
    hits = brain.recall("When is the launch party?", k=2, mode="text", explain=True)
    assert [h.id for h in hits] == [when, where]
    assert [(h.explain or {}).get("answer") for h in hits] == [ANSWER_TYPE, 1.0]
    assert (hits[0].explain or {}).get("answer_asked") == "when"
    brain.close()
    res = cli.invoke(app, ["recall", "When is the launch party?", "--explain"])
    assert res.exit_code == 0, res.output
    assert f"answers when ×{ANSWER_TYPE}" in res.output


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("When did we buy the tickets?", WHEN),
        ("How long ago did we move?", WHEN),
        ("How many tickets did we buy?", HOW_MANY),
        ("How often does Ana run?", HOW_MANY),
        ("how old is the boiler", HOW_MANY),
        ("What did we buy?", None),
        ("Where is the launch party?", None),
    ],
)
def test_what_a_question_asks_for(query: str, asked: Asked | None) -> None:
    assert asked_for(query) is asked


TICKETS = [
    "We bought tickets for the concert.",
    "We bought four tickets for the concert by the sea, in the front rows.",
]


def test_a_question_that_asks_how_many_prefers_a_memory_with_an_amount(brain: Brain) -> None:
    plain, counted = (brain.remember(text).id for text in TICKETS)
    asked = "Did we buy tickets for the concert?"
    assert [h.id for h in brain.recall(asked, k=2, mode="text")] == [plain, counted]
    hits = brain.recall(
        "How many tickets did we buy for the concert?", k=2, mode="text", explain=True
    )
    assert [h.id for h in hits] == [counted, plain]
    assert (hits[0].explain or {}).get("answer_asked") == "how many"
    # A question that asks for neither leaves the ranking as it was and says nothing of it.
    hits = brain.recall(asked, k=2, mode="text", explain=True)
    assert all("answer" not in (h.explain or {}) for h in hits)
