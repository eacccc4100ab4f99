"""History of the vault under git: log, undo, status, conflict markers (see gitvault.py)."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._git import forgets
from brain._git.autocommit import Pending
from brain._git.repo import (
    MESSAGE_FILE,
    TRAILER,
    UNDOES,
    UNMERGED,
    GitError,
    autocommit_on,
    committed,
    dirty,
    git_binary,
    git_identity,
    has_head,
    is_repo,
    merging,
    run,
)
from brain._vault.files import atomic_write

if TYPE_CHECKING:
    from brain._settings import Settings


# history ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    commit: str
    date: str
    author: str
    message: str
    brain: bool  # made by brain (carries the Brain-Op trailer)

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "author": self.author,
            "message": self.message,
            "brain": self.brain,
        }


def require_repo(root: Path) -> None:
    git_binary()
    if not is_repo(root):
        raise GitError(f"{root} is not under git", "run `brain git enable`")


def log(
    root: Path, path: str | None = None, limit: int = 20, note_id: str | None = None
) -> list[Entry]:
    """Recent commits, newest first: all, or of one file following its renames. A file
    renamed by hand and not yet committed is followed from where HEAD holds its `note_id`."""
    require_repo(root)
    if not has_head(root):
        return []
    if path is not None and note_id is not None and committed(root, [path])[path] == "-":
        path = _committed_path(root, note_id) or path
    fmt = "%H%x1f%aI%x1f%an%x1f%s%x1f%(trailers:key=" + TRAILER + ",valueonly)%x1e"
    args = ["log", f"-n{limit}", f"--format={fmt}"]
    if path is not None:
        args += ["--follow", "--", path]
    entries = []
    for record in run(root, *args).split("\x1e"):
        parts = record.strip("\n").split("\x1f")
        if len(parts) == 5:
            entries.append(Entry(parts[0], parts[1], parts[2], parts[3], bool(parts[4].strip())))
    return entries


def _committed_path(root: Path, note_id: str) -> str | None:
    """The note file HEAD holds with this id in its front-matter, if exactly one."""
    pattern = f"^id: *['\"]?{re.escape(note_id)}['\"]? *$"
    out = run(root, "grep", "-l", "-E", pattern, "HEAD", check=False)  # no globs: literal
    found = [
        line.removeprefix("HEAD:")
        for line in out.splitlines()
        if line.startswith("HEAD:") and line.endswith(".md")
    ]
    return found[0] if len(found) == 1 else None


def _trailers(root: Path, commit: str) -> dict[str, str]:
    out = run(root, "log", "-1", "--format=%(trailers:only,unfold)", commit)
    found = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        found[key.strip()] = value.strip()
    return found


def undo_target(root: Path) -> tuple[str, list[str]]:
    """The brain's last commit not yet undone, and the commits of reads' touches made since
    (no undo has reverted them); refuses when the person committed on top."""
    require_repo(root)
    if not has_head(root):
        raise GitError("the vault has no commits yet; nothing to undo")
    undone: set[str] = set()
    touches: list[str] = []
    for line in run(root, "rev-list", "--first-parent", "-n200", "HEAD").split():
        trailers = _trailers(root, line)
        subject = run(root, "log", "-1", "--format=%h %s (%an, %aI)", line).strip()
        if TRAILER not in trailers:
            raise GitError(
                f"the last commit is not brain's: {subject}",
                "someone committed on top of brain's changes; undo with `git revert` by hand",
            )
        if trailers[TRAILER] == "undo":
            undone.update(trailers.get(UNDOES, "").split())
            continue
        if trailers[TRAILER] == "touch":  # a read is not a change to undo
            if line not in undone:  # reverted with the target where they meet (`undo`)
                touches.append(line)
            continue
        if line in undone:
            continue
        if trailers[TRAILER] == "enable":
            raise GitError("nothing of brain's to undo since the vault went under git")
        if len(run(root, "rev-list", "--parents", "-n1", line).split()) > 2:
            raise GitError(f"the last commit is a merge: {subject}", "undo it with git by hand")
        made = _made_here(root)
        if made is not None and line not in made:
            raise GitError(
                f"brain's last change was made in another clone of the vault and came with a "
                f"pull: {subject}; `brain undo` takes back a change made here",
                f"to take that one back: `git revert {line[:10]}`",
            )
        return line, touches
    raise GitError("no brain commit to undo in the last 200 commits")


def _made_here(root: Path) -> set[str] | None:
    """The commits made in this clone, by its HEAD's reflog (a pull's or a clone's entries
    are not commits; a rebase's are this clone's commits replayed); None when the clone keeps
    no reflog (a purge expires it), and so cannot tell."""
    out = run(root, "reflog", "show", "--format=%H %gs", "HEAD", check=False)
    entries = [line.split(" ", 1) for line in out.splitlines() if " " in line]
    if not entries:
        return None
    made = ("commit", "revert", "rebase", "cherry-pick")
    return {commit for commit, said in entries if said.startswith(made)}


def operation(root: Path, commit: str) -> str:
    """The brain operation a commit records (its `Brain-Op` trailer; '' if not brain's)."""
    return _trailers(root, commit).get(TRAILER, "")


def changed_paths(root: Path, commit: str) -> list[str]:
    """The files a commit changed."""
    out = run(root, "diff-tree", "--no-commit-id", "--name-only", "-r", "-z", commit)
    return [p for p in out.split("\0") if p]


def undo(root: Path, commit: str, touches: Sequence[str] = ()) -> str:
    """Revert one brain commit with a brain commit saying so; returns the new commit. The
    `touches` (reads' commits since) that changed its files are reverted with it, newest
    first: a read's `touched:` line in a note the commit wrote would stop its revert."""
    subject = run(root, "log", "-1", "--format=%s", commit).strip()
    changed = changed_paths(root, commit)
    riding = [t for t in touches if set(changed_paths(root, t)) & set(changed)]
    in_the_way = sorted(set(dirty(root, changed))) if changed else []
    if in_the_way:
        raise GitError(
            f"{in_the_way[0]} has uncommitted changes; undo would overwrite them",
            "commit or discard them first (`brain git status` lists them)",
        )
    staged = run(root, "diff", "--cached", "--name-only", "-z").split("\0")
    if any(staged):
        raise GitError(
            f"{staged[0]} is staged; undo commits the whole index and would take it along",
            "commit or unstage it first",
        )
    done = subprocess.run(
        [git_binary(), "-C", str(root), "revert", "--no-commit", *riding, commit],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        run(root, "revert", "--abort", check=False)
        said = done.stderr.decode("utf-8", "replace").strip()
        raise GitError(
            f"git could not revert {commit[:10]}: {said.splitlines()[0] if said else ''}"
        )
    undoes = " ".join([commit, *riding])
    message = f'brain: undo "{subject.removeprefix("brain: ")}"\n\n{UNDOES}: {undoes}'
    identity = git_identity(root)
    atomic_write(root / MESSAGE_FILE, f"{message}\n{TRAILER}: undo\n")
    run(root, *identity, "commit", "-q", "--no-verify", "-F", MESSAGE_FILE)
    return run(root, "rev-parse", "HEAD").strip()


# status ------------------------------------------------------------------------------
@dataclass(frozen=True)
class GitStatus:
    repo: bool
    autocommit: bool
    branch: str = ""
    head: str = ""
    busy: str | None = None  # a merge or rebase in progress
    pending: tuple[str, ...] = ()  # brain's changes waiting for a commit
    pending_error: str | None = None  # why the last commit attempt failed
    by_hand: tuple[str, ...] = ()  # changed by hand: brain leaves them for the person
    conflicts: tuple[str, ...] = ()
    in_merge: tuple[str, ...] = ()  # staged by the merge (or rebase …) in progress
    deleted: tuple[str, ...] = ()  # conflicts deleted on one side, changed on the other …
    forgotten: tuple[str, ...] = ()  # … by a brain forget: the next brain command settles them

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "autocommit": self.autocommit,
            "branch": self.branch,
            "head": self.head,
            "busy": self.busy,
            "pending": list(self.pending),
            "pending_error": self.pending_error,
            "by_hand": list(self.by_hand),
            "conflicts": list(self.conflicts),
            "in_merge": list(self.in_merge),
            "deleted": list(self.deleted),
            "forgotten": list(self.forgotten),
        }


def status(root: Path, settings: Settings) -> GitStatus:
    git_binary()
    enabled = autocommit_on(settings)
    if not is_repo(root):
        return GitStatus(False, enabled)
    branch = run(root, "branch", "--show-current", check=False).strip()
    head = run(root, "rev-parse", "--short", "HEAD", check=False).strip() if has_head(root) else ""
    found = dirty(root)
    pending = Pending.load(root)
    waiting = sorted(p for p in pending.paths if p in found)
    conflicts = sorted(p for p, code in found.items() if code in UNMERGED)
    busy = merging(root)
    # What the merge staged (changed in the index, not since in the work tree) is the merge's,
    # not the person's: `git commit` finishes it once the conflicts are resolved.
    in_merge = sorted(
        p
        for p, code in found.items()
        if busy and code[0] not in " ?" and code[1] == " " and p not in conflicts
    )
    by_hand = sorted(p for p in found if p not in {*pending.paths, *conflicts, *in_merge})
    deleted = sorted(p for p in conflicts if found[p] in {"UD", "DU"})
    forgotten = sorted(c.path for c in forgets.collisions(root)) if deleted else []
    return GitStatus(
        True,
        enabled,
        branch,
        head,
        busy,
        tuple(waiting),
        pending.error,
        tuple(by_hand),
        tuple(conflicts),
        tuple(in_merge),
        tuple(deleted),
        tuple(forgotten),
    )


_MARKERS = re.compile(rb"^(<{7}|>{7})( |$)", re.MULTILINE)


def deleted_in_merge(root: Path) -> list[str]:
    """Paths a merge left deleted on one side and changed on the other (git's modify/delete):
    they hold no conflict markers, so only git's index tells."""
    if not is_repo(root):
        return []
    try:
        return sorted(p for p, code in dirty(root).items() if code in {"UD", "DU"})
    except GitError:  # (no git here): nothing git could say
        return []


def conflict_markers(root: Path, paths: Sequence[str]) -> list[str]:
    """Files among `paths` (and brain.yaml) that still hold git conflict markers."""
    found = []
    for rel in ["brain.yaml", *paths]:
        with contextlib.suppress(OSError):
            if _MARKERS.search((root / rel).read_bytes()):
                found.append(rel)
    return found
