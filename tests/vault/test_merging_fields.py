"""Two clones, one note: a correction or a change of fields on one side and brain's own change
of its fields or its end on the other merge without a conflict, and neither change is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain._brain import open_vault
from tests.vault.test_merging_notes import at, git, pull, push

pytestmark = pytest.mark.usefixtures("git_identity")
HERON = "main/Projects/Heron launch.md"


def start(a: Path, b: Path) -> tuple[str, str]:
    brain = open_vault(a, clock=at(0))
    note = brain.remember("Heron launches on May 5", title="Heron launch", node="Projects")
    other = brain.remember("Falcon notes", title="Falcon", node="Projects")
    brain.close()
    push(a)
    pull(b)
    return note.id, other.id


def test_a_relation_and_a_status_set_on_one_machine_join_the_other_machines_correction(
    machines: tuple[Path, Path],
) -> None:
    """Both rewrote the front-matter around `status:`: a conflict in brain's own fields."""
    a, b = machines
    first, falcon = start(a, b)
    brain = open_vault(a, clock=at(10))
    corrected = brain.correct(first, "Heron launches on May 9").id
    brain.close()
    brain = open_vault(b, clock=at(20))
    brain.relate(first, "references", falcon)
    brain.set_field(first, "status", "resolved")
    brain.set_field(first, "defining", "decision")
    brain.close()
    push(a)
    pull(b)
    assert git(b, "diff", "--name-only", "--diff-filter=U") == ""
    brain = open_vault(b, clock=at(30))
    note = brain.expand(corrected, touch=False)
    assert "May 9" in note.body and note.status == "resolved" and note.defining == "decision"
    assert [(r.type, r.target) for r in note.relations] == [
        ("corrects", first),
        ("references", falcon),
    ]
    assert [n.id for n in brain.history(first)] == [first, corrected]
    assert not brain.doctor().broken
    brain.close()
    assert git(b, "status", "--porcelain") == ""


def test_a_paragraph_added_by_title_on_one_machine_joins_the_other_machines_correction(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    first, _ = start(a, b)
    brain = open_vault(a, clock=at(10))
    corrected = brain.correct(first, "Heron launches on May 9").id
    brain.close()
    brain = open_vault(b, clock=at(20))
    brain.remember("The Heron team is five people", title="Heron launch", node="Projects")
    brain.close()
    push(a)
    pull(b)
    brain = open_vault(b, clock=at(30))
    note = brain.expand(corrected, touch=False)
    assert note.body == "Heron launches on May 9\n\nThe Heron team is five people\n"
    assert "May 5" in brain.expand(first, touch=False).body  # the history, as corrected
    brain.close()


def test_relations_tags_and_paragraphs_added_on_both_machines_all_stay(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    first, falcon = start(a, b)
    for root, minutes, kind, tag, said in (
        (a, 10, "references", "rocket", "Heron has a blue logo"),
        (b, 20, "supports", "space", "The Heron team is five people"),
    ):
        brain = open_vault(root, clock=at(minutes))
        brain.relate(first, kind, falcon)
        brain.remember("Heron launches on May 5", title="Heron launch", node="Projects", tags=[tag])
        brain.remember(said, title="Heron launch", node="Projects")
        brain.close()
    push(a)
    pull(b)
    assert git(b, "diff", "--name-only", "--diff-filter=U") == ""
    brain = open_vault(b, clock=at(30))
    note = brain.expand(first, touch=False)
    assert note.body == (
        "Heron launches on May 5\n\nHeron has a blue logo\n\nThe Heron team is five people\n"
    )  # the earlier machine's paragraph first
    assert sorted(note.tags) == ["rocket", "space"]
    assert sorted(r.type for r in note.relations) == ["references", "supports"]
    brain.close()
    push(b)
    pull(a)
    assert (a / HERON).read_bytes() == (b / HERON).read_bytes()


def test_one_field_set_two_ways_is_still_a_conflict(machines: tuple[Path, Path]) -> None:
    """What brain cannot decide for the person stays git's conflict."""
    a, b = machines
    first, _ = start(a, b)
    for root, minutes, status in ((a, 10, "dormant"), (b, 20, "resolved")):
        brain = open_vault(root, clock=at(minutes))
        brain.set_field(first, "status", status)
        brain.close()
    push(a)
    git(b, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main", check=False)
    conflicted = git(b, "diff", "--name-only", "--diff-filter=U").splitlines()
    assert conflicted == [HERON]


def test_goals_replaced_on_both_machines_keeps_both_texts_the_later_first(
    machines: tuple[Path, Path],
) -> None:
    """Goals replaced on A and on B was a git conflict: the note left brain (and the
    briefing) until the person resolved it by hand."""
    a, b = machines
    start(a, b)
    for root, minutes, goal in ((b, 20, "Ship Falcon"), (a, 10, "Ship Heron")):
        brain = open_vault(root, clock=at(minutes))
        brain.remember(goal, title="Goals", node="Master", kind="singleton")
        brain.close()
    push(a)
    pull(b)
    assert git(b, "diff", "--name-only", "--diff-filter=U") == ""
    brain = open_vault(b, clock=at(30))
    (row,) = [r for r in brain.list(node="Master") if r.title == "Goals"]
    goals = brain.expand(row.id, touch=False)
    assert goals.body.index("Ship Falcon") < goals.body.index("Ship Heron")  # B's is the later
    assert "Replaced on two machines; the earlier text" in goals.body
    assert brain.doctor().ok
    brain.close()
    assert git(b, "status", "--porcelain") == ""
    push(b)
    pull(a)  # a fast-forward: both clones hold the same bytes
    assert (a / goals.path).read_bytes() == (b / goals.path).read_bytes()


def test_a_pulled_correction_keeps_the_title_of_the_version_it_moved_aside(
    machines: tuple[Path, Path],
) -> None:
    """B's catch-up took `Heron launch (superseded <day>).md` for a rename by hand, retitled
    the old version after its file name, and committed that: a change nobody made."""
    a, b = machines
    first, _ = start(a, b)
    open_vault(b, clock=at(5)).close()  # B's caches know the note at its path
    brain = open_vault(a, clock=at(10))
    brain.correct(first, "Heron launches on May 9")
    brain.close()
    push(a)
    head = git(b, "rev-parse", "HEAD")
    pull(b)
    pulled = git(b, "rev-parse", "HEAD")
    assert pulled != head
    brain = open_vault(b, clock=at(20))
    assert brain.expand(first, touch=False).title == "Heron launch"
    brain.close()
    assert git(b, "rev-parse", "HEAD") == pulled and git(b, "status", "--porcelain") == ""
