"""The vault under git: enable, one commit per operation, history, undo, conflict checks.

Every git call runs the real `git` binary with an argument list (never a shell). An operation
(a decorated Brain method, a partition change, an MCP tool call) snapshots the dirty files
before and after; the files whose state it changed join a pending list under `.brain/`, and the
outermost operation commits exactly those paths. A failed commit leaves the list for the next
operation, so a write is never lost; files changed by hand are never swept into a commit.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from brain.errors import BrainError, InvalidInput
from brain.model import LOCAL_ONLY
from brain.vault.files import WriterLock, atomic_write, remove_file
from brain.vault.paths import CACHE_DIR

if TYPE_CHECKING:
    from brain.settings import Settings

PENDING_FILE = f"{CACHE_DIR}/git-pending.json"
MESSAGE_FILE = f"{CACHE_DIR}/git-message"
REGENERATE_FLAG = f"{CACHE_DIR}/git-regenerate"
TRAILER = "Brain-Op"
UNDOES = "Brain-Undoes"
# Never committed, whatever a pathspec says: caches and machine-local state, local-only notes.
NEVER = (f"{CACHE_DIR}/", f"{LOCAL_ONLY}/", f"cold/{LOCAL_ONLY}/")
IGNORED = ("/.brain/", "/local-only/", "/cold/local-only/")
ATTRIBUTES_BEGIN = "# brain: merge drivers (managed by `brain git enable`)"
ATTRIBUTES_END = "# brain: end"
ATTRIBUTES = (
    "**/index.json merge=brain-regenerate",
    "**/Insights/Graph.md merge=brain-regenerate",
    "**/Memory/Sessions/*.md merge=brain-dated",
    "**/LLM/Diary/*.md merge=brain-dated",
    "**/Insights/Logs/*.md merge=brain-dated",
)
_UNMERGED = {"DD", "AU", "UD", "UA", "DU", "AA", "UU"}
_GIT_SECTION = re.compile(r"^git:[^\n]*\n(?:[ \t]+[^\n]*\n?|[ \t]*\n)*", re.MULTILINE)


class GitError(BrainError):
    """git is missing, the vault is not a repository, or a git command failed."""


def autocommit(settings: Settings) -> bool:
    """`git.autocommit` in brain.yaml (off unless `brain git enable` turned it on)."""
    section = settings.raw.get("git") or {}
    if not isinstance(section, dict):
        raise InvalidInput("brain.yaml: field 'git' must be a mapping")
    return bool(section.get("autocommit", False))


def git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise GitError(
            "git is not installed (no `git` on PATH)",
            "install git, or set `git: {autocommit: false}` in brain.yaml",
        )
    return found


def run(root: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    """Run git in the vault; a failure becomes a GitError carrying git's own words."""
    try:
        done = subprocess.run(
            [git_binary(), "-C", str(root), "--literal-pathspecs", *args],
            input=stdin.encode("utf-8") if stdin is not None else None,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"could not run git: {exc}") from None
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0]} failed: {said.splitlines()[0] if said else done.returncode}")
    return done.stdout.decode("utf-8", "surrogateescape")


def is_repo(root: Path) -> bool:
    return (root / ".git").exists()


def has_head(root: Path) -> bool:
    return bool(run(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).strip())


def merging(root: Path) -> str | None:
    """What git is in the middle of (a merge, rebase, revert …), or None."""
    git_dir = root / ".git"
    for name, what in (("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"),
                       ("rebase-apply", "a rebase"), ("CHERRY_PICK_HEAD", "a cherry-pick"),
                       ("REVERT_HEAD", "a revert")):  # fmt: skip # arguments grouped by meaning
        if (git_dir / name).exists():
            return what
    return None


def never_committed(rel: str) -> bool:
    return rel.startswith(NEVER) or rel == CACHE_DIR


