"""Honest relevance: a band says how much of the question a hit holds, and a question nothing in
the vault is about is answered "nothing relevant" (CLI, --json, MCP), never the least bad notes."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from brain._brain import Brain, init_vault, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._indexes.embedder import MiniLMEmbedder
from brain._mcp_server import build_server
from brain._recall import relevance
from brain.testing import T0, use_embedder

_register()

NOTES = [
    "Ana bakes sourdough bread every Sunday with a starter she keeps in the fridge.",
    "We moved the product launch to March; the press release goes out the week before.",
    "The dentist appointment is on Friday at nine; bring the insurance card.",
    "Marek prefers his reports as short bullet lists, sent before noon.",
]
UNRELATED = "quantum chromodynamics lecture homework"


def filled(brain: Brain) -> list[str]:
    return [brain.remember(text).id for text in NOTES]


def recall(*args: str) -> Any:
    return CliRunner().invoke(app, ["recall", *args])


def test_a_question_nothing_is_about_gets_nothing_relevant(
    cli: CliRunner, brain: Brain, vault: Path
) -> None:
    filled(brain)
    brain.close()
    res = recall(UNRELATED)
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"nothing relevant in {vault}"
    data = json.loads(recall(UNRELATED, "--json").output)
    assert data == {"query": UNRELATED, "hits": [], "nothing_relevant": True}
    explained = recall(UNRELATED, "--explain")
    assert explained.exit_code == 0 and "nothing relevant in" in explained.output


def test_a_question_of_common_words_alone_asks_nothing(cli: CliRunner, brain: Brain) -> None:
    """A question of common words alone ("the of and", "is", "AND") asks nothing a memory
    could hold; before, it was answered from its stopwords, and every note holding "the" or
    "is" was strong."""
    ids = filled(brain)
    for query in ("the of and", "is", "AND", "what is it"):
        assert brain.recall(query) == [], query
    res = recall("the of and")
    assert res.exit_code == 0 and res.output.startswith("nothing relevant in"), res.output
    hits = brain.recall("the bread")  # one word of weight is asked as before
    assert hits[0].id == ids[0] and hits[0].band == "strong"


def test_a_matching_note_is_strong_and_the_unrelated_ones_are_not(
    cli: CliRunner, brain: Brain
) -> None:
    ids = filled(brain)
    hits = brain.recall("sourdough bread starter", explain=True)
    assert hits[0].id == ids[0] and hits[0].band == "strong" and hits[0].relevance == 1.0
    # Its neighbours in time come along (recall/neighbours.py) but hold none of the question.
    assert all(h.band == "weak" and h.relevance == 0.0 for h in hits[1:])
    brain.close()
    res = recall("sourdough bread starter", "--explain")
    assert res.exit_code == 0, res.output
    first = res.output.splitlines()[0]
    assert "strong" in first and "Ana bakes sourdough" in first
    assert "relevance 1.00" in res.output and "relevance 0.00" in res.output
    data = json.loads(recall("sourdough bread starter", "--json").output)
    assert data["nothing_relevant"] is False and data["hits"][0]["band"] == "strong"


def test_a_lone_weak_match_is_not_strong(cli: CliRunner, brain: Brain) -> None:
    """One word of four in common: the only note that matches, so the best of its answer, yet
    weak (before, a band measured against the best hit called it strong)."""
    filled(brain)
    query = "insurance for the boat trip to the fjords"
    hits = brain.recall(query, mode="text")
    assert "dentist" in hits[0].snippet
    assert relevance.FLOOR <= hits[0].relevance < relevance.FAIR
    assert [h.band for h in hits] == ["weak"] * len(hits)
    brain.close()
    res = recall(query, "--mode", "text")
    assert res.exit_code == 0 and "weak" in res.output and "strong" not in res.output


def test_relevance_is_the_share_of_the_question_a_note_holds(brain: Brain) -> None:
    """Each word weighs by its rarity: a word no memory holds weighs most, the chatter of
    conversations and the calendar nothing."""
    filled(brain)
    brain._context.flush()  # the counts are the full text's
    asked = relevance.asked(
        brain._context.caches.fulltext, "When did Ana bake sourdough in July 2023?"
    )
    assert set(asked.weights) == {"ana", "bake", "sourdough"}  # "July", "2023": the time's
    note = NOTES[0]
    assert asked.held("", note, "2026-12-02") == 1.0
    assert 0 < asked.held("", "Ana was here.", "2026-12-02") < 0.5
    assert asked.held("Sourdough", "", "2026-12-02") == asked.held("", "sourdough", "x")
    # The vault knows no Zoltan: a question about him is about nothing in it.
    about = relevance.asked(
        brain._context.caches.fulltext, "What bread does Zoltan bake on Sunday?"
    )
    assert not about.known and about.held("", note, "2026-12-02") == 0.0
    # A capitalised first word is how a question opens, not a name.
    opens = relevance.asked(brain._context.caches.fulltext, "Summarise the sourdough notes")
    assert opens.known and opens.held("", note, "2026-12-02") > relevance.FLOOR


def test_mcp_says_nothing_relevant_outright(brain: Brain) -> None:
    filled(brain)
    answers: list[Any] = []

    async def main() -> None:
        async with Client(build_server(brain)) as client:
            for query in (UNRELATED, "sourdough starter"):
                result = await client.call_tool("recall", {"query": query})
                assert not result.is_error
                answers.append(result.structured_content)

    anyio.run(main)
    assert answers[0] == {"hits": [], "nothing_relevant": True}
    assert answers[1]["nothing_relevant"] is False
    assert answers[1]["hits"][0]["band"] == "strong" and answers[1]["hits"][0]["relevance"] == 1


def test_full_text_only_vaults_are_as_honest(vault: Path, clock: FixedClock) -> None:
    use_embedder(vault, "none")
    brain = open_vault(vault, clock=clock)
    try:
        filled(brain)
        assert brain.recall(UNRELATED) == []
        hits = brain.recall("dentist insurance card")
        assert hits[0].band == "strong" and "dentist" in hits[0].snippet
    finally:
        brain.close()


@pytest.mark.model
def test_symbols_alone_hold_no_meaning_to_the_model(vault: Path, clock: FixedClock) -> None:
    """To MiniLM a text of emoji or punctuation is an unknown token, near every other short
    text: its cosine is no meaning held. A question of symbols is held as written."""
    brain = open_vault(vault, clock=clock, embedder=MiniLMEmbedder())
    try:
        party = brain.remember("🎉🎂").id
        bug = brain.remember("Bug: the title:x query syntax crashed the parser.").id
        brain.remember("The car needs new tyres before winter.")
        bands = {h.id: h.band for h in brain.recall("x", k=3)}
        assert bands[bug] == "strong" and bands.get(party, "weak") == "weak"
        # Another emoji is not this one: nothing in the vault holds it.
        assert brain.recall("🚣") == []
        assert brain.recall("*") == []
        hits = brain.recall("🎉")
        assert hits[0].id == party and hits[0].band == "strong"
        assert all(h.band == "weak" for h in hits[1:])
    finally:
        brain.close()


def test_a_private_notes_words_do_not_weigh_a_models_answer(brain: Brain) -> None:
    """A name only a private note holds is, to a model, a name nothing holds: before, its
    answer said whether some private note named Xavier ("nothing relevant" or not)."""
    brain.remember("We moved the product launch to March.")
    hidden = brain.remember("Lunch with Xavier about the job offer, keep it quiet.")
    brain.set_field(hidden.id, "visibility", "private")
    model = brain.at(for_model=True)
    for name in ("Xavier", "Zoltan"):  # one a private note holds, one nothing holds
        assert model.recall(f"the launch with {name}", mode="text") == [], name
    assert brain.recall("the launch with Xavier", mode="text")  # the person's: Xavier is known
    # And a word only the private note holds weighs as one nothing holds.
    offer = model.recall("launch offer", mode="text")[0].relevance
    assert offer == model.recall("launch zebra", mode="text")[0].relevance


def test_private_notes_written_then_do_not_weigh_a_models_named_time(
    brain: Brain, clock: FixedClock
) -> None:
    """A named time weighs by how many memories were written then; to a model, only those it
    may see count, or its answer's relevance would say how many private notes that day holds."""
    clock.set(T0 - timedelta(days=20))  # the launch note holds the word, not the time
    brain.remember("We moved the product launch to March.")
    clock.set(T0)
    for n in range(3):
        brain.remember(f"Ordinary note {n} about the garden hose.")
    question = "the launch on 2 December 2026"

    def relevance_of(asker: Brain) -> float:
        return asker.recall(question, mode="text")[0].relevance

    model = brain.at(for_model=True)
    seen = (relevance_of(model), relevance_of(brain))
    for n in range(6):
        hidden = brain.remember(f"Private matter {n}, keep it quiet.")
        brain.set_field(hidden.id, "visibility", "private")
    assert relevance_of(model) == seen[0]
    assert relevance_of(brain) != seen[1]  # the person's count holds every note of the day


