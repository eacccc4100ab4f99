"""`brain doctor`: look at the vault and its caches without touching either."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain import githistory, relations
from brain.errors import BrokenNote
from brain.model import content_hash
from brain.vault import leftovers

if TYPE_CHECKING:
    from brain.brain import Brain

# Catalog info key: when and why the caches last rebuilt themselves (written by Brain).
REBUILT = "rebuilt"


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
    leftovers: tuple[str, ...] = ()  # temp files of killed writes (`brain sleep` removes them)
    rebuilt: str | None = None  # when and why the caches last rebuilt themselves (no problem)

    @property
    def ok(self) -> bool:
        return not (self.broken or self.unknown or self.changed or self.missing or self.stale
                    or self.cycles or self.dangling or self.conflicts
                    or self.leftovers)  # fmt: skip

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
            "leftovers": list(self.leftovers),
            "rebuilt": self.rebuilt,
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
    left = leftovers.find(brain.root, brain.clock.now().timestamp())
    rebuilt = brain.caches.catalog.info(REBUILT)
    return DoctorReport(tuple(broken), tuple(unknown), tuple(changed), tuple(missing),
                        tuple(stale), tuple(cycles), tuple(dangling),
                        tuple(conflicts), tuple(left), rebuilt)  # fmt: skip
