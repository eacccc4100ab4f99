"""Purging forgotten notes from the vault's git history with git-filter-repo (docs/git.md).

The rewrite is git-filter-repo's own, never a hand-made one: a file-info callback drops every
version of a forgotten note (found by the `id:` line of its front-matter, so across renames),
the cold-tier copies of its paths and the cold-tier dictionaries that hold a trace of it, puts
`[forgotten]` in place of its id in every other file and of its title in brain's derived files
(index.json, Graph.md, daily logs), and the same in commit messages. Then the reflog is expired
and unreachable objects are pruned. Brain never pushes: remotes are named with the command that
would replace their history.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain._git.repo import (
    GitError,
    dirty,
    git_binary,
    has_head,
    is_repo,
    merging,
    never_committed,
    run,
)
from brain._model import COLD_TIER
from brain._vault.cold import DICT_FOLDER
from brain._vault.forgotten import Record

MARK = "[forgotten]"
# Files brain regenerates from the notes: a forgotten title is struck from them too. Other
# notes keep what the person wrote in them (the forgetting check shows where a title stays).
DERIVED = r"(^|/)(index\.json|Insights/Graph\.md|Insights/Logs/[^/]*\.md)$"

# Function bodies for git-filter-repo's callbacks; {data} becomes literal Python values.
_FILE_CALLBACK = """\
import re
ids, titles, drop = {data}
own = re.compile(
    rb'\\A(?:\\xef\\xbb\\xbf)?---\\r?\\n(?:(?!---\\r?\\n).*\\r?\\n)*?id:[ \\t]*["\\']?(?:'
    + b'|'.join(ids) + rb')["\\']?[ \\t]*\\r?\\n')
if filename in drop:
    return (None, mode, blob_id)
contents = value.get_contents_by_identifier(blob_id)
if own.match(contents):
    return (None, mode, blob_id)
new = contents
for old in ids:
    new = new.replace(old, b'{mark}')
if re.search(rb'{derived}', filename):
    for old in titles:
        new = re.sub(rb'(?<!\\w)' + re.escape(old) + rb'(?!\\w)', b'{mark}', new)
if new == contents:
    return (filename, mode, blob_id)
return (filename, mode, value.insert_file_with_contents(new))
"""
_MESSAGE_CALLBACK = """\
ids, titles = {data}
for old in titles:
    message = message.replace(b'"' + old + b'"', b'"{mark}"')
for old in ids:
    message = message.replace(old, b'{mark}')
return message
"""


@dataclass(frozen=True)
class Remote:
    """A remote of the vault and whether the old history is known to be there."""

    name: str
    url: str
    holds: bool | None  # True: its fetched branches hold it; None: brain cannot tell
    command: str  # what would replace the history there (brain never runs it)
    unmatched: tuple[str, ...] = ()  # its branches holding it that no local branch replaces

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "url": self.url,
            "holds": self.holds,
            "command": self.command,
            "unmatched": list(self.unmatched),
        }


@dataclass(frozen=True)
class PurgePlan:
    """What a purge will rewrite, worked out before anything changes."""

    ids: tuple[str, ...]
    titles: tuple[str, ...]
    paths: tuple[str, ...]  # every path that held a forgotten note, across renames
    commits: int  # commits from the first one that held a forgotten note on
    since: str  # that first commit: short id, date, subject ("" when none did)
    remotes: tuple[Remote, ...]
    # Cold-tier dictionaries in some commit that hold a trace of these notes (the forget
    # replaces those still in the tree); every version leaves every commit.
    dictionaries: tuple[str, ...] = ()

    def describe(self, root: Path) -> str:
        """The summary shown at the terminal before asking."""
        lines = [f"Forget, then purge from the git history of the vault at {root}:"]
        lines += [f"  {i}  {t}" for i, t in zip(self.ids, self.titles, strict=True)]
        if not self.paths:
            lines.append("  no commit holds these notes; only messages and references change")
        else:
            lines.append(f"  {self.commits} commit(s) from {self.since} on get new ids;")
            lines.append("  every version of these files leaves every commit:")
            lines += [f"    {p}" for p in self.paths]
        if self.dictionaries:
            lines.append("  cold-tier dictionaries holding a trace of them leave every commit")
            lines.append(
                "  (older commits' cold notes made with them can no longer be read there):"
            )
            lines += [f"    {p}" for p in self.dictionaries]
        lines.append("  their ids and titles leave commit messages and brain's derived files;")
        lines.append("  the reflog is expired and the old objects are deleted (no undo).")
        for remote in self.remotes:
            lines.append(
                f"  remote {remote.name} ({remote.url}) keeps the old history until "
                "you replace it there; brain never pushes."
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "paths": list(self.paths),
            "commits": self.commits,
            "since": self.since,
            "remotes": [r.to_json() for r in self.remotes],
            "dictionaries": list(self.dictionaries),
        }


@dataclass(frozen=True)
class PurgeResult:
    head: str
    rewritten: int  # commits whose id changed
    remotes: tuple[Remote, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "head": self.head,
            "rewritten": self.rewritten,
            "remotes": [r.to_json() for r in self.remotes],
        }


def enclosing_repo(root: Path) -> str | None:
    """The work tree of a repository the vault sits inside (not its own), or None."""
    if is_repo(root) or shutil.which("git") is None:
        return None
    top = run(root, "rev-parse", "--show-toplevel", check=False).strip()
    return top or None


def check_ready(root: Path) -> None:
    """Refuse before anything changes: git-filter-repo missing, a merge under way, the
    person's uncommitted changes (the rewrite resets the work tree to the new history)."""
    git_binary()
    filter_repo()
    busy = merging(root)
    if busy:
        raise GitError(f"git is in the middle of {busy}", "finish it, then purge")
    if run(root, "rev-parse", "-q", "--verify", "refs/stash", check=False).strip():
        raise GitError(
            "you have stashed changes; the rewrite expires the reflog that holds all but the "
            "newest of them",
            "apply or drop them first (`git stash list`)",
        )
    changed = changes(root)
    if changed:
        raise GitError(
            f"{changed[0]} has uncommitted changes; purge rewrites history and resets the "
            "work tree to it",
            "commit or stash your changes first (`brain git status` lists them)",
        )


