"""Corrections keep history; forgetting reverts exactly, removes one version, or the whole chain."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import BrokenNote, InvalidInput
from brain._model import Note
from brain.testing import T0, tree_digest

_register()


def later(clock: FixedClock, minutes: int) -> None:
    clock.set(T0 + timedelta(minutes=minutes))


def ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.id for h in hits]


def launch(brain: Brain, clock: FixedClock) -> tuple[Note, Note]:
    old = brain.remember("The launch is in February", title="Launch date")
    later(clock, 5)
    new = brain.correct(old.id, "Actually, we moved the launch to March")
    return old, new


def test_correct_writes_a_new_version_and_keeps_the_old_as_history(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    old, new = launch(brain, clock)
    assert new.supersedes == old.id
    assert [(r.type, r.target) for r in new.relations] == [("corrects", old.id)]
    assert new.path == old.path  # the current truth keeps its place
    kept = brain._context.get(old.id)
    assert kept.status == "superseded" and kept.body == "The launch is in February\n"
    assert kept.path != old.path and (vault / kept.path).is_file()
    assert ids(brain.recall("launch")) == [new.id]
    assert old.id in ids(brain.recall("launch February", include_superseded=True))
    assert [n.id for n in brain.history(new.id)] == [old.id, new.id]
    assert [n.id for n in brain.history(old.id)] == [old.id, new.id]


def test_a_chain_of_corrections(brain: Brain, clock: FixedClock) -> None:
    a, b = launch(brain, clock)
    later(clock, 10)
    c = brain.correct(b.id, "The launch is in April now")
    assert [n.id for n in brain.history(a.id)] == [a.id, b.id, c.id]
    assert [n.status for n in brain.history(c.id)] == ["superseded", "superseded", "active"]
    assert ids(brain.recall("launch")) == [c.id]
    assert [(r.type, r.target) for r in c.relations] == [("corrects", b.id)]


def test_correcting_a_superseded_version_names_the_current_one(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    old, new = launch(brain, clock)
    before = tree_digest(vault)
    with pytest.raises(InvalidInput, match=f"current version is {new.id}"):
        brain.correct(old.id, "something else")
    assert tree_digest(vault) == before


def test_correct_carries_visibility_and_relations_and_keeps_a_singletons_purpose(
    brain: Brain, clock: FixedClock
) -> None:
    other = brain.remember("Porto is by the sea", title="Porto")
    bio = brain.remember("I live in Lisbon", title="Biography", node="Master")
    brain.relate(bio.id, "references", other.id)
    later(clock, 1)
    new = brain.correct(bio.id, "I live in Porto")
    assert new.kind == "singleton" and new.body.startswith("> ")
    assert new.body.endswith("I live in Porto\n")
    assert ("references", other.id) in [(r.type, r.target) for r in new.relations]
    # remember on the singleton now updates the current version
    again = brain.remember("I live in Braga", title="Biography", node="Master")
    assert again.id == new.id


def test_expand_history_lists_versions_oldest_first_with_dates(cli: CliRunner, vault: Path) -> None:
    old = json.loads(cli.invoke(app, ["remember", "Launch in February", "--json"]).stdout)
    res = cli.invoke(app, ["correct", old["id"], "Launch in March", "--json"])
    assert res.exit_code == 0, res.output
    new = json.loads(res.stdout)
    res = cli.invoke(app, ["expand", new["id"], "--history"])
    assert res.exit_code == 0, res.output
    first, second = res.stdout.index(old["id"]), res.stdout.index(new["id"])
    assert first < second and "2026-" in res.stdout
    assert "Launch in February" in res.stdout and "superseded" in res.stdout
    data = json.loads(cli.invoke(app, ["expand", old["id"], "--history", "--json"]).stdout)
    assert [v["id"] for v in data["history"]] == [old["id"], new["id"]]
    assert data["history"][0]["meta"]["created"]
    gone = cli.invoke(app, ["forget", new["id"], "--history", "--yes"])
    assert gone.exit_code == 0, gone.output  # the check is named for every version it removed
    assert f"`brain doctor --forgotten {new['id']}`" in gone.stdout
    assert f"(and so for {old['id']})" in gone.stdout


# Suspicion -----------------------------------------------------------------------------------


def test_recall_flags_notes_written_in_the_same_pass_as_a_corrected_one(
    brain: Brain, clock: FixedClock
) -> None:
    session = {"via": "mcp", "session": "s1"}
    wrong = brain.remember("The venue holds 300 people", title="Venue size", source=session)
    sibling = brain.remember("The venue has a cloakroom", title="Venue rooms", source=session)
    other_session = brain.remember(
        "The venue has parking", title="Venue parking", source={"via": "mcp", "session": "s2"}
    )
    by_hand = brain.remember("The venue has a stage", title="Venue stage")
    later(clock, 60 * 24)
    next_day = brain.remember("The venue has a terrace", title="Venue terrace", source=session)
    later(clock, 60 * 25)
    brain.correct(wrong.id, "The venue holds 200 people", source=session)
    later(clock, 60 * 26)
    after = brain.remember("The venue has wifi", title="Venue wifi", source=session)
    hits = {h.id: h for h in brain.recall("venue", k=20)}
    assert hits[sibling.id].flags == (
        "a note written in the same pass was corrected on 2026-12-03",
    )
    for clean in (other_session, by_hand, next_day, after):
        assert hits[clean.id].flags == (), clean.title


def test_suspicion_shows_in_the_cli_and_in_json(cli: CliRunner, brain: Brain) -> None:
    session = {"via": "mcp", "session": "s1"}  # one pass: an assistant's session
    one = brain.remember("Budget is 10k", source=session)
    brain.remember("Budget owner is Ana", source=session)
    assert cli.invoke(app, ["correct", one.id, "Budget is 12k"]).exit_code == 0
    res = cli.invoke(app, ["recall", "budget owner"])
    assert "a note written in the same pass was corrected on" in res.stdout
    hits = json.loads(cli.invoke(app, ["recall", "budget owner", "--json"]).stdout)["hits"]
    owner = next(h for h in hits if "Ana" in h["snippet"])
    assert owner["flags"] and "corrected on" in owner["flags"][0]


def test_one_cli_correction_flags_no_other_cli_note_of_the_day(cli: CliRunner) -> None:
    """Each `brain remember` is a pass of its own: correcting one note says nothing about
    the notes of the other commands that day."""
    one = json.loads(cli.invoke(app, ["remember", "Budget is 10k", "--json"]).stdout)
    two = json.loads(cli.invoke(app, ["remember", "Budget owner is Ana", "--json"]).stdout)
    assert one["meta"]["source"]["session"] != two["meta"]["source"]["session"]
    assert cli.invoke(app, ["correct", one["id"], "Budget is 12k"]).exit_code == 0
    hits = json.loads(cli.invoke(app, ["recall", "budget owner", "--json"]).stdout)["hits"]
    owner = next(h for h in hits if h["id"] == two["id"])
    assert owner["flags"] == []
    assert "same pass" not in cli.invoke(app, ["recall", "budget owner"]).stdout


def test_notes_without_a_session_share_no_pass(brain: Brain, clock: FixedClock) -> None:
    """Notes written before passes had ids (no `session` in their source) are each their own."""
    old = {"via": "cli"}
    wrong = brain.remember("The hall holds 300 people", title="Hall size", source=old)
    other = brain.remember("The hall has a cloakroom", title="Hall rooms", source=old)
    later(clock, 5)
    brain.correct(wrong.id, "The hall holds 200 people")
    assert {h.id: h.flags for h in brain.recall("hall", k=20)}[other.id] == ()


def test_a_correction_keeps_the_title_unless_given_one(cli: CliRunner) -> None:
    note = json.loads(
        cli.invoke(app, ["remember", "Launch in May", "--title", "Launch date", "--json"]).stdout
    )
    kept = json.loads(cli.invoke(app, ["correct", note["id"], "Launch in June", "--json"]).stdout)
    assert kept["meta"]["title"] == "Launch date" and kept["path"] == note["path"]
    res = cli.invoke(
        app, ["correct", kept["id"], "Launch in July", "--title", "Launch (final)", "--json"]
    )
    assert res.exit_code == 0, res.output
    renamed = json.loads(res.stdout)
    assert renamed["meta"]["title"] == "Launch (final)" and renamed["path"] == note["path"]
    bad = cli.invoke(app, ["correct", renamed["id"], "Launch in July", "--title", "a\nb"])
    assert bad.exit_code == 2 and "control character" in bad.stderr


def test_a_title_brain_made_from_the_text_follows_the_correction(brain: Brain) -> None:
    made = brain.remember("We moved the product launch to March because the supplier is late")
    assert made.title == "We moved the product launch to March because…"
    new = brain.correct(made.id, "We moved the product launch to April: the supplier is later")
    assert new.title == "We moved the product launch to April: the…"
    assert new.path == made.path  # the file stays where it was
    assert brain.recall("launch April")[0].title == new.title
    chosen = brain.remember("Launch in May", title="Launch in May")  # the person's, same words
    assert brain.correct(chosen.id, "Launch in June").title == "Launch in June"
    named = brain.remember("Launch in May, venue booked", title="Launch")
    assert brain.correct(named.id, "Launch in June, venue booked").title == "Launch"


# Forget: revert, one version, the whole history ----------------------------------------------


def test_forget_the_current_version_restores_the_previous_byte_for_byte(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    old = brain.remember("The launch is in February", title="Launch date")
    original = (vault / old.path).read_bytes()
    later(clock, 5)
    new = brain.correct(old.id, "Actually, we moved the launch to March")
    brain.forget(new.id)
    assert (vault / old.path).read_bytes() == original
    assert [p.name for p in (vault / old.path).parent.glob("*.md")] == ["Launch date.md"]
    assert brain._context.caches.catalog.get(new.id) is None
    assert brain._context.caches.catalog.get(old.id).status == "active"  # type: ignore[union-attr]
    assert ids(brain.recall("launch")) == [old.id]
    assert [r.id for r in brain.list(status="active", node="Knowledge")] == [old.id]
    assert brain.doctor().ok


HAND_MADE = """---
# written by hand
title:   "Launch"
id: 01JE2Z3K4M5N6P7Q8R9S0T1V2W
tags: [plan,  launch]
created: 2026-11-30T09:00:00Z
---
The launch is in February.
"""


@pytest.mark.parametrize("status_line", ["", "status: dormant   # was active\n"])
def test_revert_is_exact_for_hand_written_front_matter(
    brain: Brain, vault: Path, status_line: str
) -> None:
    text = HAND_MADE.replace("created:", status_line + "created:")
    path = vault / "main/Knowledge/Inbox/Launch.md"
    path.write_text(text)
    brain._context.catch_up()
    new = brain.correct("01JE2Z3K4M5N6P7Q8R9S0T1V2W", "The launch is in March.")
    old = brain._context.get("01JE2Z3K4M5N6P7Q8R9S0T1V2W")
    assert old.status == "superseded"
    assert (vault / old.path).read_text().count("# written by hand") == 1
    brain.forget(new.id)
    assert path.read_text() == text


def test_forget_version_in_the_middle_relinks_the_chain(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    a = brain.remember("The launch is in February", title="Launch date")
    original = (vault / a.path).read_bytes()
    later(clock, 1)
    b = brain.correct(a.id, "The launch is in March")
    later(clock, 2)
    c = brain.correct(b.id, "The launch is in April")
    brain.forget(b.id, "version")
    assert [n.id for n in brain.history(c.id)] == [a.id, c.id]
    current = brain._context.get(c.id)
    assert current.supersedes == a.id
    assert [(r.type, r.target) for r in current.relations] == [("corrects", a.id)]
    assert brain._context.caches.catalog.get(b.id) is None
    # and a revert of the relinked chain still gives back the first version exactly
    brain.forget(c.id)
    assert (vault / a.path).read_bytes() == original


def test_forget_the_oldest_version_leaves_the_rest(brain: Brain, clock: FixedClock) -> None:
    old, new = launch(brain, clock)
    brain.forget(old.id, "version")
    current = brain._context.get(new.id)
    assert current.supersedes is None and current.relations == ()
    assert "prior_status_line" not in current.meta
    assert [n.id for n in brain.history(new.id)] == [new.id]


def test_forget_history_removes_every_version(brain: Brain, clock: FixedClock, vault: Path) -> None:
    old, new = launch(brain, clock)
    later(clock, 10)
    newest = brain.correct(new.id, "The launch is in April")
    removed = brain.forget(new.id, "history")
    assert set(removed) == {old.id, new.id, newest.id}
    assert list((vault / "main/Knowledge/Inbox").glob("*.md")) == []
    assert brain.recall("launch", include_superseded=True) == []


def test_forget_a_plain_note_and_bad_modes(brain: Brain, vault: Path) -> None:
    note = brain.remember("A plain fact", title="Fact")
    before = tree_digest(vault)
    with pytest.raises(InvalidInput, match="no other versions"):
        brain.forget(note.id, "version")
    with pytest.raises(InvalidInput, match="unknown forget mode"):
        brain.forget(note.id, "everything")
    assert tree_digest(vault) == before
    assert brain.forget(note.id) == [note.id]
    assert not (vault / note.path).exists()


def test_forget_drops_relations_that_pointed_at_the_forgotten_note(brain: Brain) -> None:
    target = brain.remember("Target fact", title="Target")
    holder = brain.remember("Holder fact", title="Holder")
    brain.relate(holder.id, "supports", target.id)
    brain.forget(target.id)
    assert brain._context.get(holder.id).relations == ()
    assert brain.doctor().ok


# Hand-edited chains ---------------------------------------------------------------------------


def _cycle(brain: Brain, vault: Path) -> tuple[Note, Note]:
    a = brain.remember("Alpha fact", title="Alpha")
    b = brain.remember("Beta fact", title="Beta")
    for one, other in ((a, b), (b, a)):
        path = vault / one.path
        path.write_text(path.read_text().replace("source:", f"supersedes: {other.id}\nsource:"))
    brain._context.catch_up()
    return a, b


def test_a_supersedes_cycle_is_reported_and_never_loops(brain: Brain, vault: Path) -> None:
    a, b = _cycle(brain, vault)
    report = brain.doctor()
    assert not report.ok and len(report.cycles) == 1
    assert a.path in report.cycles[0] and b.path in report.cycles[0]
    before = tree_digest(vault)
    for action in (
        lambda: brain.history(a.id),
        lambda: brain.forget(a.id),
        lambda: brain.correct(b.id, "x"),
    ):
        with pytest.raises(BrokenNote, match="form a cycle"):
            action()
    assert tree_digest(vault) == before
    assert {a.id, b.id} <= {h.id for h in brain.recall("fact")}  # the rest keeps working


def test_cli_cycle_and_bad_input_exit_2_without_change(cli: CliRunner, vault: Path) -> None:
    note = json.loads(cli.invoke(app, ["remember", "Plain", "--json"]).stdout)
    cases = [
        (["forget", "01JE2Z3K4M5N6P7Q8R9S0T1V2W"], "no note with id"),
        (["forget", note["id"], "--version", "--history"], "exclude each other"),
        (["correct", "01JE2Z3K4M5N6P7Q8R9S0T1V2W", "x"], "no note with id"),
        (["correct", note["id"], ""], "text is empty"),
        (["forget", note["id"] + "#2"], "chunk"),
    ]
    for args, expected in cases:
        before = tree_digest(vault)
        res = cli.invoke(app, args)
        assert res.exit_code == 2, (args, res.output)
        assert expected in res.stderr and len(res.stderr.strip().splitlines()) == 1
        assert tree_digest(vault) == before
