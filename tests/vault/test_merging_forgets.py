"""A note forgotten on one machine stays forgotten when the other machine's changes to it merge."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import open_vault
from brain._cli import _register, app
from brain._model import Note
from brain._vault import forgotten
from tests.vault.test_merging_notes import at, git, push

pytestmark = pytest.mark.usefixtures("git_identity")
_register()


def pull(root: Path) -> None:
    """As test_merging_notes.pull, but a pull that stops on a conflict is what some tests want."""
    git(root, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main", check=False)


def holding(root: Path, text: str) -> list[str]:
    """The committed-side files (notes, logs, index.json) under main/ that hold `text`."""
    return sorted(
        str(p.relative_to(root))
        for p in (root / "main").rglob("*")
        if p.is_file() and text in p.read_text(encoding="utf-8", errors="replace")
    )


def shared_note(a: Path, b: Path) -> tuple[str, str]:
    """`Heron launch` (forgotten later) and `Falcon` on both machines."""
    brain = open_vault(a, clock=at(0))
    heron = brain.remember("Heron launches on May 5 from pad two", title="Heron launch")
    falcon = brain.remember("Falcon is the other rocket", title="Falcon")
    brain.close()
    push(a)
    pull(b)
    return heron.id, falcon.id


def forgotten_on_a(a: Path, b: Path) -> tuple[str, str]:
    """`Heron launch` and `Falcon` on both machines, Heron forgotten on A (not yet pushed)."""
    heron, falcon = shared_note(a, b)
    brain = open_vault(a, clock=at(10))
    brain.forget(heron)
    brain.close()
    return heron, falcon


def forgotten_on_a_corrected_on_b(a: Path, b: Path) -> tuple[str, Note]:
    """`Heron launch` forgotten on A, then corrected on B (which has not pulled A's forget)."""
    heron, _ = forgotten_on_a(a, b)
    brain = open_vault(b, clock=at(20))
    newer = brain.correct(heron, "Heron launches on May 12 (B heard)")
    brain.close()
    return heron, newer


def settled(root: Path, minutes: int) -> None:
    """The next brain command on a machine (it finishes what the pull left)."""
    open_vault(root, clock=at(minutes)).close()


def test_a_forget_commit_names_the_forgotten_notes_in_a_trailer(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    heron, _ = forgotten_on_a(a, b)
    said = git(a, "log", "-1", "--format=%(trailers:key=Brain-Forgets,valueonly)")
    assert said.split() == [heron]


def test_a_forget_pulled_onto_a_correction_keeps_the_correction_alone(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    heron, newer = forgotten_on_a_corrected_on_b(a, b)
    push(a)
    pull(b)  # modify/delete on Heron launch.md; B's correction moved the original aside
    settled(b, 30)
    assert git(b, "diff", "--name-only", "--diff-filter=U") == ""
    assert git(b, "status", "--porcelain") == ""
    assert holding(b, heron) == []
    assert holding(b, "pad two") == []
    brain = open_vault(b, clock=at(40))
    kept = brain.expand(newer.id)
    assert "May 12" in kept.body and kept.supersedes is None and kept.status == "active"
    assert not kept.relations
    brain.close()
    forgotten.lookup(b, heron)  # B has a record now: `doctor --forgotten` works there
    subject = git(b, "log", "-1", "--format=%s")
    assert heron in subject and "forgotten on another clone" in subject

    push(b)
    pull(a)
    settled(a, 50)
    assert holding(a, heron) == [] and holding(a, "pad two") == []
    assert git(a, "status", "--porcelain") == ""


@pytest.mark.parametrize("change", ["relate", "set"])
def test_a_change_on_one_machine_to_a_note_forgotten_on_the_other_goes_with_the_forget(
    machines: tuple[Path, Path], change: str
) -> None:
    a, b = machines
    heron, falcon = forgotten_on_a(a, b)
    brain = open_vault(b, clock=at(20))
    if change == "relate":
        brain.relate(falcon, "references", heron)
    else:
        brain.set_field(heron, "status", "resolved")
    brain.close()
    push(b)
    pull(a)  # A deleted Heron launch.md, B changed it: B's change comes into A
    settled(a, 30)
    assert git(a, "diff", "--name-only", "--diff-filter=U") == ""
    assert git(a, "status", "--porcelain") == ""
    assert holding(a, heron) == [] and holding(a, "pad two") == []
    brain = open_vault(a, clock=at(40))
    assert not brain.expand(falcon).relations
    brain.close()

    push(a)
    pull(b)  # and B takes the forget
    settled(b, 50)
    assert git(b, "status", "--porcelain") == ""
    assert holding(b, heron) == [] and holding(b, "pad two") == []
    forgotten.lookup(b, heron)


def test_git_status_names_the_collision_and_the_next_command_settles_it(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    heron, falcon = forgotten_on_a(a, b)
    brain = open_vault(b, clock=at(20))
    brain.relate(heron, "references", falcon)
    brain.close()
    push(a)
    pull(b)
    result = CliRunner().invoke(app, ["git", "status", "--vault", str(b)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "Heron launch.md: forgotten on one side (`brain forget`), changed on the other" in said
    assert git(b, "diff", "--name-only", "--diff-filter=U") != ""  # status changes nothing

    # A record now on B too: the check runs (its traces: git's history, the caches until sleep)
    result = CliRunner().invoke(app, ["doctor", "--forgotten", heron, "--vault", str(b)])
    assert result.exit_code == 1 and "trace .git object" in result.output, result.output
    assert git(b, "diff", "--name-only", "--diff-filter=U") == ""
    assert git(b, "status", "--porcelain") == ""
    assert holding(b, heron) == [] and holding(b, "pad two") == []


def test_a_note_deleted_by_hand_on_one_side_stays_the_persons_conflict(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    heron, falcon = shared_note(a, b)
    git(a, "rm", "-q", "main/Knowledge/Inbox/Heron launch.md")
    git(a, "commit", "-q", "-m", "gone by hand")
    brain = open_vault(b, clock=at(20))
    brain.relate(heron, "references", falcon)
    brain.close()
    push(a)
    pull(b)
    settled(b, 30)
    assert (
        git(b, "diff", "--name-only", "--diff-filter=U") == "main/Knowledge/Inbox/Heron launch.md\n"
    )
    result = CliRunner().invoke(app, ["git", "status", "--vault", str(b)])
    said = " ".join(result.output.split())
    assert "Heron launch.md: deleted on one side, changed on the other" in said
    result = CliRunner().invoke(app, ["doctor", "--vault", str(b)])  # no markers, still named
    said = " ".join(result.output.split())
    assert result.exit_code == 1
    assert "Heron launch.md: deleted on one side of the merge in progress" in said


def test_a_correction_pulled_onto_a_forget_stays_a_note_of_its_own(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    heron, newer = forgotten_on_a_corrected_on_b(a, b)
    push(b)
    pull(a)  # A forgot it; B's correction and B's copy of the original come in
    settled(a, 30)
    assert git(a, "status", "--porcelain") == ""
    assert holding(a, heron) == [] and holding(a, "pad two") == []
    brain = open_vault(a, clock=at(40))
    assert brain.expand(newer.id).supersedes is None
    assert [n.id for n in brain.history(newer.id)] == [newer.id]
    brain.close()


def test_a_forget_undone_is_not_honoured_by_the_merge(machines: tuple[Path, Path]) -> None:
    a, b = machines
    heron, falcon = forgotten_on_a(a, b)
    result = CliRunner().invoke(app, ["undo", "--vault", str(a)])
    assert result.exit_code == 0, result.output
    brain = open_vault(b, clock=at(20))
    brain.relate(heron, "references", falcon)
    brain.close()
    push(a)
    pull(b)
    settled(b, 30)
    brain = open_vault(b, clock=at(40))
    assert [r.target for r in brain.expand(heron).relations] == [falcon]
    brain.close()


def test_a_local_only_notes_forget_names_no_id_in_git(machines: tuple[Path, Path]) -> None:
    a, _b = machines
    brain = open_vault(a, clock=at(0))
    local = brain.remember("A note this machine keeps", title="Local", visibility="local-only")
    other = brain.remember("Falcon is the other rocket", title="Falcon")
    brain.relate(other.id, "references", local.id)  # its forget rewrites a committed note
    brain.forget(local.id)
    brain.close()
    assert "Brain-Forgets" not in git(a, "log", "--format=%B")


def test_a_clone_that_lost_its_caches_still_honours_a_forget_a_pull_brought(
    machines: tuple[Path, Path],
) -> None:
    """With `.brain/` gone (no record of the commit last seen), the original A forgot came
    back with B's correction and stayed: brain could not tell what the pull brought."""
    a, b = machines
    heron, newer = forgotten_on_a_corrected_on_b(a, b)
    push(a)
    shutil.rmtree(b / ".brain")  # a cache, the docs say: a person may delete it
    pull(b)
    settled(b, 30)
    assert git(b, "status", "--porcelain") == ""
    assert holding(b, heron) == [] and holding(b, "pad two") == []
    brain = open_vault(b, clock=at(40))
    assert brain.expand(newer.id).supersedes is None
    brain.close()
    forgotten.lookup(b, heron)  # recorded here too, for `doctor --forgotten`


def test_a_forget_reverted_by_hand_is_not_honoured_by_a_clone_that_lost_its_caches(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    heron, _ = forgotten_on_a(a, b)
    git(a, "revert", "--no-edit", "HEAD")  # git's own revert: no Brain-Undoes trailer
    settled(a, 15)
    push(a)
    pull(b)
    shutil.rmtree(b / ".brain")
    settled(b, 30)
    assert holding(b, "pad two") == ["main/Knowledge/Inbox/Heron launch.md"]
    assert git(b, "status", "--porcelain") == ""
    brain = open_vault(b, clock=at(40))
    assert "pad two" in brain.expand(heron).body
    brain.close()