def changes(root: Path) -> list[str]:
    """Uncommitted changes git carries (caches and local-only notes never count)."""
    return sorted(p for p in dirty(root) if not never_committed(p))


def filter_repo() -> list[str]:
    """How to run git-filter-repo: the module installed with brain, run by this Python."""
    if importlib.util.find_spec("git_filter_repo") is None:
        raise GitError(
            "git-filter-repo is not installed; purge needs it to rewrite history",
            "pip install git-filter-repo",
        )
    return [sys.executable, "-m", "git_filter_repo"]


def plan(
    root: Path, ids: Sequence[str], titles: Sequence[str], records: Sequence[Record] = ()
) -> PurgePlan:
    """Which paths and commits hold these notes, which remotes may hold them too, and which
    dictionaries hold a trace of them (`records`: of the notes, as the forget records them)."""
    if not has_head(root):
        return PurgePlan(tuple(ids), tuple(titles), (), 0, "", _remotes(root, []))
    found = _touching(root, ids)
    # A dictionary that learned a note's front-matter matches too: it is one of `held` below.
    paths = sorted({p for _c, names in found for p in names if not p.startswith(f"{DICT_FOLDER}/")})
    commits, since = 0, ""
    if found:
        first = found[-1][0]  # git log lists newest first
        parents = run(root, "rev-list", "--parents", "-n1", first).split()[1:]
        counted = run(root, "rev-list", "--count", "--all", "--not", *parents)
        commits = int(counted.strip() or 0)
        since = run(root, "log", "-1", "--format=%h %as %s", first).strip()
    held = _dictionaries_holding(root, records)
    remotes = _remotes(root, ids)
    return PurgePlan(tuple(ids), tuple(titles), tuple(paths), commits, since, remotes, held)


def _dictionaries_holding(root: Path, records: Sequence[Record]) -> tuple[str, ...]:
    """Every dictionary path in the history whose bytes, in any commit, hold a trace."""
    if not records:
        return ()
    out = run(
        root,
        "log",
        "--all",
        "--diff-filter=AM",
        "--format=%x1e%H",
        "--name-only",
        "--",
        DICT_FOLDER,
    )
    found = set()
    for entry in out.split("\x1e")[1:]:
        commit, _, names = entry.partition("\n")
        for name in names.splitlines():
            if not name.strip() or name in found:
                continue
            blob = run(root, "cat-file", "blob", f"{commit}:{name}")
            data = blob.encode("utf-8", "surrogateescape")  # the blob's own bytes
            if any(r.find(data) for r in records):
                found.add(name)
    return tuple(sorted(found))


