"""Ids a merge of two machines' notes did not keep: found again through the kept note.

A day's diary, session note or daily log made on two machines merges into one note that keeps
the older id and lists the other in its `merged_ids` (brain/_git/merge.py). An id the person
copied before the merge (or a relation a third clone made) then names no note. Looking it up
finds the note that took it in: the other machine's note of the same day, so only the notes
made in the day around the id's own moment are read, and only when the id is not found.
Reads and relations follow the id to the kept note (`_notes/merged.py`); a change through it
(`correct`, `forget`, `set`) is refused, naming the kept note: it would act on the whole day
both machines wrote, which must be the person's explicit choice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from brain._errors import BrokenNote, NotFound
from brain._indexes.catalog import ObjectRow
from brain._indexes.catchup import FORGOTTEN_BACK
from brain._indexes.ports import CatalogReads, NotesPort
from brain._model import is_id
from brain._vault import forgotten

_CROCKFORD = str.maketrans("0123456789ABCDEFGHJKMNPQRSTVWXYZ", "0123456789abcdefghijklmnopqrstuv")


def taken_in(catalog: CatalogReads, store: NotesPort, object_id: str) -> ObjectRow | None:
    """The note that took `object_id` in; None when the id is found, a chunk's, or merged
    into nothing this vault holds."""
    if not is_id(object_id) or "#" in object_id or catalog.get(object_id) is not None:
        return None
    made = moment(object_id)
    if made is None:
        return None
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
            merged = store.read(row.path).meta.get("merged_ids") or []
        except (BrokenNote, FileNotFoundError):
            continue
        if isinstance(merged, list) and object_id in {str(i) for i in merged}:
            return row
    return None


def missing(
    catalog: CatalogReads,
    store: NotesPort,
    object_id: str,
    shows: Callable[[ObjectRow], bool],
    held_out: Iterable[str] = (),
) -> NotFound:
    """Why `object_id` names no note: merged into another (one the asker `shows`), forgotten
    here and back in one of the files kept out of the caches (`held_out`), or none."""
    key = object_id.split("#", 1)[0]
    if forgotten.forgotten_here(store.root, key) is not None:
        for path in held_out:
            with contextlib.suppress(BrokenNote, OSError):
                if store.read(path).id == key:
                    return NotFound(
                        f"{key} was forgotten here; {path} holds it again (a backup or a copy)",
                        FORGOTTEN_BACK,
                    )
    kept = taken_in(catalog, store, key)
    if kept is not None and shows(kept):
        return NotFound(
            f"{key} was merged into {kept.id} (the same day's note from another machine)",
            f"run the same command on {kept.id}: it acts on the whole merged note",
        )
    return NotFound(f"no note with id {object_id}", "check the id with `brain list`")


def moment(object_id: str) -> datetime | None:
    """When a ULID was made (its first ten characters count milliseconds)."""
    try:
        millis = int(object_id[:10].upper().translate(_CROCKFORD), 32)
        return datetime.fromtimestamp(millis / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return None
