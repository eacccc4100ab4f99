"""Two clones through one bare remote, merging notes both changed: nothing either wrote is lost."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from brain._brain import open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._mcp_server import build_server
from brain.testing import T0

pytestmark = pytest.mark.usefixtures("git_identity")
_register()


def git(root: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0 or not check, done.stderr
    return done.stdout


def push(root: Path) -> None:
    git(root, "push", "-q", "origin", "HEAD:main")


def pull(root: Path) -> None:
    git(root, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main")


def at(minutes: int) -> FixedClock:
    return FixedClock(T0 + timedelta(minutes=minutes))


def test_one_note_corrected_on_both_machines_keeps_both_corrections(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    brain = open_vault(a, clock=at(0))
    first = brain.remember("Heron launches on May 5", title="Heron launch", node="Projects")
    brain.close()
    push(a)
    pull(b)
    brain = open_vault(a, clock=at(10))
    on_a = brain.correct(first.id, "Heron launches on May 9 (A heard)")
    brain.close()
    brain = open_vault(b, clock=at(20))
    on_b = brain.correct(first.id, "Heron launches on May 12 (B heard)")
    brain.close()
    push(a)
    pull(b)  # both wrote their version at Projects/Heron launch.md
    assert "<<<<<<<" not in (b / "main/Projects/Heron launch.md").read_text()
    assert git(b, "diff", "--name-only", "--diff-filter=U") == ""

    brain = open_vault(b, clock=at(30))  # the next command keeps A's version beside
    versions = [n.id for n in brain.history(first.id)]
    assert versions == [first.id, on_a.id, on_b.id]  # the later correction is current
    assert "May 9" in brain.expand(on_a.id).body and brain.expand(on_a.id).status == "superseded"
    assert [r.id for r in brain.list(node="Projects") if r.status == "active"] == [on_b.id]
    brain.close()
    assert git(b, "status", "--porcelain") == ""
    push(b)
    pull(a)
    brain = open_vault(a, clock=at(40))
    assert [n.id for n in brain.history(on_a.id)] == versions  # the same on the other machine
    brain.forget(on_b.id)  # a revert gives back A's correction, the one before
    assert [r.id for r in brain.list(node="Projects") if r.status == "active"] == [on_a.id]
    brain.close()


def test_corrections_on_different_days_keep_the_original_once(
    machines: tuple[Path, Path],
) -> None:
    """Each side kept the original as its own `(superseded <day>)` file: the merge held it
    twice, and the catch-up gave one copy an id of its own."""
    a, b = machines
    brain = open_vault(a, clock=at(0))
    first = brain.remember("Heron launches on May 5", title="Heron launch", node="Projects")
    brain.close()
    push(a)
    pull(b)
    brain = open_vault(a, clock=at(10))
    on_a = brain.correct(first.id, "Heron launches on May 9 (A heard)")
    brain.close()
    brain = open_vault(b, clock=at(24 * 60 + 20))  # the next day on B
    on_b = brain.correct(first.id, "Heron launches on May 12 (B heard)")
    brain.close()
    push(a)
    pull(b)
    brain = open_vault(b, clock=at(24 * 60 + 30))
    assert [n.id for n in brain.history(first.id)] == [first.id, on_a.id, on_b.id]
    report = brain.doctor()
    assert not report.renewed and not report.copies
    brain.close()
    push(b)
    pull(a)
    for root in (a, b):
        holding = [
            p.name
            for p in sorted((root / "main/Projects").iterdir())
            if f"id: {first.id}" in p.read_text()
        ]
        assert holding == ["Heron launch (superseded 2026-12-02).md"]  # the day it was first
        earlier = root / "main/Projects/Heron launch (superseded 2026-12-03).md"
        assert "May 9" in earlier.read_text()
        assert git(root, "status", "--porcelain") == ""
    brain = open_vault(a, clock=at(24 * 60 + 40))
    assert [n.id for n in brain.history(on_b.id)] == [first.id, on_a.id, on_b.id]
    assert not brain.doctor().renewed
    brain.close()


def test_a_note_edited_by_hand_on_both_machines_is_still_a_conflict(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    brain = open_vault(a, clock=at(0))
    brain.remember("Heron launches on May 5", title="Heron launch", node="Projects")
    brain.close()
    push(a)
    pull(b)
    for root, said in ((a, "May 9"), (b, "May 12")):
        path = root / "main/Projects/Heron launch.md"
        path.write_text(path.read_text().replace("May 5", said))
        git(root, "commit", "-q", "-am", "by hand")
    push(a)
    git(b, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main", check=False)
    text = (b / "main/Projects/Heron launch.md").read_text()
    assert "<<<<<<<" in text and "May 9" in text and "May 12" in text  # git's own way


def test_a_relation_to_a_dated_note_whose_id_a_merge_dropped_still_resolves(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    brain = open_vault(a, clock=at(0))
    brain.remember("a diary entry from A", node="LLM/Diary")
    brain.close()
    brain = open_vault(b, clock=at(5))
    diary = brain.remember("a diary entry from B", node="LLM/Diary")
    source = brain.remember("Heron notes from B", title="Heron", node="Projects")
    brain.relate(source.id, "references", diary.id, None)
    brain.close()
    push(a)
    pull(b)  # one day's diary from both: the merge keeps A's (older) id
    brain = open_vault(b, clock=at(10))
    (row,) = brain.list(node="LLM/Diary")
    merged = brain.expand(row.id, touch=False)
    assert merged.id != diary.id and diary.id in merged.meta["merged_ids"]
    for root in (b, a):
        if root == a:
            brain.close()
            push(b)
            pull(a)
            brain = open_vault(a, clock=at(20))
        (edge,) = brain.links(source.id).outgoing
        assert edge.target == merged.id
        assert "from B" in brain.expand(edge.target, touch=False).body
        assert not brain.doctor().dangling
    brain.close()
    assert git(a, "status", "--porcelain") == ""


def a_diary_entry_on_each_pulled_into_b(a: Path, b: Path) -> str:
    """A diary entry made on each machine the same day, A's pulled into B: the dated merge
    keeps A's id; B's id, returned, is the one it dropped."""
    brain = open_vault(a, clock=at(0))
    brain.remember("a diary entry from A", node="LLM/Diary")
    brain.close()
    brain = open_vault(b, clock=at(5))
    dropped = brain.remember("a diary entry from B", node="LLM/Diary").id
    brain.close()
    push(a)
    pull(b)
    return dropped


def test_an_id_a_dated_merge_dropped_is_looked_up_through_the_note_that_took_it_in(
    machines: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`brain expand <dropped id>` said "no note", and so did `relate` to it."""
    a, b = machines
    dropped = a_diary_entry_on_each_pulled_into_b(a, b)
    monkeypatch.setenv("BRAIN_VAULT", str(b))
    said = CliRunner().invoke(app, ["expand", dropped])
    assert said.exit_code == 0, said.output
    brain = open_vault(b, clock=at(10))
    (row,) = brain.list(node="LLM/Diary")
    kept = row.id
    assert f"{dropped} was merged into {kept}" in said.stdout and "from B" in said.stdout
    said = CliRunner().invoke(app, ["expand", dropped, "--json"])
    shown = json.loads(said.stdout)
    assert shown["id"] == kept and shown["merged_from"] == dropped
    heron = brain.remember("Heron notes", title="Heron", node="Projects")
    brain.relate(heron.id, "references", dropped)  # written as the kept id
    (edge,) = brain.links(heron.id).outgoing
    assert edge.target == kept and not brain.doctor().dangling
    brain.close()

    async def scenario(client: Client) -> None:  # the MCP `expand` of the same id
        result = await client.call_tool("expand", {"note_id": dropped})
        assert not result.is_error, result.content
        assert result.structured_content["id"] == kept
        assert result.structured_content["merged_from"] == dropped

    brain = open_vault(b, clock=at(20))
    server = build_server(brain)

    async def main() -> None:
        async with Client(server) as client:
            await scenario(client)

    anyio.run(main)
    brain.close()


