"""Ids a merge of two machines' notes did not keep, read through the note that took them in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brain._mergedids import taken_in

if TYPE_CHECKING:
    from brain._context import Context


def kept_id(brain: Context, object_id: str) -> str:
    """The id of the note that took `object_id` in, or `object_id` itself (found, a chunk's,
    or merged into nothing this vault holds; brain/_mergedids.py)."""
    kept = taken_in(brain.caches.catalog, brain.store, object_id)
    return object_id if kept is None else kept.id
