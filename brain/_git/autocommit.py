"""One commit per brain operation: re-entrant operations, the pending list, `recorded`.

An operation (a decorated Brain method, a partition change, an MCP tool call) snapshots the
dirty files before and after; the files whose state it changed join a pending list under
`.brain/`, and the outermost operation commits exactly those paths. A failed commit leaves the
list for the next operation, so a write is never lost; files changed by hand are never swept
into a commit.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from brain._errors import BrainError
from brain._git import seen
from brain._git.repo import (
    FORGETS,
    GitError,
    autocommit_on,
    commit_paths,
    committed,
    content,
    dirty,
    is_repo,
    merging,
    never_committed,
    run,
    snapshot,
)
from brain._indexes.ports import LockPort
from brain._model import LOCAL_ONLY
from brain._vault.files import atomic_write, remove_file
from brain._vault.paths import CACHE_DIR

if TYPE_CHECKING:
    from brain._settings import Settings

PENDING_FILE = f"{CACHE_DIR}/git-pending.json"


@dataclass
class Pending:
    """Brain changes not yet committed (kept under .brain/ so the next operation retries)."""

    # Each path → a digest of what brain left in it ("-": deleted; None: not known, from a list
    # of before the digests were kept): a file changed since is the person's, never committed.
    paths: dict[str, str | None] = field(default_factory=dict)
    messages: list[str] = field(default_factory=list)
    quiet: int = 0  # reads that only touched notes: they ride along with the next commit
    error: str | None = None
    forgets: list[str] = field(default_factory=list)  # ids forgotten: the commit's trailers

    @classmethod
    def load(cls, root: Path) -> Pending:
        path = root / PENDING_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return cls()
        paths = data.get("paths", {})
        return cls(
            dict(paths) if isinstance(paths, dict) else dict.fromkeys(paths),
            list(data.get("messages", [])),
            int(data.get("quiet", 0)),
            data.get("error"),
            [str(i) for i in data.get("forgets", [])],
        )

    def save(self, root: Path) -> None:
        path = root / PENDING_FILE
        if not self.paths and not self.messages and self.error is None:
            remove_file(path)
            return
        data = {
            "paths": dict(sorted(self.paths.items())),
            "messages": self.messages,
            "quiet": self.quiet,
            "error": self.error,
            **({"forgets": self.forgets} if self.forgets else {}),
        }
        atomic_write(path, json.dumps(data, ensure_ascii=False, indent=1) + "\n")


class Operation:
    """What one brain operation says about itself for the commit message."""

    def __init__(self) -> None:
        self.said: str | None = None
        self.fallback = False  # said only when no operation inside it said anything


class Autocommit:
    """The git side of a Brain: re-entrant operations, the pending list, commits."""

    def __init__(self, root: Path, settings: Settings, lock: LockPort) -> None:
        self.root = root
        self.lock = lock
        self.enabled = autocommit_on(settings)
        self._depth = 0
        self._before: dict[str, str] = {}
        self._said: list[str] = []
        self._quiet = True
        self._leave: set[str] = set()
        self._forgets: list[str] = []
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
            self._said, self._quiet, self._leave, self._forgets = [], True, set(), []
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

    def forgot(self, note_id: str, path: str) -> None:
        """A note this operation forgot: its commit names the id in a trailer, for the merge
        on another clone to honour (`upkeep/elsewhere.py`); a local-only note's never."""
        if self.enabled and self._depth and not never_committed(path):
            self._forgets.append(note_id)

    def _finish(self, *, commit: bool) -> None:
        after = snapshot(self.root)
        changed = {
            p
            for p in set(after) | set(self._before)
            if after.get(p) != self._before.get(p)
            and not never_committed(p)
            and not (p in self._leave and p in self._before)
        }
        with self.lock.hold():
            pending = Pending.load(self.root)
            if changed:
                pending.paths.update(
                    {p: after[p][2:] if p in after else content(self.root, p) for p in changed}
                )
                if self._quiet:
                    pending.quiet += 1
                else:
                    # The outermost operation speaks last; it names the commit.
                    pending.messages.append(self._said[-1] if self._said else "change files")
                pending.forgets += [i for i in self._forgets if i not in pending.forgets]
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
    # What brain left that HEAD already holds was committed by the person (`git commit -a`):
    # what the file holds now is theirs (moved or edited since), not brain's to commit.
    at_head = committed(root, still)
    still = [p for p in still if pending.paths[p] is None or pending.paths[p] != at_head[p]]
    if not still:
        return None
    # Reads alone: a commit of their own (`touch`), which `brain undo` never takes for a change.
    messages = pending.messages or [f"touch {len(still)} note(s) read"]
    more = f" (+{len(messages) - 1} more)" if len(messages) > 1 else ""
    subject = f"brain: {messages[0]}{more}"
    body = [f"- {m}" for m in messages] if more else []
    if pending.quiet:
        body.append(f"- {pending.quiet} read(s) that touched notes")
    verb = messages[0].split(" ", 1)[0]
    parent = seen.head(root)
    message = subject + ("\n\n" + "\n".join(body) if body else "")
    commit_paths(root, message, verb, still, [(FORGETS, i) for i in pending.forgets])
    made = run(root, "rev-parse", "HEAD").strip()
    seen.follow_commit(root, parent, made)
    return made


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
            vault = getattr(owner, "_context", owner)  # a Brain records through its Context
            defer = getattr(vault, "defer_commits", False)
            with vault.changes.operation(quiet=quiet, defer=defer) as op:
                result = fn(owner, *args, **kwargs)
                if describe is not None:
                    bound = signature.bind(owner, *args, **kwargs).arguments
                    op.said = describe(result, bound)
            return result

        functools.update_wrapper(run_op, fn)
        return run_op

    return wrap


TITLE_CHARS = 60  # of a note's title in a commit subject


def title_of(note: Any) -> str:
    """A note as a commit message names it (a local-only note's title stays off git), a long
    title cut to TITLE_CHARS so the subject stays one readable line; the id says which."""
    if getattr(note, "visibility", "normal") == LOCAL_ONLY:
        return f"a local-only note ({note.id})"
    title = note.title if len(note.title) <= TITLE_CHARS else note.title[: TITLE_CHARS - 1] + "…"
    return f'"{title}" ({note.id})'