def test_a_change_through_an_id_a_dated_merge_dropped_is_refused_naming_the_kept_note(
    machines: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`brain correct`, `forget` and `set` on the dropped id said "no note with id"; acting
    on the whole merged day through the other machine's id must be the person's choice."""
    a, b = machines
    dropped = a_diary_entry_on_each_pulled_into_b(a, b)
    brain = open_vault(b, clock=at(10))  # the regeneration after the merge runs here
    (row,) = brain.list(node="LLM/Diary")
    kept = row.id
    brain.close()
    before = (git(b, "rev-parse", "HEAD"), (b / row.path).read_bytes())
    monkeypatch.setenv("BRAIN_VAULT", str(b))
    for args in (
        ["correct", dropped, "the diary says otherwise"],
        ["forget", dropped, "--yes"],
        ["set", dropped, "status", "resolved"],
    ):
        said = CliRunner().invoke(app, args)
        assert said.exit_code == 2, said.output
        assert f"{dropped} was merged into {kept}" in said.output
        assert f"run the same command on {kept}" in said.output
    assert (git(b, "rev-parse", "HEAD"), (b / row.path).read_bytes()) == before
    assert git(b, "status", "--porcelain") == ""

    async def main() -> None:  # the MCP `forget` of the same id
        async with Client(build_server(brain)) as client:
            result = await client.call_tool("forget", {"note_id": dropped})
            assert result.is_error
            assert f"{dropped} was merged into {kept}" in result.content[0].text

    brain = open_vault(b, clock=at(20))
    anyio.run(main)
    assert brain.expand(kept, touch=False).id == kept
    brain.close()
    assert (git(b, "rev-parse", "HEAD"), (b / row.path).read_bytes()) == before


def test_git_status_during_a_merge_names_what_the_merge_staged(
    machines: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The merge's staged files were listed as "changed by hand, left for you"."""
    a, b = machines
    for root, said in ((a, "A's goal"), (b, "B's goal")):
        goals = root / "main/Master/Goals.md"
        goals.write_text(goals.read_text() + f"\n{said}\n")
        git(root, "commit", "-q", "-am", "by hand")
    brain = open_vault(a, clock=at(0))
    brain.remember("Heron launches on May 5", title="Heron launch", node="Projects")
    brain.close()
    push(a)
    git(b, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main", check=False)
    (b / "loose.md").write_text("a file of the person's own\n")
    monkeypatch.setenv("BRAIN_VAULT", str(b))
    said = CliRunner().invoke(app, ["git", "status", "--json"])
    assert said.exit_code == 0, said.output
    report = json.loads(said.stdout)
    assert report["busy"] == "a merge" and report["conflicts"] == ["main/Master/Goals.md"]
    assert "main/Projects/Heron launch.md" in report["in_merge"]
    assert report["by_hand"] == ["loose.md"]
    said = CliRunner().invoke(app, ["git", "status"])
    assert "in a merge, staged main/Projects/Heron launch.md" in said.stdout
