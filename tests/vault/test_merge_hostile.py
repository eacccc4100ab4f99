"""What a merge leaves for the next command never stops every later command: garbled lines in
.brain/git-merged.jsonl, and notes pulled from a remote that brain cannot act on."""

from __future__ import annotations

import re
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._git import aftermerge, merge
from brain._git import repo as gitvault
from brain._git.merge import merge_dated
from brain.testing import T0

pytestmark = pytest.mark.usefixtures("git_identity")


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def at(minutes: int) -> FixedClock:
    return FixedClock(T0 + timedelta(minutes=minutes))


def both_correct(a: Path, b: Path, partition: str = "main") -> tuple[str, str]:
    """One note corrected on A and on B (B's later); returns B's correction's id and path."""
    brain = open_vault(a, clock=at(0))
    if partition != "main":
        brain.partition_create(partition)
    first = brain.at(partition).remember("Heron launches on May 5", title="Heron", node="P")
    brain.close()
    git(a, "push", "-q", "origin", "HEAD:main")
    git(b, "pull", "-q", "--no-rebase", "origin", "main")
    for root, minutes, said in ((a, 10, "May 9"), (b, 20, "May 12")):
        brain = open_vault(root, clock=at(minutes))
        on = brain.at(partition).correct(first.id, f"Heron launches on {said}")
        brain.close()
    return on.id, on.path


def pull(root: Path) -> None:
    git(root, "-c", "pull.rebase=false", "pull", "-q", "--no-edit", "origin", "main")


def test_a_garbled_line_left_by_a_merge_is_skipped(vault: Path) -> None:
    gitvault.enable(vault)
    pending = vault / aftermerge.PENDING
    # A line cut inside a multibyte letter (a crash mid-append), and bytes that are not UTF-8.
    pending.write_bytes('{"kind": "alias", "path": "é'.encode()[:-1] + b"\n\xff\xfe{}\n")
    (vault / gitvault.REGENERATE_FLAG).touch()
    open_vault(vault, clock=at(0)).close()  # raised UnicodeDecodeError, at every command
    assert not pending.exists() and not (vault / gitvault.REGENERATE_FLAG).exists()


def test_what_a_merge_leaves_is_written_in_ascii_and_owner_only(vault: Path) -> None:
    (vault / ".brain").mkdir(exist_ok=True)
    assert aftermerge.leave(vault, {"kind": "version", "path": "main/a.md", "text": "東京"})
    pending = vault / aftermerge.PENDING
    assert pending.read_bytes().isascii() and pending.stat().st_mode & 0o077 == 0
    assert aftermerge.left(vault) == [{"kind": "version", "path": "main/a.md", "text": "東京"}]


def test_a_pulled_correction_with_a_bad_created_does_not_stop_later_commands(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    _, path = both_correct(a, b)
    note = b / path
    note.write_text(note.read_text().replace("created: 20", "created: zz20", 1))
    git(b, "commit", "-q", "-am", "from a hostile remote")
    git(b, "push", "-q", "origin", "HEAD:main")
    pull(a)  # the driver keeps B's (its `created` sorts last) and leaves A's for later
    for _ in range(2):  # raised ValueError at every command, the flag never cleared
        open_vault(a, clock=at(30)).close()
    assert not (a / aftermerge.PENDING).exists()


def test_a_partition_archived_on_the_other_machine_does_not_stop_later_commands(
    machines: tuple[Path, Path],
) -> None:
    a, b = machines
    both_correct(a, b, partition="work")
    brain = open_vault(b, clock=at(25))
    brain.partition_archive("work")
    brain.close()
    git(b, "push", "-q", "origin", "HEAD:main")
    pull(a)
    # Every command said "partition 'work' is archived", `brain partition restore` too.
    brain = open_vault(a, clock=at(30))
    brain.partition_restore("work")
    brain.close()
    assert not (a / aftermerge.PENDING).exists()


def test_a_merge_in_a_vault_with_an_archived_partition_does_not_stop_later_commands(
    vault: Path,
) -> None:
    gitvault.enable(vault)
    brain = open_vault(vault, clock=at(0))
    brain.partition_create("work")
    brain.partition_archive("work")
    brain.close()
    (vault / gitvault.REGENERATE_FLAG).touch()  # as the `regenerate` driver leaves it
    # Graph.md was rewritten in every partition: "partition 'work' is archived" at every command.
    brain = open_vault(vault, clock=at(10))
    brain.partition_restore("work")
    brain.close()
    assert not (vault / gitvault.REGENERATE_FLAG).exists()


DAY = "---\nid: 01AAAAAAAAAAAAAAAAAAAAAAAA\ntitle: 2026-12-02\nkind: log\n---\n# Log 2026-12-02\n\n"


@pytest.mark.parametrize("field", ["tags: 5", "tags: abc", "merged_ids: 5", "tags: {a: 1}"])
def test_a_dated_merge_reads_a_field_of_the_wrong_type_as_no_list(field: str) -> None:
    theirs = DAY.replace("kind: log\n", f"kind: log\n{field}\n") + "## 10:00:00Z\n\nfrom B\n"
    ours = DAY + "## 09:00:00Z\n\nfrom A\n"
    merged = merge_dated(DAY, ours, theirs, rel="main/Insights/Logs/2026-12-02.md")
    assert "from A" in merged and "from B" in merged
    assert "- a\n- b\n- c" not in merged and "[a, b, c]" not in merged  # "abc" never letters


@pytest.mark.parametrize(
    "heading",
    ["Created (3)", "Created(3)  ", "Created", "Created (x)", "(3)", "Moved ()", "Aged (12) "],
)
def test_a_sections_count_is_read_off_its_heading_as_before(heading: str) -> None:
    """The count comes off without a regex (one backtracked for seconds on a long heading)."""
    before = re.compile(r"\s*\(\d+\)\s*$").sub("", heading)
    assert merge._uncounted(heading) == before.rstrip()
    long = " " * 65536 + "x"
    assert merge._uncounted(long) == long


def test_a_remote_cannot_steer_relations_through_a_dated_notes_id(vault: Path) -> None:
    """A remote that deleted a shared note and gave its day's note that note's id would have
    every relation to it repointed at the day (a local-only note's too): an id made days away
    from the day is not the day's."""
    from brain._upkeep import concurrent

    brain = open_vault(vault, clock=at(0))
    day = brain.remember("a diary line", node="LLM/Diary")
    brain._context.clock = at(5 * 24 * 60)
    shared = brain.remember("Heron launches on May 5", title="Heron launch")
    mine = brain.remember("my own view of it", title="Heron thoughts")
    brain.relate(mine.id, "references", shared.id)
    (vault / brain.expand(shared.id).path).unlink()
    brain._context.catch_up(force=True)
    with brain._context.lock.hold():
        assert concurrent._repoint(brain._context, shared.id, day.id) == 0
    assert [r.target for r in brain.expand(mine.id).relations] == [shared.id]
    brain.close()
