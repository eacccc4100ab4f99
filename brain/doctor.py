"""`brain doctor`: look at the vault and its caches without touching either."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain import githistory, relations
from brain.catchup import keeps_id
from brain.errors import BrokenNote
from brain.model import Note, content_hash

if TYPE_CHECKING:
    from brain.brain import Brain


@dataclass(frozen=True)
class DoctorReport:
    broken: tuple[tuple[str, str], ...] = ()  # (path, reason)
    unknown: tuple[str, ...] = ()  # files on disk the caches do not know
    changed: tuple[str, ...] = ()  # files changed since the caches saw them
    missing: tuple[str, ...] = ()  # cached files no longer on disk
    stale: tuple[str, ...] = ()  # problems with the caches themselves
    cycles: tuple[str, ...] = ()  # `supersedes` fields that loop (hand edits)
    dangling: tuple[str, ...] = ()  # relations or `supersedes` naming no note
    conflicts: tuple[str, ...] = ()  # files holding git conflict markers (docs/git.md)
    links: tuple[str, ...] = ()  # symbolic links in the vault: skipped, never followed
    copies: tuple[str, ...] = ()  # files holding the id of another file (a copy)
    renewed: tuple[str, ...] = ()  # copies given an id of their own (`copy_of`): for the record

    @property
    def ok(self) -> bool:
        return not (self.broken or self.unknown or self.changed or self.missing or self.stale
                    or self.cycles or self.dangling or self.conflicts or self.links
                    or self.copies)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "broken": [{"path": p, "reason": r} for p, r in self.broken],
            "unknown": list(self.unknown),
            "changed": list(self.changed),
            "missing": list(self.missing),
            "stale": list(self.stale),
            "cycles": list(self.cycles),
            "dangling": list(self.dangling),
            "conflicts": list(self.conflicts),
            "links": list(self.links),
            "copies": list(self.copies),
            "renewed": list(self.renewed),
        }


def examine(brain: Brain) -> DoctorReport:
    """Look without touching: broken notes, files the caches don't know, stale caches."""
    known = brain.caches.catalog.files()
    broken, unknown, changed, seen = [], [], [], set()
    parsed = []
    for rel, _st in brain.store.walk():
        seen.add(rel)
        data = brain.store.read_bytes(rel)
        try:
            parsed.append(brain.store.parse(rel, data))
        except BrokenNote as exc:
            broken.append((rel, exc.message))
            continue
        row = known.get(rel)
        if row is None:
            unknown.append(rel)
        elif row.error is not None:
            broken.append((rel, row.error))
        elif row.hash != content_hash(data):
            changed.append(rel)
    missing = sorted(p for p in known if p not in seen)
    stale = []
    brain.flush(vectors=False)
    objects = brain.caches.catalog.count()
    in_text = len(brain.caches.fulltext)
    if objects != in_text:
        stale.append(
            f"full-text index holds {in_text} objects, the catalog {objects}; run `brain reindex`"
        )
    cycles, dangling = relations.check(parsed, brain.caches.catalog)
    conflicts = githistory.conflict_markers(brain.root, sorted(seen))
    links = [
        f"{rel}: a symbolic link leading {where} the vault; skipped, never followed"
        for rel, where in brain.store.links()
    ]
    copies, renewed = _copies(brain, parsed)
    return DoctorReport(tuple(broken), tuple(unknown), tuple(changed), tuple(missing),
                        tuple(stale), tuple(cycles), tuple(dangling),
                        tuple(conflicts), tuple(links), tuple(copies),
                        tuple(renewed))  # fmt: skip


def _copies(brain: Brain, parsed: list[Note]) -> tuple[list[str], list[str]]:
    """Files that share an id (a copy not yet given its own), and copies already renewed."""
    by_id: dict[str, list[Note]] = {}
    renewed = []
    for note in parsed:
        if note.id:
            by_id.setdefault(note.id, []).append(note)
        if note.meta.get("copy_of"):
            renewed.append(
                f"{note.path}: a copy of note {note.meta['copy_of']}, given its own id "
                f"{note.id} (remove `copy_of` from it once checked)"
            )
    copies = []
    for note_id, holders in by_id.items():
        if len(holders) < 2:
            continue
        known = brain.caches.catalog.get(note_id)
        owners = {note_id: known.path} if known is not None else {}
        keeper = holders[0]
        for other in holders[1:]:
            if keeps_id(owners, note_id, (other.created, other.path),
                        (keeper.created, keeper.path)):  # fmt: skip
                keeper = other
        copies += [
            f"{n.path}: holds the id {note_id} of {keeper.path} (a copy?); the next "
            "catch-up (any command) gives it an id of its own"
            for n in holders
            if n is not keeper
        ]
    return sorted(copies), sorted(renewed)
