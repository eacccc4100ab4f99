"""Defining memories: trigger phrases flag decisions, milestones and events; list and recall."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._notes.defining import detect
from brain.testing import T0

_register()


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("I've decided to move to Porto.", "decision"),
        ("After a long talk we\u2019re going with the blue logo", "decision"),
        ("I'm committing to a weekly release.", "decision"),
        ("Let's do the launch in March.", "decision"),
        ("Final decision: no new hires this year", "decision"),
        ("We launched the beta today!", "milestone"),
        ("It's done, finally.", "milestone"),
        ("I finished the first draft", "milestone"),
        ("Completed the migration to Postgres.", "milestone"),
        ("Shipped v2 to everyone", "milestone"),
        ("Big news. I'm starting at Acme on Monday", "event"),
        ("I got the job!", "event"),
        ("We closed the deal with Initech", "event"),
        ("I'm getting married in June", "event"),
        ("The form must be completed by Friday", None),
        ("Parts are shipped weekly", None),
        ("Maybe we should decide later", None),
        ("The undecided voter", None),
    ],
)
def test_detect(text: str, kind: str | None) -> None:
    assert detect(text) == kind


@pytest.mark.parametrize(
    "phrase",
    [
        "I have decided",
        "we've decided",
        "WE ARE GOING WITH",
        "I am committing to",
        "We are committing to",
        "FINAL DECISION :",
        "we have launched",
        "It is done",
        "I have finished",
        "We've finished",
        "we completed",
        "I have shipped",
        "I am starting",
        "We closed the deal",
        "I\u2019m getting married",
    ],
)
def test_every_spelling_is_found_deep_in_a_long_note(phrase: str) -> None:
    # detect() looks for a word each phrase holds before it runs the patterns over the text:
    # that first look must let through every spelling the patterns accept, in any case.
    filler = "Harbour lanterns and tides. " * 2000
    assert detect(f"{filler}Then {phrase} something. {filler}") is not None


def test_remember_flags_a_defining_memory_and_never_overrides_a_flag(
    brain: Brain, vault: Path
) -> None:
    note = brain.remember("We're going with Lisbon for the offsite", title="Offsite")
    assert note.defining == "decision"
    assert "defining: decision" in (vault / note.path).read_text()
    note = brain.remember("We launched the offsite site", title="Offsite")  # same note, appended
    assert note.defining == "decision"
    plain = brain.remember("Lisbon has good coffee", title="Coffee")
    assert plain.defining is None and "defining" not in plain.meta
    diary = brain.remember("I got the job at Acme", node="LLM/Diary")
    assert diary.defining == "event"


def test_list_and_recall_find_defining_memories_first(
    cli: CliRunner, brain: Brain, clock: FixedClock
) -> None:
    decided = brain.remember("I've decided to call it Atlas", title="Naming")
    for n in range(4):
        clock.set(T0 + timedelta(minutes=n + 1))
        brain.remember(f"The project Atlas project note {n} project", title=f"Atlas {n}")
    listed = json.loads(cli.invoke(app, ["list", "--defining", "--json"]).stdout)["notes"]
    assert [n["id"] for n in listed] == [decided.id]
    assert listed[0]["defining"] == "decision"
    plain = [h.id for h in brain.recall("project atlas", k=3)]
    assert decided.id not in plain
    res = cli.invoke(app, ["recall", "project atlas", "--defining", "-k", "3", "--json"])
    hits = json.loads(res.stdout)["hits"]
    assert hits[0]["id"] == decided.id and len(hits) == 3


def test_a_correction_keeps_or_finds_the_flag(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("I've decided on Lisbon", title="Offsite")
    clock.set(T0 + timedelta(minutes=1))
    assert brain.correct(note.id, "Porto, not Lisbon").defining == "decision"
    other = brain.remember("The offsite venue is a hotel", title="Venue")
    clock.set(T0 + timedelta(minutes=2))
    assert brain.correct(other.id, "We closed the deal with the hotel").defining == "event"