def test_private_notes_do_not_weigh_a_models_full_text_order(brain: Brain) -> None:
    """BM25 weighs a word by how few memories hold it: counted over the whole index, a model's
    order said how many private notes hold a word. Its words now weigh among what it sees."""
    heron = brain.remember("A heron stood by the pond.").id
    brain.remember("A kite flew by the pond.")
    brain.remember("The kite festival is in May.")  # "kite" is the commoner word of the two
    model = brain.at(for_model=True)
    question = "heron kite"
    assert model.recall(question, mode="text")[0].id == heron
    for n in range(4):
        hidden = brain.remember(f"Heron count {n}, kept to myself.")
        brain.set_field(hidden.id, "visibility", "private")
    assert model.recall(question, mode="text")[0].id == heron
    # The person's order counts them: "heron" is now the commoner word.
    assert brain.recall(question, mode="text")[0].id != heron


@pytest.mark.model
def test_a_question_of_glyphs_alone_is_ordered_by_the_full_text(
    tmp_path: Path, clock: FixedClock
) -> None:
    """The shipped models are English: to MiniLM and SPLADE a Chinese question is an unknown
    token or two, and a Thai note came first for "烤鸭" (the Chinese note holding it second,
    the only strong one). A question of glyphs alone is ordered by the full text."""
    init_vault(tmp_path / "v", clock=clock)  # as shipped: MiniLM and SPLADE
    brain = open_vault(tmp_path / "v", clock=clock)
    try:
        duck = brain.remember("北京的烤鸭很好吃，我们周末去吃。").id
        brain.remember("ไปเที่ยวเชียงใหม่เดือนหน้า จองโรงแรมแล้ว")
        brain.remember("Pythonでデータ分析をしました。")
        brain.remember("The car needs new tyres before winter.")
        hits = brain.recall("烤鸭", k=3)
        assert hits[0].id == duck and hits[0].band == "strong"
    finally:
        brain.close()
