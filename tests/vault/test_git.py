"""The vault under git, with the real git binary in temp folders (docs/git.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from mcp import Client
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import BrainError
from brain._git import history as githistory
from brain._git import repo as gitvault
from brain._git.merge import merge_dated
from brain._indexes.nodeindex import render
from brain._mcp_server import build_server
from brain.testing import NO_AUTOSTART, T0, new_vault, tree_digest

ROOT = Path(__file__).resolve().parents[2]
_register()


pytestmark = pytest.mark.usefixtures("git_identity")


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def files_of(root: Path, commit: str = "HEAD") -> set[str]:
    out = git(root, "show", "--name-only", "--format=", commit)
    return {line for line in out.splitlines() if line}


@pytest.fixture
def repo(vault: Path) -> Path:
    gitvault.enable(vault)
    return vault


@pytest.fixture
def gbrain(repo: Path, clock: FixedClock) -> Iterator[Brain]:
    b = open_vault(repo, clock=clock)
    yield b
    b.close()


# init and enable -------------------------------------------------------------------
def test_init_git_makes_a_repository_with_ignores_drivers_and_a_first_commit(
    tmp_path: Path,
) -> None:
    root = tmp_path / "v"
    result = CliRunner().invoke(app, ["init", str(root), "--git"])
    assert result.exit_code == 0, result.output
    assert subjects(root) == ["brain: start the vault's history"]
    ignored = (root / ".gitignore").read_text()
    assert ".brain/" in ignored and "local-only/" in ignored and "cold/local-only/" in ignored
    for rel in (
        ".brain/x",
        "local-only/main/a.md",
        "cold/local-only/main/a.md.zst",
        ".obsidian/workspace.json",
        ".obsidian/workspace-mobile.json",
        ".trash/Deleted note.md",
    ):
        assert git(root, "check-ignore", "--no-index", rel).strip() == rel
    for rel in (".obsidian/app.json", ".obsidian/plugins/x/data.json"):  # the person's to decide
        checked = subprocess.run(["git", "-C", str(root), "check-ignore", "--no-index", rel])
        assert checked.returncode == 1  # not ignored
    attributes = (root / ".gitattributes").read_text()
    assert "**/index.json merge=brain-regenerate" in attributes
    assert "**/LLM/Diary/*.md merge=brain-dated" in attributes
    assert "merge-driver dated %O %A %B %P" in git(root, "config", "merge.brain-dated.driver")
    assert "autocommit: true" in (root / "brain.yaml").read_text()
    tracked = git(root, "ls-files").splitlines()
    assert "brain.yaml" in tracked and "main/Master/Goals.md" in tracked
    assert git(root, "status", "--porcelain") == ""


def test_enable_on_an_existing_repository_commits_only_its_own_files(vault: Path) -> None:
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "mine")
    (vault / "main/Master/Goals.md").write_text("hand edit\n")
    gitvault.enable(vault)
    assert files_of(vault) == {".gitignore", ".gitattributes", "brain.yaml"}
    assert "main/Master/Goals.md" in git(vault, "status", "--porcelain")
    assert gitvault.enable(vault) == git(vault, "rev-parse", "HEAD").strip()  # idempotent


def test_enable_leaves_another_vault_moved_inside_out_of_the_first_commit(
    vault: Path, tmp_path: Path, clock: FixedClock
) -> None:
    inner = new_vault(tmp_path / "Projects vault", clock.now(), daemon=NO_AUTOSTART)
    b = open_vault(inner, clock=clock)
    b.remember("Otters hold hands while they sleep", title="Otters")
    b.close()
    assert (inner / ".brain/catalog.sqlite").is_file()  # its caches, private to its owner
    inner.rename(vault / "main/Knowledge/Projects")  # moved in by hand, caches and all
    gitvault.enable(vault)
    tracked = git(vault, "ls-files").splitlines()
    assert "main/Master/Goals.md" in tracked
    assert [t for t in tracked if t.startswith("main/Knowledge/Projects")] == []


def test_without_git_init_and_enable_fail_clearly_and_change_nothing(
    tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    runner = CliRunner()
    result = runner.invoke(app, ["init", str(tmp_path / "new"), "--git"])
    assert result.exit_code == 2 and "git is not installed" in result.output
    assert not (tmp_path / "new").exists()
    before = tree_digest(vault)
    result = runner.invoke(app, ["git", "enable", "--vault", str(vault)])
    assert result.exit_code == 2 and "git is not installed" in result.output
    assert tree_digest(vault) == before and not (vault / ".git").exists()


def test_autocommit_without_git_refuses_the_write(
    repo: Path, clock: FixedClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = open_vault(repo, clock=clock)
    before = tree_digest(repo)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(BrainError, match="git is not installed"):
        b.remember("nothing half-done", title="Half")
    assert tree_digest(repo) == before
    b.close()


# one commit per operation ----------------------------------------------------------
def test_a_long_title_is_cut_in_the_commit_subject(gbrain: Brain, repo: Path) -> None:
    long = gbrain.remember("A long one.", title="Plan " + "x" * 300)
    assert subjects(repo)[0] == f'brain: remember "Plan {"x" * 54}…" ({long.id})'


def test_each_operation_is_one_commit_of_exactly_its_files(gbrain: Brain, repo: Path) -> None:
    start = len(subjects(repo))
    a = gbrain.remember("The launch is on March 3.", title="Launch date")
    assert subjects(repo)[0] == f'brain: remember "Launch date" ({a.id})'
    assert files_of(repo) == {a.path}
    assert "Brain-Op: remember" in git(repo, "log", "-1", "--format=%B")
    b = gbrain.remember("Kickoff is in February.", title="Kickoff")
    gbrain.relate(b.id, "extends", a.id)
    assert subjects(repo)[0] == f"brain: relate {b.id} extends {a.id}"
    assert files_of(repo) == {b.path}
    gbrain.relate(b.id, "extends", a.id, weight=0.4)  # the same relation, weighed again
    assert subjects(repo)[0] == f"brain: relate {b.id} extends {a.id} (weight 0.4)"
    c = gbrain.correct(a.id, "The launch moved to March 10.")
    assert subjects(repo)[0] == f'brain: correct "Launch date" ({c.id}), superseding {a.id}'
    gbrain.forget(b.id)
    assert subjects(repo)[0] == f"brain: forget {b.id} (1 objects)"
    assert "Kickoff" not in git(repo, "log", "-1", "--format=%B")  # a forgotten title stays out
    assert b.path in files_of(repo)
    assert len(subjects(repo)) == start + 6
    assert git(repo, "status", "--porcelain") == ""


def test_a_read_that_touches_a_note_rides_along_with_the_next_commit(
    gbrain: Brain, repo: Path, clock: FixedClock
) -> None:
    read = gbrain.remember("read me later", title="Reading")
    count = len(subjects(repo))
    clock.set(T0 + timedelta(days=1))
    gbrain.expand(read.id)  # marks the note touched: no commit of its own
    assert len(subjects(repo)) == count
    assert githistory.status(repo, gbrain.settings).pending == (read.path,)
    other = gbrain.remember("a new fact", title="New")
    assert files_of(repo) == {read.path, other.path}
    assert "1 read(s) that touched notes" in git(repo, "log", "-1", "--format=%B")


def test_a_pending_read_does_not_carry_a_persons_later_change_into_a_brain_commit(
    gbrain: Brain, repo: Path, clock: FixedClock
) -> None:
    read = gbrain.remember("read me later", title="Reading")
    clock.set(T0 + timedelta(days=1))
    gbrain.expand(read.id)  # its touch waits for brain's next commit
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mine")  # the person commits everything, the touch too
    moved = repo / "main/Knowledge/Reading.md"
    (repo / read.path).rename(moved)  # and then moves the note by hand
    other = gbrain.remember("a new fact", title="New")
    assert files_of(repo) == {other.path}  # not the person's move of Reading.md
    assert git(repo, "status", "--porcelain", "--", read.path).startswith(" D")  # theirs


def test_sleep_is_one_commit_with_a_summary(gbrain: Brain, repo: Path, clock: FixedClock) -> None:
    for n in range(3):
        gbrain.remember(f"old fact {n}", title=f"Old {n}")
    clock.set(T0 + timedelta(days=30))
    count = len(subjects(repo))
    report = gbrain.sleep()
    assert len(report.aged) == 3
    assert len(subjects(repo)) == count + 1
    assert subjects(repo)[0].startswith("brain: sleep — 3 dormant")
    assert git(repo, "status", "--porcelain") == ""


def test_nothing_from_brain_folder_or_local_only_is_committed(gbrain: Brain, repo: Path) -> None:
    note = gbrain.remember("my passport number is 123", title="Passport")
    gbrain.set_field(note.id, "visibility", "local-only")
    moved = gbrain._context.get(note.id)
    assert moved.path.startswith("local-only/")
    assert subjects(repo)[0] == f"brain: set visibility=local-only on a local-only note ({note.id})"
    tracked = git(repo, "log", "--all", "--name-only", "--format=").splitlines()
    assert not [p for p in tracked if p.startswith((".brain/", "local-only/", "cold/local-only/"))]
    assert note.path in files_of(repo)  # its old place was removed in git
    assert "Passport" not in git(repo, "log", "-1", "--format=%B")
    gbrain.remember("private diary line", title="Secret", node="Knowledge/Inbox")
    assert not [p for p in git(repo, "ls-files").splitlines() if p.startswith(".brain")]


def test_hand_changes_are_left_out_and_reported(
    gbrain: Brain, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    goals = repo / "main/Master/Goals.md"
    goals.write_text(goals.read_text() + "\nwritten by hand\n")
    (repo / "main/Knowledge/Inbox/Scratch.md").write_text("# scratch\n")
    note = gbrain.remember("a fact", title="Fact", node="Projects")
    assert files_of(repo) == {note.path}
    gbrain.list()  # the catch-up gives Scratch.md an id, yet leaves it to the person
    assert "id:" in (repo / "main/Knowledge/Inbox/Scratch.md").read_text()
    assert files_of(repo) == {note.path}
    report = githistory.status(repo, gbrain.settings)
    assert "main/Master/Goals.md" in report.by_hand
    assert "main/Knowledge/Inbox/Scratch.md" in report.by_hand
    assert report.pending == () and report.pending_error is None
    monkeypatch.setenv("BRAIN_VAULT", str(repo))
    shown = CliRunner().invoke(app, ["git", "status"])
    assert "changed by hand, left for you main/Master/Goals.md" in shown.output


def test_a_failed_commit_keeps_the_write_and_the_next_operation_retries(
    gbrain: Brain, repo: Path
) -> None:
    lock = repo / ".git/index.lock"
    lock.write_text("")  # another git process holds the index: commits fail
    first = gbrain.remember("kept on disk", title="First")
    assert (repo / first.path).exists() and gbrain._context.get(first.id).body == "kept on disk\n"
    report = githistory.status(repo, gbrain.settings)
    assert report.pending == (first.path,) and "index.lock" in (report.pending_error or "")
    lock.unlink()
    second = gbrain.remember("and this one", title="Second")
    assert files_of(repo) == {first.path, second.path}
    assert subjects(repo)[0] == f'brain: remember "First" ({first.id}) (+1 more)'
    assert githistory.status(repo, gbrain.settings).pending == ()


def test_an_import_of_many_conversations_is_one_commit(
    gbrain: Brain, repo: Path, tmp_path: Path
) -> None:
    from tests.ingest.test_recalls import chatgpt, zipped

    before = len(subjects(repo))
    report = gbrain.import_export("chatgpt", zipped(tmp_path, chatgpt(6), "chatgpt.zip"))
    assert len(report.added) == 6
    assert len(subjects(repo)) == before + 1
    assert subjects(repo)[0] == "brain: import a chatgpt export"
    assert sum(p.endswith(".md") for p in files_of(repo)) == 6
    assert git(repo, "status", "--porcelain") == ""


def test_one_mcp_session_is_one_commit(repo: Path, clock: FixedClock) -> None:
    b = open_vault(repo, clock=clock)
    before = len(subjects(repo))
    server = build_server(b)

    async def main() -> None:
        async with Client(server) as client:
            for n in range(4):
                await client.call_tool("remember", {"text": f"fact {n}", "title": f"Fact {n}"})
            assert len(subjects(repo)) == before  # nothing yet: the session is not over
            for step in ("session", "addendum", "maintain", "remarks", "diary", "close"):
                args = {"text": "went well"} if step in ("addendum", "diary") else {}
                result = await client.call_tool(step, args)
                assert not result.is_error, result.content

    anyio.run(main)
    assert len(subjects(repo)) == before + 1
    assert subjects(repo)[0].startswith('brain: remember "Fact 0"')
    committed = files_of(repo)
    assert sum(p.startswith("main/Knowledge/") for p in committed) == 4
    assert any(p.startswith("main/LLM/Diary/") for p in committed)
    assert git(repo, "status", "--porcelain") == ""
    b.close()


# history ------------------------------------------------------------------------
def test_log_of_a_note_follows_it_across_a_rename(
    gbrain: Brain, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain import _partitions as partitions

    note = gbrain.remember("The launch is on March 3.", title="Launch date")
    gbrain.remember("unrelated", title="Other")
    partitions.rename(gbrain._context, "main", "work")
    assert subjects(repo)[0] == "brain: partition rename main to work"
    monkeypatch.setenv("BRAIN_VAULT", str(repo))
    result = CliRunner().invoke(app, ["log", note.id, "--json"])
    assert result.exit_code == 0, result.output
    messages = [e["message"] for e in json.loads(result.output)]
    assert messages[0] == "brain: partition rename main to work"
    assert f'brain: remember "Launch date" ({note.id})' in messages
    assert not any("Other" in m for m in messages)
    assert all(e["date"].startswith("20") for e in json.loads(result.output))
    recent = CliRunner().invoke(app, ["log", "-n", "2"])
    assert recent.exit_code == 0
    assert "partition rename main to work" in recent.output and '"Other"' in recent.output
    assert "start the vault's history" not in recent.output


def test_undo_reverts_brains_last_commit_and_refuses_after_a_person_commits(
    gbrain: Brain, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = gbrain.remember("keep me", title="Keep")
    bad = gbrain.remember("a bad write", title="Bad")
    monkeypatch.setenv("BRAIN_VAULT", str(repo))
    runner = CliRunner()
    result = runner.invoke(app, ["undo"])
    assert result.exit_code == 0, result.output
    assert not (repo / bad.path).exists() and (repo / kept.path).exists()
    assert subjects(repo)[0] == f'brain: undo "remember "Bad" ({bad.id})"'
    b = open_vault(repo, clock=gbrain.clock)
    assert [r.id for r in b.list(node="Knowledge")] == [kept.id]
    assert not (repo / ".git/REVERT_HEAD").exists()
    (repo / "staged.txt").write_text("mine\n")
    git(repo, "add", "staged.txt")
    result = runner.invoke(app, ["undo"])
    assert result.exit_code == 2 and "staged.txt is staged" in result.output
    git(repo, "rm", "-q", "--cached", "staged.txt")
    result = runner.invoke(app, ["undo"])  # the next undo reaches the write before
    assert result.exit_code == 0 and not (repo / kept.path).exists()
    assert "staged.txt" not in files_of(repo)
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-qm", "my own change")
    before = tree_digest(repo)
    result = runner.invoke(app, ["undo"])
    assert result.exit_code == 2
    assert "the last commit is not brain's" in result.output and "my own change" in result.output
    assert tree_digest(repo) == before
    b.close()


def test_undoing_corrections_one_by_one_leaves_one_current_version(
    gbrain: Brain, repo: Path
) -> None:
    march = gbrain.remember("The launch is in March.", title="Launch")
    april = gbrain.correct(march.id, "The launch is in April.")
    may = gbrain.correct(april.id, "The launch is in May.")
    for current, text in ((april, "April"), (march, "March")):
        gbrain.git_undo()
        rows = {r.id: r.status for r in gbrain.list(node="Knowledge")}
        assert [i for i, status in rows.items() if status == "active"] == [current.id]
        assert len(rows) == 1 + (current is april)  # March stays as April's history
        hits = gbrain.recall("when is the launch")
        assert [h.id for h in hits if h.title == "Launch"] == [current.id]
        assert text in gbrain.expand(current.id).body
    assert {may.id, april.id}.isdisjoint(r.id for r in gbrain.list())


def test_undo_after_reading_a_note_undoes_the_last_write_not_the_read(
    gbrain: Brain, repo: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = gbrain.remember("The zoo opens at nine.", title="Zoo")
    fixed = gbrain.correct(plan.id, "The zoo opens at ten.")
    clock.set(T0 + timedelta(days=1))
    gbrain.expand(fixed.id)  # a touch, waiting for the next commit
    monkeypatch.setenv("BRAIN_VAULT", str(repo))
    result = CliRunner().invoke(app, ["undo"])
    assert result.exit_code == 0, result.output
    assert f'(correct "Zoo" ({fixed.id}), superseding {plan.id})' in result.output
    assert subjects(repo)[:2] == [
        f'brain: undo "correct "Zoo" ({fixed.id}), superseding {plan.id}"',
        "brain: touch 1 note(s) read",
    ]
    assert (repo / plan.path).read_text() == git(repo, "show", f"HEAD~3:{plan.path}")
    clock.set(T0 + timedelta(days=2))
    gbrain.expand(plan.id)
    result = CliRunner().invoke(app, ["undo"])  # the remember, the read's touch with it
    assert result.exit_code == 0 and not (repo / plan.path).exists(), result.output
    assert git(repo, "status", "--porcelain") == ""


def test_doctor_reports_conflict_markers_by_path(gbrain: Brain, repo: Path) -> None:
    note = gbrain.remember("the plan", title="Plan")
    path = repo / note.path
    text = path.read_text()
    path.write_text(text + "<<<<<<< ours\nA\n=======\nB\n>>>>>>> theirs\n")
    report = gbrain.doctor()
    assert report.conflicts == (note.path,) and not report.ok


# merging between devices ---------------------------------------------------------
DIARY_BASE = (
    "---\nid: 01AAAAAAAAAAAAAAAAAAAAAAAA\ntitle: 2026-12-02\nkind: dated\n---\n# 2026-12-02\n"
)


def test_dated_blocks_merge_as_a_union_in_time_order() -> None:
    base = DIARY_BASE + "\n## 09:00:00Z\n\nfirst\n"
    ours = base + "\n## 11:00:00Z\n\nours later\n"
    theirs = base.replace("01AAAAAAAAAAAAAAAAAAAAAAAA", "01BBBBBBBBBBBBBBBBBBBBBBBB") + (
        "\n## 10:00:00Z\n\ntheirs between\n"
    )
    merged = merge_dated(base, ours, theirs, rel="main/LLM/Diary/2026-12-02.md")
    body = merged.split("---\n", 2)[2]
    assert body.index("first") < body.index("theirs between") < body.index("ours later")
    assert "id: 01AAAAAAAAAAAAAAAAAAAAAAAA" in merged
    # A block one side removed stays removed; both directions give the same bytes.
    removed = merge_dated(base, DIARY_BASE + "\n## 11:00:00Z\n\nours later\n", base, rel="d.md")
    assert "first" not in removed
    assert merge_dated("", ours, theirs) == merge_dated("", theirs, ours)


def _clone_b(remote: Path, root: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "-b", "main", str(remote), str(root)], check=True)
    gitvault.enable(root)  # this clone's merge drivers (.git/config does not travel)
    return root


def _pull(root: Path) -> None:
    git(root, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main")


def test_two_clones_remember_write_diaries_sleep_and_merge_both_ways(
    repo: Path, tmp_path: Path
) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    clock_a = FixedClock(T0)
    a = open_vault(repo, clock=clock_a)
    for n in range(5):  # a node with an index.json on both sides
        a.remember(f"project fact {n} about rockets", title=f"Rocket {n}", node="Projects")
    assert (repo / "main/Projects/index.json").exists()
    git(repo, "push", "-q", "origin", "HEAD:main")
    other = _clone_b(remote, tmp_path / "b")
    clock_b = FixedClock(T0)
    b = open_vault(other, clock=clock_b)

    ids = {}
    for side, brain, clock, minute in (("a", a, clock_a, 1), ("b", b, clock_b, 2)):
        clock.set(T0 + timedelta(minutes=minute))
        ids[side] = brain.remember(f"{side} likes tea", title=f"Tea {side}", node="Projects").id
        if side == "b":  # the two index.json files now differ: the merge driver has work
            brain.remember("b likes coffee", title="Coffee", node="Projects")
        clock.set(T0 + timedelta(minutes=minute, seconds=30))
        brain.remember(f"diary from {side}, early", node="LLM/Diary")
        clock.set(T0 + timedelta(minutes=minute + 10))
        brain.remember(f"diary from {side}, late", node="LLM/Diary")
        clock.set(T0 + timedelta(hours=2))
        brain.sleep()
        assert git(brain.root, "status", "--porcelain") == ""
    a.close()
    b.close()

    git(repo, "push", "-q", "origin", "HEAD:main")
    _pull(other)
    git(other, "push", "-q", "origin", "HEAD:main")
    _pull(repo)

    for root in (repo, other):
        brain = open_vault(root, clock=FixedClock(T0 + timedelta(hours=3)))  # catches up
        listed = {r.id for r in brain.list(node="Projects")}
        assert {ids["a"], ids["b"]} <= listed and len(listed) == 8
        diary = (root / "main/LLM/Diary/2026-12-02.md").read_text()
        order = ["a, early", "b, early", "a, late", "b, late"]
        assert [diary.index(f"diary from {o}") for o in order] == sorted(
            diary.index(f"diary from {o}") for o in order
        )
        assert diary.count("## 10:3") == 4 - diary.count("## 10:4")
        doc = brain._context.node_index.document("main", "Projects")
        assert doc is not None and doc["total_memory_count"] == 8
        assert (root / "main/Projects/index.json").read_bytes() == render(doc)
        report = brain.doctor()
        assert report.ok, report.to_json()
        brain.close()
        assert githistory.status(root, brain.settings).conflicts == ()
        assert git(root, "status", "--porcelain") == ""
    # The clone that merged regenerated what the merge kept from one side, and committed it.
    assert "brain: regenerate index.json and Graph.md after a merge" in subjects(other)[:3]
    assert (repo / "main/LLM/Diary/2026-12-02.md").read_text() == (
        other / "main/LLM/Diary/2026-12-02.md"
    ).read_text()


def test_merge_driver_runs_as_git_calls_it(tmp_path: Path) -> None:
    (tmp_path / "o").write_text(DIARY_BASE + "\n## 09:00:00Z\n\nfirst\n")
    (tmp_path / "a").write_text(DIARY_BASE + "\n## 09:00:00Z\n\nfirst\n\n## 10:00:00Z\n\nmine\n")
    (tmp_path / "b").write_text(DIARY_BASE + "\n## 09:00:00Z\n\nfirst\n\n## 08:00:00Z\n\nyours\n")
    done = subprocess.run(
        [sys.executable, "-m", "brain", "git", "merge-driver", "dated", "o", "a", "b", "d.md"],
        cwd=tmp_path,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "a").read_text()
    assert text.index("yours") < text.index("first") < text.index("mine")


def test_two_hand_edits_to_one_singleton_conflict_and_doctor_names_the_file(
    repo: Path, tmp_path: Path
) -> None:
    """(Goals replaced by brain on both machines keeps both texts: test_merging_fields.py.)"""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "HEAD:main")
    other = _clone_b(remote, tmp_path / "b")
    for root, goal in ((repo, "Ship the launch."), (other, "Learn the cello.")):
        goals = root / "main/Master/Goals.md"
        goals.write_text(goals.read_text() + f"\n{goal}\n")
        git(root, "commit", "-q", "-am", "by hand")
    git(repo, "push", "-q", "origin", "HEAD:main")
    pull = [
        "git",
        "-C",
        str(other),
        "-c",
        "pull.rebase=false",
        "pull",
        "--no-edit",
        "origin",
        "main",
    ]
    done = subprocess.run(pull, capture_output=True, text=True)
    assert done.returncode != 0 and "CONFLICT" in done.stdout + done.stderr
    brain = open_vault(other, clock=FixedClock(T0 + timedelta(minutes=5)))
    assert brain.doctor().conflicts == ("main/Master/Goals.md",)
    # While git is merging, brain writes but does not commit; it says why.
    note = brain.remember("unrelated", title="Later")
    assert (other / note.path).exists()
    report = githistory.status(other, brain.settings)
    assert report.busy == "a merge" and report.conflicts == ("main/Master/Goals.md",)
    assert note.path in report.pending and "middle of a merge" in (report.pending_error or "")
    brain.close()


def test_reindex_commits_the_index_files_it_rewrites(gbrain: Brain, repo: Path) -> None:
    gbrain.remember("The tide turns at noon.", node="Projects")
    index = repo / "main/Projects/index.json"
    index.write_text("{}\n", encoding="utf-8")  # stale, and committed as such by hand
    git(repo, "add", "main/Projects/index.json")
    git(repo, "commit", "-qm", "a stale index")
    count = gbrain.reindex()
    assert subjects(repo)[0] == f"brain: reindex ({count} notes)"
    assert "main/Projects/index.json" in files_of(repo)
    assert git(repo, "status", "--porcelain") == ""  # nothing of brain's left uncommitted


def test_a_catch_up_commits_what_it_rewrites_unless_a_model_session_defers_it(
    gbrain: Brain, repo: Path
) -> None:
    for n in range(5):  # a node with its index.json (nodeindex.TOP_LEVEL_THRESHOLD)
        gbrain.remember(f"Tide table {n}: the tide turns at noon.", node="Projects")
    (repo / "main/Projects/Plan.md").write_text("# plan\n\nwritten by hand\n")
    gbrain._context.catch_up(force=True)
    assert subjects(repo)[0] == "brain: catch up with 1 changed file(s)"
    assert files_of(repo) == {"main/Projects/index.json"}  # Plan.md stays the person's
    model = gbrain.at(for_model=True, defer_commits=True)  # as the MCP server takes its view
    (repo / "main/Projects/Draft.md").write_text("# draft\n\nwritten by hand too\n")
    before = subjects(repo)
    model._context.catch_up(force=True)
    assert subjects(repo) == before  # left for the session's commit
    assert githistory.status(repo, gbrain.settings).pending == ("main/Projects/index.json",)
    model.commit()
    assert subjects(repo)[0] == "brain: catch up with 1 changed file(s)"
    assert subjects(repo)[1:] == before
