"""The vault's git history through the opened vault: a note's log, undoing brain's last commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from brain._errors import InvalidInput
from brain._git import history as githistory
from brain._model import Visibility

if TYPE_CHECKING:
    from brain._context import Context


def log(brain: Context, note_id: str | None = None, limit: int = 20) -> Sequence[githistory.Entry]:
    """Recent commits, newest first: all, or one note's (found by id, across renames)."""
    path = None
    if note_id is not None:
        row = brain.row(note_id)
        if row.visibility == Visibility.LOCAL_ONLY:
            raise InvalidInput(f"note {note_id} is local-only; git never carries it")
        path = row.path
    return githistory.log(brain.root, path, limit)


def undo(brain: Context) -> tuple[str, str]:
    """Revert brain's last commit; returns (the commit undone, the commit that undoes it)."""
    githistory.require_repo(brain.root)
    with brain.lock.hold():
        brain.changes.commit()  # what is pending first: undo names brain's real last change
        target, touches = githistory.undo_target(brain.root)
        made = githistory.undo(brain.root, target, touches)
        brain.catch_up(force=True)
    return target, made
