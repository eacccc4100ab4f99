"""The commit the caches last saw the files at, so a pull or checkout under brain is noticed.

`git pull` (or a checkout, a reset, a person's commit) moves HEAD without brain hearing of
it. A read walks the files anyway, but a `remember` does not walk (a walk per write would make
ingesting quadratic), and a daemon walks at most every few minutes beside its watcher: either
would write index.json from caches that do not know the pulled notes, or answer without them.
HEAD is read from the files under `.git/` (no git process, a few microseconds) and compared
with the commit recorded under `.brain/` at the last catch-up or brain commit.
"""

from __future__ import annotations

from pathlib import Path

from brain._vault.files import atomic_write
from brain._vault.paths import CACHE_DIR

SEEN_FILE = f"{CACHE_DIR}/git-seen"


def head(root: Path) -> str | None:
    """The commit HEAD names, read from `.git/`; None without a repository or a first commit."""
    git = root / ".git"
    try:
        said = (git / "HEAD").read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):  # no repository, or a worktree's .git file
        return None
    if not said.startswith("ref: "):
        return said or None  # a detached HEAD names its commit
    ref = said[len("ref: ") :]
    try:
        return (git / ref).read_text(encoding="utf-8").strip() or None
    except (FileNotFoundError, IsADirectoryError):
        pass
    try:  # `git pack-refs` (or gc) moved the branch into one file
        packed = (git / "packed-refs").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    for line in packed.splitlines():
        commit, _, name = line.partition(" ")
        if name == ref:
            return commit
    return None


def seen(root: Path) -> str | None:
    try:
        return (root / SEEN_FILE).read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def moved(root: Path) -> str | None:
    """HEAD now when it moved since the caches last saw the files, else None."""
    now = head(root)
    return now if now is not None and now != seen(root) else None


def mark(root: Path, commit: str) -> None:
    """Record that the caches hold the files as they are at `commit`."""
    if (root / CACHE_DIR).is_dir():
        atomic_write(root / SEEN_FILE, commit + "\n")


def follow_commit(root: Path, parent: str | None, commit: str) -> None:
    """Brain committed files its caches already hold: when they had seen its parent, they
    have seen this commit too (else a pull came between, and the next look catches up)."""
    if parent is not None and seen(root) == parent:
        mark(root, commit)
