"""A question's type matched to its answer's: asked when, a memory that says when comes first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._recall.answers import (
    ANSWER_TYPE,
    ASKING,
    HOW_MANY,
    WHEN,
    Asked,
    asked_for,
    asking_share,
    with_statements,
)
from brain._recall.question import read
from brain._recall.when import asks_when, tells_time

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


@pytest.mark.parametrize(
    ("text", "share"),
    [
        ("Is it a martial arts place or a yoga studio?", 1.0),
        ("I'm doing kickboxing and it's giving me so much energy.", 0.0),
        ("Looks fun! What other classes have you done?", 33 / 43),  # characters in sentences
        ("Wow!! Did you go? 😊", 11 / 17),  # an emoji after the question is still its end
        ("How are you? We moved on Friday.", 0.0),  # a question the text goes on from
        ("Q: How do I reset it? A: Hold the button for ten seconds.", 0.0),
        ('He asked me "why?"', 1.0),  # a closing quote after the mark
        ("See https://example.com/search?q=tea for the list.", 0.0),  # no question in a link
        ("It costs 3.50? That is cheap.", 0.0),
        ("我们周五搬家了。你什么时候来？", 7 / 15),  # full-width marks
        ("", 0.0),
    ],
)
def test_the_share_of_a_text_that_asks(text: str, share: float) -> None:
    assert asking_share(text) == pytest.approx(share)


def test_a_memory_that_asks_falls_below_one_that_tells() -> None:
    ranked = [("asks", 1.0), ("half", 0.9), ("tells", 0.6), ("lower", 0.55)]
    texts = {
        "asks": "Is it a martial arts place?",
        "half": "Yes. Is it?",
        "tells": "I do kickboxing.",
        "lower": "Karate, mostly.",
    }
    out, factors = with_statements(ranked, texts, about_asking=False)
    assert factors == {"asks": 1 - ASKING, "half": pytest.approx(1 - ASKING * 6 / 10)}
    assert [oid for oid, _ in out] == ["half", "tells", "lower", "asks"]
    assert dict(out)["asks"] == pytest.approx(1.0 - ASKING)
    # A query about asking keeps the questions where they were.
    asking = read("What did John ask about martial arts?", datetime.now(UTC)).about_asking
    same, none = with_statements(ranked, texts, asking)
    assert (same, none) == (ranked, {})


MARTIAL = [
    "Which martial arts classes have you done at the gym?",
    "I have done martial arts for two years: kickboxing, and some karate in town.",
]


def test_recall_puts_what_tells_before_what_asks(cli: CliRunner, brain: Brain) -> None:
    asks, tells = (brain.remember(text).id for text in MARTIAL)
    # Asked about asking, the question's words match best and it leads.
    about = brain.recall("Which martial arts classes did I ask about?", k=2, mode="text")
    assert [h.id for h in about] == [asks, tells]
    hits = brain.recall("Which martial arts classes has she done?", k=2, mode="text", explain=True)
    assert [h.id for h in hits] == [tells, asks]
    assert [(h.explain or {}).get("asks") for h in hits] == [1.0, 1 - ASKING]
    brain.close()
    res = cli.invoke(app, ["recall", "Which martial arts classes has she done?", "--explain"])
    assert res.exit_code == 0, res.output
    assert f"asks ×{1 - ASKING}" in res.output