def _touching(root: Path, ids: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Commits (newest first) that added, changed or removed a forgotten note's file."""
    found: dict[str, list[str]] = {}
    order: list[tuple[str, str]] = []
    for note_id in ids:
        out = run(
            root,
            "log",
            "--all",
            "--date-order",
            "--format=%x1e%H%x1f%ct",
            "--name-only",
            f"-Sid: {note_id}",
        )
        for record in out.split("\x1e")[1:]:
            head, _, names = record.partition("\n")
            commit, _, when = head.partition("\x1f")
            if commit not in found:
                order.append((when, commit))
                found[commit] = []
            found[commit] += [n for n in names.splitlines() if n.strip()]
    order.sort(reverse=True)
    return [(c, found[c]) for _w, c in order]


def _remotes(root: Path, ids: Sequence[str]) -> tuple[Remote, ...]:
    remotes = []
    tags = bool(run(root, "tag", "--list", check=False).strip())
    for name in run(root, "remote").split():
        url = run(root, "remote", "get-url", name, check=False).strip()
        refs = run(root, "for-each-ref", "--format=%(refname)", f"refs/remotes/{name}/").split()
        holding = [r for r in refs if r != f"refs/remotes/{name}/HEAD" and _holds(root, r, ids)]
        holds = bool(holding) if refs and ids else None
        base = ["git", "-C", str(root), "push", "--force"]
        command = shlex.join([*base, name, "--all"])
        if tags:
            command += " && " + shlex.join([*base, name, "--tags"])
        prefix = len(f"refs/remotes/{name}/")
        unmatched = tuple(r[prefix:] for r in holding if not _local(root, r[prefix:]))
        remotes.append(Remote(name, url, holds, command, unmatched))
    return tuple(remotes)


def _local(root: Path, branch: str) -> bool:
    return bool(run(root, "rev-parse", "-q", "--verify", f"refs/heads/{branch}", check=False))


def _holds(root: Path, ref: str, ids: Sequence[str]) -> bool:
    return any(run(root, "log", "-1", "--format=%H", f"-Sid: {i}", ref).strip() for i in ids)


def rewrite(root: Path, done: PurgePlan) -> PurgeResult:
    """Rewrite every ref with git-filter-repo, expire the reflog, prune the old objects."""
    if not has_head(root):
        return PurgeResult("", 0, done.remotes)  # no commit yet: no history to rewrite
    ids = [i.encode() for i in done.ids]
    titles = sorted({v for t in done.titles if t for v in _spellings(t)})
    drop = [f"{COLD_TIER}/{p}.zst".encode() for p in done.paths]
    drop += [p.encode() for p in done.dictionaries]
    with tempfile.TemporaryDirectory(prefix="brain-purge-") as temp:
        # The callbacks hold the titles: outside the vault, and gone with the folder.
        files = Path(temp) / "file.py", Path(temp) / "message.py"
        files[0].write_text(_fill(_FILE_CALLBACK, (ids, titles, drop)), encoding="utf-8")
        files[1].write_text(_fill(_MESSAGE_CALLBACK, (ids, titles)), encoding="utf-8")
        # --partial: keep the person's remotes and remote branches as they are (filter-repo
        # would otherwise turn origin's branches into local ones and remove origin); the
        # cleanup it then leaves out is done below.
        args = [
            "--force",
            "--partial",
            "--quiet",
            "--replace-refs",
            "delete-no-add",
            "--file-info-callback",
            str(files[0]),
            "--message-callback",
            str(files[1]),
        ]
        proc = subprocess.run(
            [*filter_repo(), *args],
            cwd=root,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
        last = said.splitlines()[-1] if said else f"exit {proc.returncode}"
        raise GitError(f"git-filter-repo failed: {last}", "the history is as it was before")
    rewritten = _count_rewritten(root)
    _drop_remote_branches(root)
    run(root, "reset", "-q", "--hard")  # the work tree was clean: it follows the new HEAD
    for leftover in ("ORIG_HEAD", "FETCH_HEAD", "COMMIT_EDITMSG"):
        with contextlib.suppress(FileNotFoundError):
            (root / ".git" / leftover).unlink()
    shutil.rmtree(root / ".git" / "filter-repo", ignore_errors=True)
    run(root, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    run(root, "gc", "-q", "--prune=now")
    return PurgeResult(run(root, "rev-parse", "HEAD").strip(), rewritten, done.remotes)


def _spellings(title: str) -> set[bytes]:
    """A title as files write it: plain, and escaped as JSON strings escape it."""
    return {title.encode(), json.dumps(title)[1:-1].encode()}


def _fill(template: str, data: object) -> str:
    # The data last: a title may hold anything, even "{mark}".
    return (
        template.replace("{mark}", MARK).replace("{derived}", DERIVED).replace("{data}", repr(data))
    )


def _count_rewritten(root: Path) -> int:
    try:
        lines = (root / ".git" / "filter-repo" / "commit-map").read_text().splitlines()[1:]
    except FileNotFoundError:
        return 0
    return sum(1 for line in lines if len(set(line.split())) == 2)


def _drop_remote_branches(root: Path) -> None:
    """Remote-tracking branches showed the remotes' old history and kept it alive here; they
    go (a fetch brings them back: replace the remote's history first)."""
    refs = run(root, "for-each-ref", "--format=%(refname)", "refs/remotes/").split()
    if refs:
        run(root, "update-ref", "--stdin", stdin="".join(f"delete {r}\n" for r in refs))


def objects(root: Path) -> Iterator[tuple[str, str, bytes]]:
    """Every object in .git, loose and packed, reachable or not: (id, type, contents)."""
    proc = subprocess.Popen(
        [
            git_binary(),
            "-C",
            str(root),
            "cat-file",
            "--batch-all-objects",
            "--batch",
            "--unordered",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        while header := proc.stdout.readline():
            sha, kind, size = header.split()
            contents = proc.stdout.read(int(size))
            proc.stdout.read(1)  # the newline after each object
            yield sha.decode(), kind.decode(), contents
    finally:
        proc.stdout.close()
        proc.wait()
