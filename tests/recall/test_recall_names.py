"""A person named in the query lifts what they said (memories whose title opens with the name)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.fulltext import Filters
from brain._indexes.sparse import HashingSparse
from brain._recall import relevance
from brain._recall.names import COMMON as NAMES_COMMON
from brain._recall.names import NAME_PRIOR, query_names, subject, whose_words
from brain._recall.question import read

_register()


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("What did Caroline research?", ("Caroline",)),
        ("When did Melanie's kids go camping?", ("Melanie",)),
        ("What do Jon and Gina both like?", ("Jon", "Gina")),
        ("What did she say on 8 May 2023?", ()),
        ("What did mary say?", ()),  # not capitalised: not read as a name
        ("Why Did It Happen So?", ("Happen",)),  # harmless: no memory opens with it
    ],
)
def test_names_in_the_query(query: str, names: tuple[str, ...]) -> None:
    assert query_names(query) == names


@pytest.mark.parametrize(
    ("title", "who"),
    [
        ("Caroline: I went to a LGBTQ support group", "Caroline"),
        ("Caroline's favourite tea", "Caroline"),
        ("Gina prefers green tea", "Gina"),
        ("What a day it was", None),
        ("May I come along?", None),
        ("the deploy failed", None),
    ],
)
def test_subject_of_a_title(title: str, who: str | None) -> None:
    assert subject(title) == who


TURNS = [
    "Melanie: I painted a lake at sunrise last week.",
    "Caroline: I painted a lake at sunrise this week!",
]


def test_the_person_named_lifts_what_they_said(brain: Brain, clock: FixedClock) -> None:
    melanie = brain.remember(TURNS[0]).id
    clock.set(clock.now() + timedelta(hours=3))  # two sittings: neither opens the other's
    caroline = brain.remember(TURNS[1]).id
    plain = [h.id for h in brain.recall("Who painted a lake at sunrise last week?", k=2)]
    assert plain[0] == melanie  # "last week" matches her words better
    hits = brain.recall("What did Caroline paint at sunrise last week?", k=2, explain=True)
    assert [h.id for h in hits] == [caroline, melanie]
    why = {h.id: h.explain for h in hits}
    assert why[caroline] is not None and why[caroline]["name"] == NAME_PRIOR
    assert why[caroline]["name_said"] == ["Caroline"]
    assert why[melanie] is not None and why[melanie]["name"] == 1.0


@pytest.mark.parametrize(
    ("query", "talking", "lifted"),
    [
        ("What did Jon say about Gina's store?", ("Jon", "Gina"), ("Jon",)),
        ("How does Nate feel about Joanna's setbacks?", ("Nate", "Joanna"), ("Nate",)),
        ("Who is Tim and John's favourite player?", ("Tim", "John"), ("Tim", "John")),  # the pair's
        ("What is Gina's store called?", ("Gina",), ("Gina",)),  # no one else speaks
        ("What did Ana say about Ben's plan?", ("Ana",), ("Ana", "Ben")),  # Ben is no speaker
        ("Did Jon and Gina both dance?", ("Jon", "Gina"), ("Jon", "Gina")),
        ("What book did Tim recommend to John?", ("Tim", "John"), ("Tim",)),
        ("According to Gina, what makes Jon a mentor?", ("Gina", "Jon"), ("Gina", "Jon")),
    ],
)
def test_a_speaker_named_only_as_an_owner_or_recipient_is_not_whose_words_are_asked_for(
    query: str, talking: tuple[str, ...], lifted: tuple[str, ...]
) -> None:
    people = tuple(dict.fromkeys([*talking, *lifted]))
    question = read(query, datetime.now(UTC))  # the question read once: who it names, and how
    assert whose_words(people, talking, question.owned, question.pairs) == lifted


def test_what_one_said_about_anothers_thing_is_their_words(brain: Brain) -> None:
    gina = brain.remember("Gina: My store is doing great, the store has new shelves.").id
    jon = brain.remember("Jon: Your store looks great, well done!").id
    hits = brain.recall("What did Jon say about Gina's store?", k=2, mode="text", explain=True)
    assert [h.id for h in hits] == [jon, gina]
    assert [(h.explain or {}).get("name") for h in hits] == [NAME_PRIOR, 1.0]
    assert (hits[0].explain or {}).get("name_said") == ["Jon"]
    # Asked what one gave another, the giver's words lead.
    john = brain.remember("John: I read a great book, a book about the sea.").id
    tim = brain.remember("Tim: You would like this book, it is great.").id
    asked = "What book did Tim recommend to John?"
    assert [h.id for h in brain.recall(asked, k=2, mode="text")] == [tim, john]
    # Asked about her store, not what someone said of it, her words lead.
    assert brain.recall("What did Gina say about her store?", k=1, mode="text")[0].id == gina


def test_a_name_no_memory_opens_with_changes_nothing(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    for text in TURNS:
        brain.remember(text)
    query = "What did {} paint at sunrise last week?"
    # No memory holds the name at all, so nothing in the vault is about Gina
    # (recall/relevance.py); with no floor the ranking shows the name prior did nothing.
    assert brain.recall(query.format("Gina"), k=2) == []
    monkeypatch.setattr(relevance, "FLOOR", 0.0)
    plain = [(h.id, h.score) for h in brain.recall(query.format("someone"), k=2)]
    named = brain.recall(query.format("Gina"), k=2, explain=True)
    assert [(h.id, h.score) for h in named] == plain
    assert all(h.explain is not None and "name" not in h.explain for h in named)


def test_cli_explain_shows_the_name_prior(cli: CliRunner, brain: Brain) -> None:
    for text in TURNS:
        brain.remember(text)
    brain.close()
    query = "What did Caroline paint at sunrise last week?"
    res = cli.invoke(app, ["recall", query, "--explain"])
    assert res.exit_code == 0, res.output
    assert f"name ×{NAME_PRIOR} (Caroline)" in res.output
    res = cli.invoke(app, ["recall", query, "--explain", "--json"])
    assert json.loads(res.output)["hits"][0]["explain"]["name"] == NAME_PRIOR


def test_a_speakers_name_is_no_search_word(
    brain: Brain, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Melanie's greeting holds the name twice; without the name the question asks for a lake.
    # (An hour apart, so that no memory lends another neighbour context.)
    ids = []
    for text in (
        "Melanie: Caroline! Caroline, hi!",
        "Melanie: the lake at sunrise, Caroline",
        "Caroline: I painted a lake at sunrise.",
    ):
        ids.append(brain.remember(text).id)
        clock.set(clock.now() + timedelta(hours=1))
    greeting, lake = ids[:2]
    query = "Which lake did Caroline see at sunrise?"

    def text_scores() -> dict[str, float | None]:
        hits = brain.recall(query, k=5, mode="text", explain=True)
        return {h.id: h.explain["retrievers"]["text"]["score"] for h in hits if h.explain}

    stripped = text_scores()
    assert greeting not in stripped  # only the name matched it
    # The same as asking without the name, in the node where Caroline speaks (each filter
    # clause adds the same constant to every BM25 score, so the node is named here too).
    plain = brain.recall(
        "Which lake did see at sunrise?", k=5, mode="text", explain=True, node="Knowledge/Inbox"
    )
    assert stripped[lake] == next(
        h.explain["retrievers"]["text"]["score"] for h in plain if h.id == lake and h.explain
    )
    monkeypatch.setattr("brain._recall.names.STRIP_NAMES", ())
    assert greeting in text_scores()


def test_a_rare_speakers_name_stays_a_search_word(brain: Brain, clock: FixedClock) -> None:
    # Caroline speaks once among many memories of the same node: her name tells her
    # conversation apart.
    for n in range(12):
        brain.remember(f"Jon: the dance studio opens at {n}", node="Knowledge/Talks")
    clock.set(clock.now() + timedelta(hours=1))
    said = brain.remember("Caroline: I painted a lake at sunrise.", node="Knowledge/Talks")
    scope = Filters(partition="main", nodes=("Knowledge/Talks",))
    assert brain._context.caches.fulltext.share("Caroline", scope) < NAMES_COMMON
    hits = brain.recall("What did Caroline paint at sunrise?", k=3, mode="text", explain=True)
    assert hits[0].id == said.id
    assert hits[0].explain is not None
    text = hits[0].explain["retrievers"]["text"]["score"]
    alone = brain.recall(
        "What did paint at sunrise?", k=3, mode="text", explain=True, node="Knowledge/Talks"
    )
    assert alone[0].id == said.id and alone[0].explain is not None
    assert text > alone[0].explain["retrievers"]["text"]["score"]  # the name still counted


def test_a_name_that_only_opens_titles_stays_a_search_word(brain: Brain) -> None:
    tuning = brain.remember("Postgres tuning: raise shared_buffers").id
    brain.remember("Vacuum settings for the database")
    hits = brain.recall("What did I note about Postgres?", k=2, mode="text", explain=True)
    assert hits[0].id == tuning
    assert hits[0].explain is not None and hits[0].explain["name"] == NAME_PRIOR
    assert hits[0].explain["retrievers"]["text"]["score"] is not None


def test_without_the_name_the_search_keeps_to_where_the_person_is(
    brain: Brain, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two conversations in two nodes; only the first has Caroline in it, often.
    for text in (
        "Caroline: hi Mel!",
        "Caroline: how are the kids?",
        "Caroline: see you soon",
        "Caroline: I painted a lake at sunrise.",
    ):
        brain.remember(text, node="Knowledge/Talks/One")
        clock.set(clock.now() + timedelta(hours=1))
    other = brain.remember("Jon: I painted a lake at sunrise, a lake!", node="Knowledge/Talks/Two")
    query = "What did Caroline paint at sunrise?"
    assert other.id not in [h.id for h in brain.recall(query, k=5)]
    monkeypatch.setattr("brain._recall.names.KEEP_TO_PLACES", False)
    assert other.id in [h.id for h in brain.recall(query, k=5)]


def test_a_speakers_name_is_no_search_word_for_the_learned_sparse_terms_either(
    vault: Path, clock: FixedClock
) -> None:
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    ids = []
    for text in ("Melanie: Caroline! Caroline, hi!", "Caroline: I painted a lake at sunrise."):
        ids.append(b.remember(text).id)
        clock.set(clock.now() + timedelta(hours=1))
    found = [h.id for h in b.recall("Which lake did Caroline see at sunrise?", mode="sparse")]
    b.close()
    assert found == [ids[1]]  # not the greeting: only the name matched it
