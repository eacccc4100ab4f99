"""Forgetting with `--purge`: forget as usual, then rewrite the vault's git history so no
commit, tree or blob holds what was forgotten (git/purge.py does the rewrite).

Only the person at the terminal can start it: the question is asked before anything changes,
refused without a terminal and never asked of a model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from brain._errors import InvalidInput, NotConfirmed
from brain._git import purge as gitpurge
from brain._git.repo import MESSAGE_FILE, GitError, commit_paths, is_repo
from brain._indexes.catalog import ObjectRow
from brain._model import Note
from brain._vault.files import remove_file
from brain._vault.forgotten import Record

if TYPE_CHECKING:
    from brain._context import Context

T = TypeVar("T")


@dataclass(frozen=True)
class Purged:
    """What the purge did: nothing (no history), or the plan carried out and its result."""

    plan: gitpurge.PurgePlan | None = None
    result: gitpurge.PurgeResult | None = None

    def to_json(self) -> dict[str, Any]:
        if self.plan is None or self.result is None:
            return {"purged": False, "reason": "the vault is not under git: no history to purge"}
        return {"purged": True, **self.plan.to_json(), **self.result.to_json()}


def purge(
    brain: Context,
    rows: Sequence[ObjectRow],
    forget: Callable[[], T],
    ask: Callable[[str], bool],
) -> tuple[T, Purged]:
    """Ask (showing what the rewrite changes), forget, then rewrite the history."""
    if brain.for_model:
        raise InvalidInput(
            "rewriting the vault's history is for the person at a terminal",
            "ask the person to run `brain forget ID --purge`",
        )
    root = brain.root
    if not is_repo(root):
        top = gitpurge.enclosing_repo(root)
        if top:
            raise GitError(
                f"the vault is inside the git repository at {top}, which brain does not "
                "rewrite; nothing was forgotten",
                "forget without --purge, then rewrite that repository's history yourself",
            )
        return forget(), Purged()  # no history: forgetting and the next sleep are the whole of it
    brain.changes.commit()  # brain's own pending changes are not the person's
    gitpurge.check_ready(root)
    # The notes as the forget will record them, to find the dictionaries that hold a trace.
    records = [_record(brain.get(r.id)) for r in rows]
    done = gitpurge.plan(root, [r.id for r in rows], [r.title for r in rows], records)
    if not ask(done.describe(root)):
        raise NotConfirmed("not confirmed (what was typed is not the code shown); nothing changed")
    forgotten = forget()
    # A dictionary the forget kept (the remaining notes train the same one) stays in history.
    done = replace(
        done, dictionaries=tuple(p for p in done.dictionaries if not (root / p).exists())
    )
    with brain.lock.hold():
        left = gitpurge.changes(root)  # the forget's own, when autocommit is off
        if left:
            commit_paths(root, "brain: forget before a purge", "forget", left)
        result = gitpurge.rewrite(root, done)
        remove_file(root / MESSAGE_FILE)  # the last commit message named the forgotten id
        brain.catch_up(force=True)  # derived files lost the titles: the caches follow
    return forgotten, Purged(done, result)


def _record(note: Note) -> Record:
    return Record.of(note.id, note.title, note.body, "")
