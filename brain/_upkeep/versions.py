"""The vault's git history through the opened vault: a note's log, undoing brain's last commit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from brain._errors import BrokenNote, InvalidInput
from brain._git import history as githistory
from brain._model import Visibility
from brain._vault import forgotten
from brain._vault.journal import Event

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
    return githistory.log(brain.root, path, limit, note_id)


def undo(brain: Context) -> tuple[str, str]:
    """Revert brain's last commit; returns (the commit undone, the commit that undoes it)."""
    githistory.require_repo(brain.root)
    with brain.lock.hold():
        brain.changes.commit()  # what is pending first: undo names brain's real last change
        target, touches = githistory.undo_target(brain.root)
        made = githistory.undo(brain.root, target, touches)
        changed = set(githistory.changed_paths(brain.root, target))
        # Before the catch-up, which keeps out a file holding a note forgotten here.
        had = forgotten.unrecord(brain.root, _ids_in(brain, changed))
        brain.catch_up(force=True)
        moves = githistory.operation(brain.root, target) in ("sleep", "move")
        brain.journal.drop(_undone(brain, changed if moves else set()))
        _unforgotten(brain, changed, had)
    return target, made


def _ids_in(brain: Context, paths: set[str]) -> list[str]:
    """The ids the notes at these paths hold now (those gone or broken left out)."""
    ids = []
    for path in sorted(paths):
        try:
            ids.append(brain.store.read(path).id)
        except (OSError, BrokenNote):
            continue
    return ids


def _unforgotten(brain: Context, changed: set[str], had: set[str]) -> None:
    """Notes an undone forget brought back are not forgotten: their forgetting records went
    (`had`: a later import leaves their conversation out no more; `doctor --forgotten` looks
    for them no more), and so does one anonymous "forgotten" entry of the day's log for each."""
    back = []
    for path in sorted(changed):
        row = brain.caches.catalog.file(path)
        note = brain.caches.catalog.get(row.note_id) if row and row.note_id else None
        if note is not None and note.id in had:
            back.append(note)
    events = [e for e in brain.journal.events() if e.kind == "forgotten" and not e.id]
    dropped = []
    for note in back:
        kept_as = (note.partition, note.visibility)
        alike = [e for e in events if (e.partition, e.visibility) == kept_as]
        if alike:
            dropped.append(alike[-1])
            events.remove(alike[-1])
    brain.journal.drop(dropped)


def _undone(brain: Context, paths: set[str]) -> list[Event]:
    """What the journal says an undone commit did, so the daily log stops saying it: the
    last correction of a note whose new version is gone, and (`paths`: a sleep's or a tier
    move's files) the last aging or tier move of a note in those files."""
    last: dict[tuple[str, str], Event] = {}
    for event in brain.journal.events():
        last[event.kind, event.id] = event
    undone = []
    for event in last.values():
        if event.kind == "corrected":
            if brain.caches.catalog.get(event.detail) is None:
                undone.append(event)
        elif event.kind in ("aged", "moved"):
            row = brain.caches.catalog.get(event.id)
            if row is not None and row.path in paths:
                undone.append(event)
    return undone
