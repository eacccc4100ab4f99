"""The person's levers: `brain set ID FIELD VALUE` for visibility, defining, eternal and status.

None of these is reachable from a model: the MCP server has no tool that calls this module.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from brain._errors import InvalidInput
from brain._model import DEFINING, LOCAL_ONLY, VISIBILITIES, Kind, Note, Status, Visibility
from brain._vault.archive import check_writable
from brain._vault.cold import cold_path, hot_path, is_cold
from brain._vault.files import fsync_dir

if TYPE_CHECKING:
    from brain._context import Context

FIELDS = ("visibility", "defining", "eternal", "status")
# `superseded` comes only from a correction, so that history stays true.
PERSON_STATUSES = ("active", "dormant", "archived", "resolved")
_BOOLEANS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


def set_field(brain: Context, note_id: str, field: str, value: str) -> Note:
    """Change one person-owned field of a note; a move to or from local-only moves the file."""
    if field not in FIELDS:
        raise InvalidInput(f"unknown field {field!r}; brain set accepts: {', '.join(FIELDS)}")
    with brain.lock.hold():
        brain.catch_up()
        note = brain.get(note_id)
        check_writable(brain.store, note.partition)
        if field == "visibility":
            return _visibility(brain, note, _choice(field, value, VISIBILITIES))
        changes: dict[str, Any]
        if field == "defining":
            chosen = _choice(field, value, (*DEFINING, "none"))
            changes = {"defining": None if chosen == "none" else chosen}
        elif field == "eternal":
            if note.kind != Kind.THREAD:
                raise InvalidInput(
                    f"eternal applies to threads only; {note_id} is a {note.kind} note"
                )
            changes = {"eternal": _boolean(value)}
        else:
            changes = _status(note, _choice(field, value, PERSON_STATUSES))
        return brain.save(note.with_meta(**changes))


def _choice(field: str, value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidInput(f"{field} cannot be {value!r}; allowed: {', '.join(allowed)}")
    return value


def _boolean(value: str) -> bool:
    try:
        return _BOOLEANS[value.strip().lower()]
    except KeyError:
        raise InvalidInput(f"eternal must be true or false, not {value!r}") from None


def _status(note: Note, status: str) -> dict[str, Any]:
    kept = [t for t in note.tags if t not in ("archived", "closed")]
    if status == Status.SUPERSEDED or note.status == Status.SUPERSEDED:
        raise InvalidInput(
            f"note {note.id} is superseded; only a correction or a revert changes that"
        )
    # Archived in place, as the lifecycle sweep does it: marked by tags, content kept.
    tags = [*kept, "archived", "closed"] if status == Status.ARCHIVED else kept
    return {"status": status, "tags": tags or None}


def hidden_path(path: str) -> str:
    """`main/A/b.md` ↔ `local-only/main/A/b.md`; a cold note stays cold:
    `cold/main/A/b.md.zst` ↔ `cold/local-only/main/A/b.md.zst`."""
    if is_cold(path):
        return cold_path(hidden_path(hot_path(path)))
    prefix = LOCAL_ONLY + "/"
    return path[len(prefix) :] if path.startswith(prefix) else prefix + path


def _visibility(brain: Context, note: Note, visibility: str) -> Note:
    was_local = (hot_path(note.path) if is_cold(note.path) else note.path).startswith(
        LOCAL_ONLY + "/"
    )
    to_local = visibility == LOCAL_ONLY
    value = None if visibility == Visibility.NORMAL else visibility
    if was_local == to_local:
        return brain.save(note.with_meta(visibility=value))
    if not brain.capabilities.local_only:  # a database leaves nothing on this machine alone
        raise InvalidInput(
            "a hosted brain keeps no local-only notes", "keep it private, or in a files vault"
        )
    target = hidden_path(note.path)
    if brain.store.path(target).exists():
        raise InvalidInput(f"cannot move {note.path}: {target} already exists")
    # The file's place decides: under local-only/ a note is local-only whatever its field says.
    # So it moves in first, or has its field changed while still inside, and never sits in the
    # versioned tree marked as anything but what it is.
    if to_local:
        _move(brain, note.path, target)
        return _resave(brain, note, target, value)
    inside = brain.save(note.with_meta(visibility=value))
    _move(brain, inside.path, target)
    return _resave(brain, inside, target, value)


def _move(brain: Context, old: str, new: str) -> None:
    source, target = brain.store.path(old), brain.store.path(new)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    fsync_dir(target.parent)
    fsync_dir(source.parent)
    _tidy(brain, source.parent)
    brain.caches.catalog.drop_file(old)


def _resave(brain: Context, note: Note, path: str, visibility: str | None) -> Note:
    return brain.save(note.with_path(path).with_meta(visibility=visibility))


def _tidy(brain: Context, folder: Any) -> None:
    """Remove folders a move left empty, up to (not including) a partition's own folder."""
    root = brain.root.resolve()
    hidden = root / LOCAL_ONLY
    while folder not in (root, hidden) and folder.parent not in (root, hidden):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
