"""One vault on two machines kept in step with git: what a pull brings, each side sees at once."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest
from mcp import Client

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._daemon.operations import Operations
from brain._git import repo as gitvault
from brain._git import seen
from brain._git.merge import merge_dated
from brain._git.repo import GitError
from brain._mcp_server import build_server
from brain.testing import T0

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("git_identity")


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def write_on(root: Path, node: str, *titles: str) -> None:
    brain = open_vault(root, clock=FixedClock(T0))
    for title in titles:
        brain.remember(f"{title} is a fact about rockets", title=title, node=node)
    brain.close()
    git(root, "push", "-q", "origin", "HEAD:main")


def pull(root: Path) -> None:
    git(root, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main")


def test_a_remember_right_after_a_pull_counts_the_pulled_notes(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    write_on(a, "Projects", *(f"Rocket {n}" for n in range(5)))
    pull(b)
    open_vault(b, clock=FixedClock(T0)).close()  # B's caches know the first five
    write_on(a, "Projects", "Rocket 5", "Rocket 6", "Rocket 7")
    pull(b)

    brain = open_vault(b, clock=FixedClock(T0))
    brain.remember("B's own rocket fact", title="Rocket B", node="Projects")
    index = (b / "main/Projects/index.json").read_text()
    assert '"total_memory_count": 9' in index  # not the 6 B's caches knew before the pull
    brain.list()  # a read walks the files: nothing was left to catch up with
    brain.close()
    assert not [s for s in subjects(b) if s.startswith("brain: catch up")]
    assert seen.seen(b) == git(b, "rev-parse", "HEAD").strip()


def test_a_daemon_sees_what_a_pull_brought_at_its_next_request(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    brain = open_vault(b, clock=FixedClock(T0))
    brain.running().look_every(600.0)  # as a daemon does: its watcher follows the rest
    ops = Operations(brain)
    assert ops.run("list_notes", {"node": "Projects"}) == []  # its walk for the next 600 s
    write_on(a, "Projects", "Rocket 1", "Rocket 2")
    pull(b)  # faster than the watcher's quiet spell, or with no watcher at all
    titles = {n["title"] for n in ops.run("list_notes", {"node": "Projects"})}
    assert titles == {"Rocket 1", "Rocket 2"}
    hits = ops.run("recall", {"query": "Rocket 2 rockets"})
    assert hits and hits[0]["title"] == "Rocket 2"
    brain.close()


def test_brains_own_commits_need_no_walk(machines: tuple[Path, Path]) -> None:
    a, _ = machines
    brain: Brain = open_vault(a, clock=FixedClock(T0))
    brain.remember("a first fact", title="First")
    assert seen.seen(a) == git(a, "rev-parse", "HEAD").strip()
    walks = brain._context.by_hand.walks
    brain.remember("a second fact", title="Second")
    brain.close()
    reopened = open_vault(a, clock=FixedClock(T0))
    assert reopened._context.by_hand.walks == 0 and brain._context.by_hand.walks == walks
    reopened.close()


def test_head_is_read_from_loose_and_packed_refs(machines: tuple[Path, Path]) -> None:
    a, _ = machines
    commit = git(a, "rev-parse", "HEAD").strip()
    assert seen.head(a) == commit
    git(a, "pack-refs", "--all")  # the branch now lives in .git/packed-refs
    assert seen.head(a) == commit
    git(a, "checkout", "-q", "--detach")
    assert seen.head(a) == commit
    assert seen.head(a / "main") is None  # no repository there


def test_a_daemon_rewrites_what_a_merge_kept_from_one_side(machines: tuple[Path, Path]) -> None:
    a, b = machines
    write_on(a, "Projects", *(f"Rocket {n}" for n in range(5)))
    pull(b)
    brain = open_vault(b, clock=FixedClock(T0))
    brain.running().look_every(600.0)
    ops = Operations(brain)
    ops.run("remember", {"text": "B's rocket fact", "title": "Rocket B", "node": "Projects"})
    write_on(a, "Projects", "Rocket A")
    pull(b)  # both sides changed Projects/index.json: the merge driver kept one of them
    assert (b / gitvault.REGENERATE_FLAG).exists()
    ops.run("list_notes", {})
    brain.close()
    assert not (b / gitvault.REGENERATE_FLAG).exists()
    assert subjects(b)[0] == "brain: regenerate index.json and Graph.md after a merge"
    assert '"total_memory_count": 7' in (b / "main/Projects/index.json").read_text()
    assert git(b, "status", "--porcelain") == ""


def test_a_clone_made_without_enable_gets_the_merge_drivers_at_its_first_command(
    machines: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = machines
    c = tmp_path / "c"
    git(tmp_path, "clone", "-q", "-b", "main", str(tmp_path / "remote.git"), str(c))
    for root, said in ((a, "a diary entry from A"), (c, "a diary entry from C")):
        brain = open_vault(root, clock=FixedClock(T0))
        brain.remember(said, node="LLM/Diary")
        brain.close()
    git(a, "push", "-q", "origin", "HEAD:main")
    pull(c)  # both wrote the same day's diary: brain's driver joins the blocks
    diary = (c / "main/LLM/Diary/2026-12-02.md").read_text()
    assert "from A" in diary and "from C" in diary and "<<<<<<<" not in diary
    assert "merge-driver dated" in git(c, "config", "merge.brain-dated.driver")


LOG = "---\nid: 01AAAAAAAAAAAAAAAAAAAAAAAA\ntitle: 2026-12-02\nkind: log\n---\n# Log 2026-12-02\n\n"
CREATED = (
    "## Created (2)\n\n- Ledger: `01M8V4XFN0R5D69QT0SH4192FJ` in Inbox\n"
    "- Pears: `01M8V4XFN1` in Inbox\n"
)
CORRECTED = "\n## Corrected (1)\n\n- Ledger: `01M8V4XFN0R5D69QT0SH4192FJ` → `01M8V4XFN2`\n"


def test_a_daily_log_line_one_side_struck_stays_struck_in_a_merge() -> None:
    base = LOG + CREATED + CORRECTED
    struck = LOG + "## Created (1)\n\n- Pears: `01M8V4XFN1` in Inbox\n"  # the Ledger forgotten
    added = LOG + CREATED + "- Plums: `01M8V4XFN3` in Inbox\n" + CORRECTED
    for ours, theirs in ((struck, added), (added, struck)):
        merged = merge_dated(base, ours, theirs, rel="main/Insights/Logs/2026-12-02.md")
        assert "Ledger" not in merged and "01M8V4XFN0R5D69QT0SH4192FJ" not in merged
        assert "## Created (2)" in merged and "Plums" in merged and "Corrected" not in merged


def test_a_sleep_after_pulling_a_forget_does_not_name_the_forgotten_note(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    write_on(a, "Projects", "Ledger")
    pull(b)
    brain = open_vault(b, clock=FixedClock(T0))
    (old,) = brain.list(node="Projects")
    newer = brain.correct(old.id, "The ledger moved to the second brick.")  # B's journal
    brain.sleep()
    brain.close()
    git(b, "push", "-q", "origin", "HEAD:main")
    pull(a)
    brain = open_vault(a, clock=FixedClock(T0))
    brain.forget(newer.id, mode="history")
    brain.close()
    git(a, "push", "-q", "origin", "HEAD:main")
    pull(b)
    brain = open_vault(b, clock=FixedClock(T0))
    brain.sleep()  # B's journal still says what B corrected
    brain.close()
    log = (b / "main/Insights/Logs/2026-12-02.md").read_text()
    assert "Ledger" not in log and old.id not in log and newer.id not in log


HOSTILE = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\nraise SystemExit(1)\n"


def test_a_brain_package_pushed_into_the_vault_never_runs_as_a_merge_driver(
    machines: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = machines
    marker = tmp_path / "ran"
    (a / "brain").mkdir()
    (a / "brain/__init__.py").write_text(HOSTILE.format(marker=str(marker)))
    git(a, "add", "brain")
    git(a, "commit", "-q", "-m", "a file anyone with push access could add")
    git(a, "push", "-q", "origin", "HEAD:main")
    pull(b)  # a fast-forward: no driver runs, and the package lands in B's work tree
    for root, said in ((a, "a diary entry from A"), (b, "a diary entry from B")):
        brain = open_vault(root, clock=FixedClock(T0))
        brain.remember(said, node="LLM/Diary")
        brain.close()
    git(a, "push", "-q", "origin", "HEAD:main")
    pull(b)  # a merge: git runs brain's driver at the top of B's work tree, beside it
    assert not marker.exists()
    diary = (b / "main/LLM/Diary/2026-12-02.md").read_text()
    assert "from A" in diary and "from B" in diary and "<<<<<<<" not in diary


def test_an_older_clones_drivers_are_named_again_with_safe_paths(
    machines: tuple[Path, Path],
) -> None:
    _, b = machines
    git(b, "config", "merge.brain-dated.driver", "python -m brain git merge-driver dated")
    assert gitvault.ensure_drivers(b)
    assert "-P -m brain" in git(b, "config", "merge.brain-dated.driver")
    assert not gitvault.ensure_drivers(b)  # once is enough


def as_an_older_brain_enabled_it(root: Path) -> None:
    """The `.gitattributes` block and `.gitignore` of a brain before the `brain-note` driver
    and the Obsidian ignores, committed."""
    old = [line for line in gitvault.ATTRIBUTES if "brain-note" not in line]
    block = "\n".join([gitvault.ATTRIBUTES_BEGIN, *old[1:], gitvault.ATTRIBUTES_END])
    (root / ".gitattributes").write_text(block + "\n")
    (root / ".gitignore").write_text("/.brain/\n/local-only/\n/cold/local-only/\n")
    git(root, "commit", "-q", "-am", "as an older brain's `brain git enable` left them")


def test_a_vault_an_older_brain_enabled_gets_todays_git_lines_at_the_first_command_once(
    machines: tuple[Path, Path],
) -> None:
    """The `brain-note` driver line and the Obsidian ignores came only with the next
    `brain git enable`: corrections on both machines stayed conflicts until then."""
    a, b = machines
    as_an_older_brain_enabled_it(a)
    git(a, "push", "-q", "origin", "HEAD:main")
    pull(b)
    update = "brain: update .gitattributes and .gitignore to what this brain writes"
    for root in (a, b):  # both machines run today's brain before they meet again
        open_vault(root, clock=FixedClock(T0)).close()
        assert subjects(root)[0].startswith(update)
        assert "*.md merge=brain-note" in (root / ".gitattributes").read_text()
        assert git(root, "check-ignore", ".trash/x.md", ".obsidian/workspace.json").split() == [
            ".trash/x.md",
            ".obsidian/workspace.json",
        ]
        assert git(root, "status", "--porcelain") == ""
    git(a, "push", "-q", "origin", "HEAD:main")
    pull(b)  # the same lines on both sides: no conflict
    git(b, "push", "-q", "origin", "HEAD:main")
    pull(a)
    ignores = (a / ".gitignore").read_text()
    (a / ".gitignore").write_text(ignores.replace("/.trash/\n", ""))  # the person's choice
    git(a, "commit", "-q", "-am", "keep Obsidian's trash in git")
    for root in (a, b):
        before = git(root, "rev-parse", "HEAD")
        open_vault(root, clock=FixedClock(T0)).close()
        assert git(root, "rev-parse", "HEAD") == before  # once: nothing more to write
        assert git(root, "status", "--porcelain") == ""
    assert "/.trash/" not in (a / ".gitignore").read_text()


def test_undo_after_a_pull_does_not_take_back_the_other_clones_change(
    machines: tuple[Path, Path],
) -> None:
    """B's note came with a fast-forward pull: A's `brain undo` named and removed it, a note
    the person on A may never have seen. It is refused, naming the commit."""
    a, b = machines
    write_on(a, "Projects", "Rocket A")
    pull(b)
    write_on(b, "Projects", "Rocket B")
    pull(a)
    brain = open_vault(a, clock=FixedClock(T0))
    try:
        with pytest.raises(GitError, match="made in another clone") as caught:
            brain.git_undo()
        assert "git revert" in (caught.value.hint or "")
        assert "Rocket B" in [n.title for n in brain.list(node="Projects")]
        brain.remember("Rocket C is a fact about rockets", title="Rocket C", node="Projects")
        brain.git_undo()  # a change made here is taken back as before
        assert "Rocket C" not in [n.title for n in brain.list(node="Projects")]
    finally:
        brain.close()


def test_a_server_without_the_daemon_sees_what_a_pull_brought(
    machines: tuple[Path, Path],
) -> None:
    """`brain serve` with the daemon off holds its Brain as long as the host runs: a pull
    under it was caught up only by the watcher, after its quiet spell, and a model's
    remember first wrote index.json from caches that did not know the pulled notes."""
    a, b = machines
    brain = open_vault(b, clock=FixedClock(T0))
    brain.running().look_every(600.0)

    async def main() -> None:
        async with Client(build_server(brain)) as client:
            await client.call_tool("list_memories", {"node": "Projects"})
            write_on(a, "Projects", *(f"Rocket {n}" for n in range(4)))
            pull(b)
            listed = await client.call_tool("list_memories", {"node": "Projects"})
            assert "Rocket 3" in str(listed.structured_content)
            await client.call_tool(
                "remember", {"text": "B's rocket fact", "title": "Rocket B", "node": "Projects"}
            )

    anyio.run(main)
    brain.close()
    assert '"total_memory_count": 5' in (b / "main/Projects/index.json").read_text()
