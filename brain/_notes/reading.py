"""Reading notes for use: a partition's list, and expanding one (which counts as a touch)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brain._errors import InvalidInput
from brain._indexes.catalog import ObjectRow
from brain._model import KINDS, STATUSES, Note, Status
from brain._notes.merged import kept_id
from brain._vault.archive import is_archived
from brain._vault.paths import check_node

if TYPE_CHECKING:
    from brain._context import Context


def list_notes(
    brain: Context,
    *,
    node: str | None = None,
    status: str | None = None,
    kind: str | None = None,
    limit: int | None = None,
    defining_only: bool = False,
) -> list[ObjectRow]:
    """Notes in this partition, newest first, optionally by node, status, kind or defining."""
    brain.catch_up()
    return brain.caches.catalog.notes(
        brain.partition,
        normal_only=brain.for_model,
        node=_node(node),
        status=_status(status),
        kind=_kind(kind),
        limit=limit,
        defining_only=defining_only,
    )


def count_notes(
    brain: Context,
    *,
    node: str | None = None,
    status: str | None = None,
    kind: str | None = None,
    limit: int | None = None,
    defining_only: bool = False,
) -> int:
    """How many notes `list_notes` finds with these filters, whatever its limit."""
    del limit  # accepted so that one set of list options serves both
    return brain.caches.catalog.count_notes(
        brain.partition,
        normal_only=brain.for_model,
        node=_node(node),
        status=_status(status),
        kind=_kind(kind),
        defining_only=defining_only,
    )


def _node(node: str | None) -> str | None:
    return check_node(node) if node else None


def _kind(kind: str | None) -> str | None:
    # No note has another kind; and PostgreSQL refuses a NUL in a text it is sent.
    if kind and kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}")
    return kind


def _status(status: str | None) -> str | None:
    if status and status not in STATUSES:
        raise InvalidInput(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}")
    return status


def expand(brain: Context, note_id: str, *, touch: bool = True) -> Note:
    """The whole note, read for use: this counts as a touch (it keeps the note alive). An id
    a merge of two machines' notes did not keep gives the note that took it in."""
    brain.catch_up()
    note_id = kept_id(brain, note_id)
    note = brain.get(note_id)
    # History stays byte for byte as it was; an archived partition is read-only.
    if not touch or note.status == Status.SUPERSEDED or is_archived(brain.store, note.partition):
        return note
    with brain.lock.hold():
        note = brain.get(note_id)
        return brain.save(brain.touched(note))
