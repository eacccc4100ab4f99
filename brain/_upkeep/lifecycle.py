"""The lifecycle sweep: untouched work goes dormant, then archived in place; nothing is lost.

Rules (DESIGN.md "Lifecycle"): active → dormant when untouched `dormant_days`; dormant →
archived when untouched `archive_days` more (tags `archived` and `closed`). Only titled notes
and threads age; sessions, diary days, logs and other records never do, singletons are
maintained rather than aged, and an `eternal` note is skipped. Aging reads `touched`, never the
file's modification time; a thread counts as touched when any of its days was. The sweep only
moves a note forward: a status a person set by hand is never undone by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from brain._errors import BrokenNote
from brain._indexes.catalog import ObjectRow
from brain._model import Kind, Status, parse_iso
from brain._settings import Settings
from brain._vault.archive import is_archived

if TYPE_CHECKING:
    from brain._context import Context

AGING_KINDS = ("titled", "thread")
_STAGES = (Status.ACTIVE.value, Status.DORMANT.value, Status.ARCHIVED.value)
ARCHIVE_TAGS = ("archived", "closed")


@dataclass(frozen=True)
class Aging:
    """One note the sweep moved on (or would, in a dry run)."""

    id: str
    title: str
    path: str
    before: str
    after: str
    untouched_days: int

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "from": self.before,
            "to": self.after,
            "untouched_days": self.untouched_days,
        }


def stage(untouched: timedelta, settings: Settings) -> str:
    """Where a note untouched this long belongs (the boundaries count as reached)."""
    if untouched >= timedelta(days=settings.dormant_days + settings.archive_days):
        return "archived"
    if untouched >= timedelta(days=settings.dormant_days):
        return "dormant"
    return "active"


def last_touch(brain: Context, row: ObjectRow) -> datetime | None:
    """`touched`, or for a thread the latest touch of the thread or any of its days."""
    stamps = [row.touched]
    if row.kind == Kind.THREAD:
        stamps += [child.touched for child in brain.caches.catalog.below(row.id)]
    moments = []
    for stamp in stamps:
        try:
            moments.append(parse_iso(stamp))
        except ValueError:
            continue
    return max(moments) if moments else None


def due(brain: Context, now: datetime) -> list[tuple[ObjectRow, str, int]]:
    """(row, next status, untouched days) for every note the sweep would move on."""
    rows = brain.caches.catalog.aging(AGING_KINDS)
    found = []
    frozen = {p for p in brain.store.partitions() if is_archived(brain.store, p)}
    for row in rows:
        if row.partition in frozen:
            continue  # an archived partition is read-only: its notes do not age
        touched = last_touch(brain, row)
        if touched is None:
            continue
        after = stage(now - touched, brain.settings)
        if _STAGES.index(after) > _STAGES.index(row.status):
            found.append((row, after, (now - touched).days))
    return found


def sweep(brain: Context, now: datetime, *, dry_run: bool = False) -> list[Aging]:
    """Age every note that is due; returns what changed (or would change)."""
    done = []
    # One full-text commit for the whole batch: a commit per note would dominate the pass.
    with brain.lock.hold():
        for row, after, days in due(brain, now):
            try:
                note = brain.store.read(row.path)
            except (BrokenNote, FileNotFoundError):
                continue  # doctor reports it; the rest of the vault still ages
            if note.meta.get("eternal") is True:
                continue
            done.append(Aging(row.id, row.title, row.path, row.status, after, days))
            if dry_run:
                continue
            changes: dict[str, Any] = {"status": after}
            if after == Status.ARCHIVED:
                changes["tags"] = list(note.tags) + [t for t in ARCHIVE_TAGS if t not in note.tags]
            brain.save(note.with_meta(**changes))
            brain.record_event("aged", note.id, note, detail=f"{row.status} → {after}")
    return done
