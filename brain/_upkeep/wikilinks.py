"""Relations' wikilinks (`brain_links`, _obsidian.py) kept pointing where their targets are."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brain._obsidian import linked
from brain._vault.archive import is_archived
from brain._vault.cold import is_cold

if TYPE_CHECKING:
    from brain._context import Context


def refresh(brain: Context) -> int:
    """Rewrite `brain_links` where a target moved since the note was written (a split, a
    partition rename); the number of notes rewritten. Sleep calls it."""
    catalog = brain.caches.catalog
    sources = sorted({edge.source for edge in catalog.relations()})
    count = 0
    with brain.lock.hold():
        for source in sources:
            row = catalog.get(source)
            if row is None or is_cold(row.path) or is_archived(brain.store, row.partition):
                continue  # compressed, or read-only: left as they are
            note = brain.get(row.id)
            if linked(catalog, note) is not note:
                brain.save(note)  # save derives the links afresh
                count += 1
    return count
