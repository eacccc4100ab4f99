"""Ids a merge of two machines' notes did not keep: found again through the kept note.

A day's diary, session note or daily log made on two machines merges into one note that keeps
the older id and lists the other in its `merged_ids` (brain/_git/merge.py). An id the person
copied before the merge (or a relation a third clone made) then names no note. Looking it up
finds the note that took it in: the other machine's note of the same day, so only the notes
made in the day around the id's own moment are read, and only when the id is not found.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from brain._errors import BrokenNote
from brain._model import is_id

if TYPE_CHECKING:
    from brain._context import Context

_CROCKFORD = str.maketrans("0123456789ABCDEFGHJKMNPQRSTVWXYZ", "0123456789abcdefghijklmnopqrstuv")


def kept_id(brain: Context, object_id: str) -> str:
    """The id of the note that took `object_id` in, or `object_id` itself (found, a chunk's,
    or merged into nothing this vault holds)."""
    if not is_id(object_id) or "#" in object_id:
        return object_id
    catalog = brain.caches.catalog
    if catalog.get(object_id) is not None:
        return object_id
    made = moment(object_id)
    if made is None:
        return object_id
    # The kept id is the older, and both notes were made on one (local) day.
    start, end = (made - timedelta(days=1)).date(), (made + timedelta(days=1)).date()
    days = sorted(
        (
            row
            for kind in ("dated", "log")
            for row in catalog.of_kind(kind)
            if row.id == row.note_id
            and start.isoformat() <= row.created < end.isoformat()
            and row.id < object_id
        ),
        key=lambda row: row.id,
    )
    for row in days:
        try:
            merged = brain.store.read(row.path).meta.get("merged_ids") or []
        except (BrokenNote, FileNotFoundError):
            continue
        if isinstance(merged, list) and object_id in {str(i) for i in merged}:
            return row.id
    return object_id


def moment(object_id: str) -> datetime | None:
    """When a ULID was made (its first ten characters count milliseconds)."""
    try:
        millis = int(object_id[:10].upper().translate(_CROCKFORD), 32)
        return datetime.fromtimestamp(millis / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return None