# enabling ---------------------------------------------------------------------------
def enable(root: Path) -> str:
    """Make the vault a repository with ignores, merge drivers and autocommit; first commit.

    Returns the commit made (or the current HEAD when there was nothing to commit).
    """
    git_binary()  # before anything changes: no git, nothing half-done
    if not (root / "brain.yaml").is_file():
        raise GitError(f"no vault at {root}", "run `brain init --git` to create one")
    fresh = not is_repo(root)
    if fresh:
        run(root, "init", "-q")
    written = [_write_ignores(root), _write_attributes(root), _write_settings(root)]
    configure_drivers(root)
    if not has_head(root):
        run(root, "add", "-A")
        _commit(root, "brain: start the vault's history", "enable", None)
    else:
        _commit(root, "brain: keep the vault under git", "enable", [w for w in written if w])
    return run(root, "rev-parse", "HEAD").strip()


_DRIVERS = (
    ("brain-regenerate", "regenerate", "brain: regenerated files"),
    ("brain-dated", "dated", "brain: dated notes (union of blocks)"),
)


def configure_drivers(root: Path) -> None:
    """Merge drivers live in this clone's .git/config (they name this machine's Python)."""
    command = f"{_quote(sys.executable)} -m brain git merge-driver"
    for name, kind, label in _DRIVERS:
        run(root, "config", f"merge.{name}.name", label)
        run(root, "config", f"merge.{name}.driver", f"{command} {kind} %O %A %B %P")


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'" if re.search(r"[^\w@%+=:,./-]", arg) else arg


def _write_ignores(root: Path) -> str | None:
    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    have = {line.strip().strip("/") for line in text.splitlines()}
    missing = [p for p in IGNORED if p.strip("/") not in have]
    if not missing:
        return None
    atomic_write(
        path, (text.rstrip("\n") + "\n" if text.strip() else "") + "\n".join(missing) + "\n"
    )
    return ".gitignore"


def _write_attributes(root: Path) -> str | None:
    path = root / ".gitattributes"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = "\n".join((ATTRIBUTES_BEGIN, *ATTRIBUTES, ATTRIBUTES_END)) + "\n"
    pattern = re.compile(
        re.escape(ATTRIBUTES_BEGIN) + r".*?" + re.escape(ATTRIBUTES_END) + r"\n?", re.S
    )
    updated = (
        pattern.sub(block, text)
        if pattern.search(text)
        else (text.rstrip("\n") + "\n" if text.strip() else "") + block
    )
    if updated == text:
        return None
    atomic_write(path, updated)
    return ".gitattributes"


def _write_settings(root: Path) -> str | None:
    """`git: {autocommit: true}` in brain.yaml, editing only that section."""
    path = root / "brain.yaml"
    text = path.read_text(encoding="utf-8")
    section = "git:\n  autocommit: true        # one commit per brain operation (docs/git.md)\n"
    match = _GIT_SECTION.search(text)
    if match and "autocommit: true" in match.group(0):
        return None
    if match:
        updated = text[: match.start()] + section + text[match.end() :]
    else:
        updated = text.rstrip("\n") + "\n" + section
    atomic_write(path, updated)
    return "brain.yaml"


# what an operation changed ------------------------------------------------------------
def dirty(root: Path, paths: Sequence[str] = ()) -> dict[str, str]:
    """Files that differ from HEAD or are untracked (not ignored) → their status code."""
    args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"]
    out = run(root, *args, *(["--", *paths] if paths else []))
    found = {}
    for entry in out.split("\0"):
        if len(entry) > 3:
            found[entry[3:]] = entry[:2]
    return found


def snapshot(root: Path) -> dict[str, str]:
    """Each dirty file → a digest of its bytes ("-" when deleted), to tell who changed what."""
    state = {}
    for rel, code in dirty(root).items():
        try:
            state[rel] = code + hashlib.sha1((root / rel).read_bytes()).hexdigest()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            state[rel] = code + "-"
    return state


