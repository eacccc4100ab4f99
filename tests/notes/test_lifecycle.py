"""The lifecycle sweep at its exact day boundaries, and what never ages."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import InvalidInput
from brain._model import iso
from brain._upkeep.lifecycle import sweep
from brain.testing import T0, tree_digest

_register()
DAY = timedelta(days=1)
SECOND = timedelta(seconds=1)


def set_yaml(vault: Path, old: str, new: str) -> None:
    path = vault / "brain.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def status_at(brain: Brain, clock: FixedClock, note_id: str, moment: object) -> str:
    clock.set(moment)  # type: ignore[arg-type]
    sweep(brain._context, clock.now())
    return brain._context.get(note_id).status


def test_active_turns_dormant_at_exactly_21_untouched_days(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("plan the garden", title="Garden")
    assert status_at(brain, clock, note.id, T0 + 21 * DAY - SECOND) == "active"
    assert status_at(brain, clock, note.id, T0 + 21 * DAY) == "dormant"
    aged = brain._context.get(note.id)
    assert aged.touched == iso(T0), "aging is not a touch"
    assert aged.path == note.path


def test_dormant_turns_archived_in_place_45_days_later(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("plan the garden", title="Garden", tags=["home"])
    assert status_at(brain, clock, note.id, T0 + 21 * DAY) == "dormant"
    assert status_at(brain, clock, note.id, T0 + 66 * DAY - SECOND) == "dormant"
    assert status_at(brain, clock, note.id, T0 + 66 * DAY) == "archived"
    archived = brain._context.get(note.id)
    assert archived.tags == ("home", "archived", "closed")
    assert archived.path == note.path
    assert archived.body == note.body, "an archived note keeps its content"


def test_a_long_gap_ages_straight_to_archived(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("old idea", title="Idea")
    assert status_at(brain, clock, note.id, T0 + 400 * DAY) == "archived"


def test_days_are_settings_in_brain_yaml(vault: Path, clock: FixedClock) -> None:
    set_yaml(vault, "dormant_days: 21", "dormant_days: 3")
    set_yaml(vault, "archive_days: 45", "archive_days: 2")
    brain = open_vault(vault, clock=clock)
    note = brain.remember("short-lived", title="Brief")
    assert status_at(brain, clock, note.id, T0 + 3 * DAY - SECOND) == "active"
    assert status_at(brain, clock, note.id, T0 + 3 * DAY) == "dormant"
    assert status_at(brain, clock, note.id, T0 + 5 * DAY - SECOND) == "dormant"
    assert status_at(brain, clock, note.id, T0 + 5 * DAY) == "archived"
    brain.close()


def test_records_and_singletons_never_age(brain: Brain, clock: FixedClock) -> None:
    session = brain.remember("we talked", node="Memory/Sessions")
    diary = brain.remember("I learned", node="LLM/Diary")
    bio = brain.remember("born in Lyon", node="Master", title="Biography")
    logs = list(brain.list(kind="log"))
    assert logs, "the template's Graph.md is a log note"
    clock.set(T0 + 1000 * DAY)
    assert sweep(brain._context, clock.now()) == []
    for note_id in (session.id, diary.id, bio.id, logs[0].id):
        assert brain._context.get(note_id).status == "active"


def test_eternal_thread_is_skipped_and_others_age(brain: Brain, clock: FixedClock) -> None:
    kept = brain.remember("context", title="Forever work", kind="thread")
    plain = brain.remember("context", title="Side quest", kind="thread")
    with brain._context.lock.hold():
        brain._context.save(brain._context.get(kept.id).with_meta(eternal=True))
    assert status_at(brain, clock, kept.id, T0 + 500 * DAY) == "active"
    assert brain._context.get(plain.id).status == "archived"


def test_a_thread_worked_on_daily_stays_active(brain: Brain, clock: FixedClock) -> None:
    thread = brain.remember("context", title="Migration", kind="thread")
    clock.set(T0 + 30 * DAY)
    day = brain.remember("did step two", title="Migration", kind="thread")
    assert day.parent == thread.id
    assert status_at(brain, clock, thread.id, T0 + 40 * DAY) == "active"
    assert status_at(brain, clock, thread.id, T0 + 51 * DAY) == "dormant"
    assert brain._context.get(day.id).status == "active", (
        "a thread's day is a record and never ages"
    )


@pytest.mark.parametrize("terminal", ["resolved", "superseded"])
def test_resolved_and_superseded_are_terminal(
    brain: Brain, clock: FixedClock, terminal: str
) -> None:
    note = brain.remember("done", title="Finished")
    with brain._context.lock.hold():
        brain._context.save(brain._context.get(note.id).with_meta(status=terminal))
    before = brain._context.store.read_bytes(note.path)
    assert status_at(brain, clock, note.id, T0 + 1000 * DAY) == terminal
    assert brain._context.store.read_bytes(note.path) == before


def test_a_status_set_by_hand_is_not_undone(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("shelved", title="Shelved")
    with brain._context.lock.hold():
        brain._context.save(brain._context.get(note.id).with_meta(status="archived"))
    assert status_at(brain, clock, note.id, T0 + 1 * DAY) == "archived"


def test_aging_reads_touched_not_file_times(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("fresh", title="Fresh")
    path = brain._context.store.path(note.path)
    os.utime(path, (0, 0))  # the file looks ancient; `touched` says otherwise
    assert status_at(brain, clock, note.id, T0 + 20 * DAY) == "active"
    os.utime(path, None)  # the file looks brand new; `touched` is what counts
    assert status_at(brain, clock, note.id, T0 + 21 * DAY) == "dormant"


def test_expanding_an_archived_note_reactivates_it(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("the widget costs 40 euros", title="Widget price")
    assert status_at(brain, clock, note.id, T0 + 70 * DAY) == "archived"
    hit = brain.recall("widget price")[0]
    assert hit.id == note.id and hit.status == "archived"
    back = brain.expand(hit.id)
    assert back.status == "active"
    assert "archived" not in back.tags and "closed" not in back.tags
    assert back.touched == iso(T0 + 70 * DAY)


def test_writing_to_a_dormant_note_reactivates_it(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("first thought", title="Thoughts")
    assert status_at(brain, clock, note.id, T0 + 30 * DAY) == "dormant"
    again = brain.remember("second thought", title="Thoughts")
    assert again.id == note.id and again.status == "active"


def test_recall_ranks_archived_lower_but_finds_it(brain: Brain, clock: FixedClock) -> None:
    old = brain.remember("the boiler service is due in spring", title="Boiler A")
    clock.set(T0 + 70 * DAY)
    new = brain.remember("the boiler service is due in spring", title="Boiler B")
    sweep(brain._context, clock.now())
    assert brain._context.get(old.id).status == "archived"
    hits = brain.recall("boiler service spring")
    assert [h.id for h in hits[:2]] == [new.id, old.id]


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("dormant_days: 21", "dormant_days: 0", "lifecycle.dormant_days"),
        ("archive_days: 45", "archive_days: -5", "lifecycle.archive_days"),
        ("cold_after_days: 90", "cold_after_days: 0", "tiers.cold_after_days"),
    ],
)
def test_zero_or_negative_days_are_refused_by_name(
    vault: Path, cli: CliRunner, old: str, new: str, field: str
) -> None:
    set_yaml(vault, old, new)
    with pytest.raises(InvalidInput, match=field.replace(".", r"\.")):
        open_vault(vault)
    digest = tree_digest(vault)
    result = cli.invoke(app, ["sleep"])
    assert result.exit_code == 2
    assert field in result.output
    assert tree_digest(vault) == digest


def test_sweep_skips_a_broken_note_and_ages_the_rest(brain: Brain, clock: FixedClock) -> None:
    good = brain.remember("fine", title="Fine")
    bad = brain.remember("will break", title="Broken")
    path = brain._context.store.path(bad.path)
    path.write_text("---\ntitle: [unclosed\n---\nbody\n")
    assert status_at(brain, clock, good.id, T0 + 30 * DAY) == "dormant"
    assert path.read_text().startswith("---\ntitle: [unclosed")
