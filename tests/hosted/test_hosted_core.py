"""The core use cases on both storages: the same test bodies on files and on PostgreSQL."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from brain import _partitions as partitions
from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._errors import BrainError, InvalidInput, NotFound
from brain._sessions import Gate
from tests.conftest import flushed_first, pushed

SEED = {
    "recall_id": "widget-pro-specs",
    "created_at": "2026-12-01T14:30:00Z",
    "platform": "claude.ai",
    "summary": "Widget Pro system requirements.",
    "transcript": [
        {
            "role": "user",
            "content": "What does the Widget Pro need to run?",
            "timestamp": "2026-12-01T14:30:15Z",
        },
        {
            "role": "assistant",
            "content": "A quince coloured chassis and four gigabytes of RAM.",
            "timestamp": "2026-12-01T14:30:18Z",
        },
    ],
}


def titles(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.title for h in hits]


def test_remember_then_recall_in_every_mode(any_brain: Brain, clock: FixedClock) -> None:
    note = any_brain.remember("The Widget Pro launch moved to March.", title="Widget launch")
    clock.set(clock.now() + timedelta(minutes=5))  # not neighbours: neither lends the other
    other = any_brain.remember("Bake sourdough on Sundays.", title="Bread")
    for mode in ("text", "vector", "hybrid"):
        hits = any_brain.recall("widget launch", mode=mode)
        assert hits and hits[0].id == note.id, mode
        assert other.id not in [h.id for h in hits[:1]]
    assert "March" in any_brain.expand(note.id).body
    again = any_brain.remember("It needs a new box too.", title="Widget launch")
    assert again.id == note.id  # a titled note is one note: the second write adds to it
    assert "new box" in any_brain.expand(note.id).body


def test_relevance_is_counted_alike_on_either_storage(any_brain: Brain) -> None:
    # recall/relevance.py weighs the query's words by how many memories hold them: the full
    # text's term counts on files, a count of matching rows on PostgreSQL.
    any_brain.remember("The Widget Pro launch moved to March.", title="Widget launch")
    any_brain.remember("Bake sourdough on Sundays.", title="Bread")
    assert any_brain.recall("quantum chromodynamics homework") == []
    hits = any_brain.recall("sourdough bread")
    assert hits[0].title == "Bread" and hits[0].band == "strong"


def test_a_question_that_asks_when_reads_which_memories_say_when(any_brain: Brain) -> None:
    # recall/answers.py reads the best memories' text from either storage's full text (the order
    # it makes is pinned in tests/recall/test_recall_answers.py; PostgreSQL ranks words apart).
    plain = any_brain.remember("The launch party is at the office.", title="Party")
    dated = any_brain.remember("The launch party moved to Tuesday the 14th.", title="Moved")
    hits = any_brain.recall("When is the launch party?", k=2, mode="text", explain=True)
    why = {h.id: h.explain or {} for h in hits}
    assert (why[dated.id]["answer"], why[dated.id]["answer_asked"]) == (1.2, "when")
    assert why[plain.id]["answer"] == 1.0


def test_a_memory_that_asks_is_read_and_lowered_on_either_storage(any_brain: Brain) -> None:
    # recall/answers.py reads the questions a memory ends with from either storage's text.
    asked = any_brain.remember("Is the launch party at the office?", title="Asked")
    told = any_brain.remember("The launch party is at the office, on Tuesday.", title="Told")
    hits = any_brain.recall("Where is the launch party?", k=2, mode="text", explain=True)
    why = {h.id: h.explain or {} for h in hits}
    assert (why[asked.id]["asks"], why[told.id]["asks"]) == (0.5, 1.0)


def test_correct_keeps_history_and_recall_shows_the_current_version(any_brain: Brain) -> None:
    old = any_brain.remember("The launch is in March.", title="Launch date")
    new = any_brain.correct(old.id, "The launch is in April.")
    assert new.supersedes == old.id
    assert [n.id for n in any_brain.history(new.id)] == [old.id, new.id]
    assert any_brain._context.get(old.id).status == "superseded"
    hits = any_brain.recall("launch")
    assert [h.id for h in hits] == [new.id]


@pytest.mark.parametrize("mode", ["auto", "version", "history"])
def test_forget_in_each_mode(any_brain: Brain, mode: str) -> None:
    old = any_brain.remember("The launch is in March.", title="Launch date")
    new = any_brain.correct(old.id, "The launch is in April.")
    gone = any_brain.forget(new.id, mode)
    assert new.id in gone
    left = [h.id for h in any_brain.recall("launch")]
    if mode == "auto":  # the previous version is current again
        assert left == [old.id] and any_brain._context.get(old.id).status == "active"
    elif mode == "version":
        with pytest.raises(NotFound):
            any_brain._context.get(new.id)
    else:
        assert left == [] and old.id in gone
        with pytest.raises(NotFound):
            any_brain._context.get(old.id)


def test_a_transcript_and_all_its_turns_are_recalled_and_forgotten(
    any_brain: Brain, tmp_path: Path
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(SEED))
    report = any_brain.ingest(chat)
    assert len(report.added) == 1
    hits = any_brain.recall("quince chassis")
    assert hits and "#" in hits[0].id  # the turn that answers, not only its note
    note_id = hits[0].id.split("#")[0]
    parts = any_brain._context.caches.catalog.object_ids_of(note_id)
    assert len(parts) >= 3  # the note and each turn
    any_brain.forget(note_id)
    assert any_brain._context.caches.catalog.object_ids_of(note_id) == []
    any_brain._context.flush()  # files: the full-text queue is applied before a search
    assert all(any_brain._context.caches.fulltext.stored(p) is None for p in parts)
    assert any_brain.recall("quince chassis") == []


def test_relations_are_typed_and_refused_if_unknown(any_brain: Brain) -> None:
    a = any_brain.remember("Tomatoes need sun.", title="Tomatoes")
    b = any_brain.remember("The garden faces south.", title="Garden")
    any_brain.relate(a.id, "supports", b.id, 0.5)
    links = any_brain.links(b.id)
    assert [(r.source, r.type) for r in links.incoming] == [(a.id, "supports")]
    with pytest.raises(InvalidInput, match="allowed"):
        any_brain.relate(a.id, "likes", b.id)
    any_brain.unrelate(a.id, "supports", b.id)
    assert any_brain.links(b.id).incoming == ()


def test_sleep_ages_notes_and_a_second_pass_changes_nothing(
    any_brain: Brain, clock: FixedClock
) -> None:
    notes = [any_brain.remember(f"thing {n}", title=f"Thing {n}") for n in range(3)]
    clock.set(clock.now() + timedelta(days=30))
    first = any_brain.sleep()
    assert sorted(a.id for a in first.aged) == sorted(n.id for n in notes)
    assert all(any_brain._context.get(n.id).status == "dormant" for n in notes)
    assert first.logs  # today's daily log
    second = any_brain.sleep()
    assert not second.changed
    any_brain.expand(notes[0].id)  # a touch brings it back
    assert any_brain._context.get(notes[0].id).status == "active"


def test_partitions_are_separate_and_an_archived_one_is_read_only(any_brain: Brain) -> None:
    any_brain.remember("Main things.", title="Main note")
    partitions.create(any_brain._context, "work")
    work = any_brain.at("work")
    note = work.remember("The quarterly report is due.", title="Report")
    assert [h.id for h in work.recall("quarterly report")] == [note.id]
    assert any_brain.recall("quarterly report") == []  # main does not see work
    assert {p.name for p in partitions.listing(any_brain._context)} >= {"main", "work"}
    partitions.archive(any_brain._context, "work")
    with pytest.raises(InvalidInput, match="archived"):
        work.remember("more", title="More")
    with pytest.raises(InvalidInput, match="archived"):
        work.recall("report")
    partitions.restore(any_brain._context, "work")
    assert [h.id for h in work.recall("quarterly report")] == [note.id]
    partitions.rename(any_brain._context, "work", "office")  # ids stay, paths follow
    office = any_brain.at("office")
    assert [h.id for h in office.recall("quarterly report")] == [note.id]
    assert office._context.get(note.id).path.startswith("office/")
    assert "work" not in {p.name for p in partitions.listing(any_brain._context)}


def test_private_notes_never_reach_a_model(any_brain: Brain) -> None:
    secret = any_brain.remember("My bank PIN hint is the cat.", title="Bank hint")
    any_brain.set_field(secret.id, "visibility", "private")
    model = any_brain.at(for_model=True)
    assert model.recall("bank hint cat") == []
    with pytest.raises(NotFound):
        model.expand(secret.id)
    assert [h.id for h in any_brain.recall("bank hint cat")] == [secret.id]  # the person sees it


def test_a_name_only_a_private_note_holds_is_unknown_to_a_model(any_brain: Brain) -> None:
    any_brain.remember("We moved the product launch to March.", title="Launch")
    hidden = any_brain.remember("Lunch with Xavier about the job offer.", title="Lunch")
    any_brain.set_field(hidden.id, "visibility", "private")
    model = any_brain.at(for_model=True)
    assert model.recall("the launch with Xavier", mode="text") == []  # as for a name nobody holds
    assert any_brain.recall("the launch with Xavier", mode="text")  # the person's answer


def test_the_session_gate_goes_in_order_and_survives_a_new_gate(any_brain: Brain) -> None:
    source = {"via": "mcp", "session": "s1"}
    gate = Gate(any_brain._context, source)
    gate.session()
    with pytest.raises(BrainError, match="the step due is addendum"):
        gate.diary("too early")
    gate.addendum("Talked about the widget.")
    again = Gate(
        any_brain._context, source
    )  # another process, another server: the label is on the note
    with pytest.raises(BrainError, match="the step due is maintain"):
        again.addendum("twice")
    again.maintain()
    again.remarks()
    again.diary("A good day.")
    again.close("done")


def test_a_speaker_named_in_the_question_on_either_storage(
    any_brain: Brain, clock: FixedClock
) -> None:
    # The names step asks the full text how common a name is (FullText.share): on PostgreSQL
    # that is the tsvector's body lexemes. An hour apart, so no turn lends another context.
    ids = []
    for text in (
        "Melanie: Caroline! Caroline, hi!",
        "Melanie: the lake at sunrise, Caroline",
        "Caroline: I painted a lake at sunrise.",
    ):
        ids.append(any_brain.remember(text).id)
        clock.set(clock.now() + timedelta(hours=1))
    greeting, _, painted = ids
    hits = any_brain.recall("Which lake did Caroline see at sunrise?", k=5, explain=True)
    assert hits[0].id == painted
    assert hits[0].explain is not None and hits[0].explain["name_said"] == ["Caroline"]
    text = any_brain.recall("Which lake did Caroline see at sunrise?", k=5, mode="text")
    assert greeting not in [h.id for h in text]  # only the name matched it: not a search word


@pytest.mark.parametrize("storage", ["files", "postgres"])
def test_the_learned_sparse_terms_on_either_storage(
    storage: str, vault: Path, clock: FixedClock, request: pytest.FixtureRequest
) -> None:
    # brain.yaml asks for the hashing sparse encoder (deterministic): on PostgreSQL the terms
    # are sparsevec rows written with the note, searched by inner product.
    with (vault / "brain.yaml").open("a") as settings:
        settings.write("sparse: hashing\n")
    b = (
        open_vault(vault, clock=clock)
        if storage == "files"
        else pushed(request.getfixturevalue("hosted_dsn"), vault, clock)
    )
    b._context.flush(vectors=True)  # files encode at the first recall, PostgreSQL with each write
    held = len(b._context.caches.sparse)  # the template's own notes have terms too
    otters = b.remember("Otters hold hands while they nap.", title="Otters")
    clock.set(clock.now() + timedelta(hours=1))
    b.remember("Bake sourdough on Sundays.", title="Bread")
    hits = b.recall("otters holding hands", mode="sparse", explain=True)
    assert [h.id for h in hits] == [otters.id]
    assert hits[0].explain is not None and hits[0].explain["retrievers"]["sparse"]["rank"] == 1
    searched: list[str] = []  # by which thread: the database's one connection is the recall's
    real = type(b._context.caches.sparse).search
    with pytest.MonkeyPatch.context() as patch:
        flushed_first(b, patch)
        patch.setattr(
            type(b._context.caches.sparse),
            "search",
            lambda self, *a, **kw: (
                searched.append(threading.current_thread().name) or real(self, *a, **kw)
            ),
        )
        assert b.recall("otters holding hands")[0].id == otters.id
    me = threading.current_thread().name
    if storage == "postgres":  # never searched ahead on the recall's worker
        assert searched and set(searched) == {me}
    else:
        assert any(thread.startswith("brain-encode") for thread in searched)
    assert b._context.caches.sparse_on and len(b._context.caches.sparse) == held + 2
    b.forget(otters.id)
    assert b.recall("otters holding hands", mode="sparse") == []
    assert len(b._context.caches.sparse) == held + 1  # forgotten from the terms at once
    b.close()


def test_a_named_day_is_looked_at_and_keeps_its_private_notes_from_a_model(
    any_brain: Brain, clock: FixedClock
) -> None:
    """The memories of a day the query names are searched too (recall/pipeline.py): one that
    every first list cut off is found, on either storage; one made private never reaches a
    model, by that road either."""
    from datetime import UTC, datetime

    clock.set(datetime(2023, 4, 1, 8, 0, tzinfo=UTC))
    for i in range(60):  # more than a retriever's 50 candidates, all about the query's words
        clock.set(clock.now() + timedelta(minutes=5))
        any_brain.remember(f"Keeper {i} logs the lighthouse weather at dawn", title=f"Log {i}")
    clock.set(datetime(2023, 5, 9, 18, 0, tzinfo=UTC))
    said = any_brain.remember("Fog rolled over the lighthouse all evening", title="Evening fog")
    secret = any_brain.remember("Fog over the lighthouse hid where I keep the key", title="Key")
    any_brain.set_field(secret.id, "visibility", "private")
    clock.set(datetime(2023, 6, 1, 9, 0, tzinfo=UTC))
    query = "What did the keeper log about the lighthouse weather on 9 May, 2023?"
    person = [h.id for h in any_brain.recall(query, k=10)]
    assert said.id in person and secret.id in person
    model = [h.id for h in any_brain.at(for_model=True).recall(query, k=10)]
    assert said.id in model and secret.id not in model