@dataclass
class Pending:
    """Brain changes not yet committed (kept under .brain/ so the next operation retries)."""

    paths: set[str] = field(default_factory=set)
    messages: list[str] = field(default_factory=list)
    quiet: int = 0  # reads that only touched notes: they ride along with the next commit
    error: str | None = None

    @classmethod
    def load(cls, root: Path) -> Pending:
        path = root / PENDING_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return cls()
        # Laid out by hand (fmt: skip below): arguments grouped by meaning.
        return cls(set(data.get("paths", [])), list(data.get("messages", [])),
                   int(data.get("quiet", 0)), data.get("error"))  # fmt: skip

    def save(self, root: Path) -> None:
        path = root / PENDING_FILE
        if not self.paths and not self.messages and self.error is None:
            remove_file(path)
            return
        data = {"paths": sorted(self.paths), "messages": self.messages, "quiet": self.quiet,
                "error": self.error}  # fmt: skip # one record's fields, grouped
        atomic_write(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


class Operation:
    """What one brain operation says about itself for the commit message."""

    def __init__(self) -> None:
        self.said: str | None = None
        self.fallback = False  # said only when no operation inside it said anything


class Autocommit:
    """The git side of a Brain: re-entrant operations, the pending list, commits."""

    def __init__(self, root: Path, settings: Settings, lock: WriterLock) -> None:
        self.root = root
        self.lock = lock
        self.enabled = autocommit(settings)
        self._depth = 0
        self._before: dict[str, str] = {}
        self._said: list[str] = []
        self._quiet = True
        self._leave: set[str] = set()
        self._defer = False

    @contextlib.contextmanager
    def operation(self, *, quiet: bool = False, defer: bool = False) -> Iterator[Operation]:
        """One operation; nested ones join the outermost. `defer` (a model's session): the
        outermost records its changes as pending and leaves the commit for the session's close."""
        op = Operation()
        if not self.enabled:
            yield op
            return
        if self._depth == 0:
            # git missing or the vault not a repository: refuse before anything is written.
            if not is_repo(self.root):
                raise GitError(
                    f"brain.yaml turns git.autocommit on but {self.root} is not a git repository",
                    "run `brain git enable`, or set `git: {autocommit: false}`",
                )
            self._before = snapshot(self.root)
            self._said, self._quiet, self._leave = [], True, set()
            self._defer = defer
        self._depth += 1
        failed = False
        try:
            yield op
        except BaseException:
            failed = True
            raise
        finally:
            self._depth -= 1
            if op.said and not quiet and not (op.fallback and self._said):
                self._said.append(op.said)
            self._quiet = self._quiet and quiet and not op.said
            if self._depth == 0:
                self._finish(commit=not failed)

    def leave(self, paths: Sequence[str]) -> None:
        """Files a catch-up found changed: those already changed before this operation began
        are the person's and stay uncommitted (even when the catch-up gave one its id)."""
        self._leave.update(paths)

    def _finish(self, *, commit: bool) -> None:
        after = snapshot(self.root)
        # Laid out by hand (fmt: skip below): a comprehension laid out as it reads.
        changed = {p for p in set(after) | set(self._before)
                   if after.get(p) != self._before.get(p) and not never_committed(p)
                   and not (p in self._leave and p in self._before)}  # fmt: skip
        with self.lock.hold():
            pending = Pending.load(self.root)
            if changed:
                pending.paths |= changed
                if self._quiet:
                    pending.quiet += 1
                else:
                    # The outermost operation speaks last; it names the commit.
                    pending.messages.append(self._said[-1] if self._said else "change files")
                pending.save(self.root)
            if commit and not self._defer and pending.messages:
                self.commit(pending)

    def commit(self, pending: Pending | None = None) -> str | None:
        """Commit the pending brain changes; a failure is recorded, never raised."""
        with self.lock.hold():
            pending = pending or Pending.load(self.root)
            try:
                made = commit_pending(self.root, pending)
            except BrainError as exc:
                pending.error = str(exc)
                pending.save(self.root)
                return None
            Pending().save(self.root)
            return made


def commit_pending(root: Path, pending: Pending) -> str | None:
    """One commit of exactly the pending paths that still differ from HEAD."""
    if not pending.paths:
        return None
    busy = merging(root)
    if busy:
        raise GitError(f"git is in the middle of {busy}", "finish it; brain commits afterwards")
    wanted = sorted(p for p in pending.paths if not never_committed(p))
    # All of git status, intersected: a pathspec per file could outgrow the argument list.
    still = sorted(set(dirty(root)) & set(wanted)) if wanted else []
    if not still:
        return None
    messages = pending.messages or ["catch up"]
    more = f" (+{len(messages) - 1} more)" if len(messages) > 1 else ""
    subject = f"brain: {messages[0]}{more}"
    body = [f"- {m}" for m in messages] if more else []
    if pending.quiet:
        body.append(f"- {pending.quiet} read(s) that touched notes")
    verb = messages[0].split(" ", 1)[0]
    _commit(root, subject + ("\n\n" + "\n".join(body) if body else ""), verb, still)
    return run(root, "rev-parse", "HEAD").strip()


def git_identity(root: Path) -> list[str]:
    """A stand-in author when this machine has none configured, so commits never fail on it."""
    if run(root, "config", "user.email", check=False).strip():
        return []
    return ["-c", "user.name=brain", "-c", "user.email=brain@localhost"]


def _commit(root: Path, message: str, verb: str, paths: Sequence[str] | None) -> None:
    """Commit `paths` only (None: what is staged); the person's other changes stay as they are."""
    text = f"{message}\n\n{TRAILER}: {verb}\n"
    identity = git_identity(root)
    (root / CACHE_DIR).mkdir(exist_ok=True)
    atomic_write(root / MESSAGE_FILE, text)
    if paths is None:
        run(root, *identity, "commit", "-q", "--no-verify", "-F", MESSAGE_FILE)
        return
    if not paths:
        return
    spec = "\0".join(paths)
    pathspec = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    run(root, "add", "-A", *pathspec, stdin=spec)
    run(root, *identity, "commit", "-q", "--no-verify", "-F", MESSAGE_FILE, *pathspec, stdin=spec)


# the decorator the Brain's writing methods wear -----------------------------------
P = ParamSpec("P")
R = TypeVar("R")


def recorded(
    describe: Callable[[Any, dict[str, Any]], str] | None = None, *, quiet: bool = False
) -> Callable[[Callable[Concatenate[Any, P], R]], Callable[Concatenate[Any, P], R]]:
    """Run a Brain method (or a function of a Brain) as one operation.

    `describe(result, arguments by name)` names its commit; `quiet` operations (touches,
    catch-ups) wait in the pending list for the next commit instead of making their own.
    """

    def wrap(fn: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Any, P], R]:
        signature = inspect.signature(fn)

        def run_op(owner: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
            defer = getattr(owner, "defer_commits", False)
            with owner.changes.operation(quiet=quiet, defer=defer) as op:
                result = fn(owner, *args, **kwargs)
                if describe is not None:
                    bound = signature.bind(owner, *args, **kwargs).arguments
                    op.said = describe(result, bound)
            return result

        functools.update_wrapper(run_op, fn)
        return run_op

    return wrap


def title_of(note: Any) -> str:
    """A note as a commit message names it (a local-only note's title stays off git)."""
    if getattr(note, "visibility", "normal") == LOCAL_ONLY:
        return f"a local-only note ({note.id})"
    return f'"{note.title}" ({note.id})'


def flag_regeneration(cwd: Path) -> None:
    """Called by the merge driver (git runs it at the top of the work tree)."""
    folder = cwd / CACHE_DIR
    if folder.is_dir():
        (cwd / REGENERATE_FLAG).write_text("merge\n", encoding="utf-8")
