"""Forgetting: a plain note, a note and its children, one version, a revert, a whole history.

Forgetting is planned first (so the CLI can show what goes and ask before more than one note
goes), then applied under the writer lock. Nothing is invented: a revert gives back the
previous version exactly, removing one version relinks its neighbours, and relations that
pointed at a forgotten note are dropped from the notes that held them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain._errors import InvalidInput
from brain._indexes.catalog import ObjectRow
from brain._indexes.ports import CatalogReads
from brain._model import Relation
from brain._notes.corrections import PRIOR_FIELD, chain, restore

if TYPE_CHECKING:
    from brain._context import Context

MODES = ("auto", "version", "history")


@dataclass(frozen=True)
class ForgetPlan:
    """What a forget will do, worked out before anything changes."""

    target: str
    mode: str  # plain | revert | version | history
    remove: tuple[ObjectRow, ...]  # notes that go, with every object they hold
    restored: ObjectRow | None = None  # the version made current again (revert)
    relinked: tuple[str, ...] = ()  # versions whose `supersedes` now skips a removed one
    unlinked: tuple[str, ...] = ()  # notes that lose relations pointing at removed notes

    @property
    def notes(self) -> int:
        return len(self.remove)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "mode": self.mode,
            "removed": [{"id": r.id, "title": r.title, "path": r.path} for r in self.remove],
            "restored": self.restored.id if self.restored else None,
            "relinked": list(self.relinked),
            "unlinked": list(self.unlinked),
        }


def plan(brain: Context, note_id: str, mode: str = "auto") -> ForgetPlan:
    """Work out a forget without changing anything."""
    if mode not in MODES:
        raise InvalidInput(f"unknown forget mode {mode!r}; allowed: {', '.join(MODES)}")
    if "#" in note_id:
        doc = note_id.split("#", 1)[0]
        raise InvalidInput(
            f"{note_id} is a chunk of document {doc}; forgetting removes whole notes",
            f"run `brain forget {doc}` to forget the document and all its chunks",
        )
    catalog = brain.caches.catalog
    row = brain.row(note_id)
    versions = chain(catalog, row.id)
    if len(versions) <= 1:
        if mode != "auto":
            raise InvalidInput(f"note {row.id} has no other versions; forget it without --{mode}")
        remove = _with_descendants(catalog, [row])
        return _finish(catalog, row.id, "plain", remove)
    if mode == "history":
        return _finish(catalog, row.id, "history", _with_descendants(catalog, versions))
    at = [v.id for v in versions].index(row.id)
    if at == len(versions) - 1:
        # The current version goes and the previous one is current again; children of the
        # current version (thread days written since) move to the restored one.
        return _finish(catalog, row.id, "revert", [row], restored=versions[-2])
    neighbour = versions[at + 1]
    return _finish(catalog, row.id, "version", [row], relinked=(neighbour.id,))


def _with_descendants(catalog: CatalogReads, rows: list[ObjectRow]) -> list[ObjectRow]:
    """The notes and every note below them by `parent` (thread days, …), in a stable order."""
    out = {r.id: r for r in rows}
    frontier = [r.id for r in rows]
    while frontier:
        children = [c for c in catalog.children(frontier) if c.id not in out]
        for child in children:
            out[child.id] = child
        frontier = [c.id for c in children]
    return sorted(out.values(), key=lambda r: (r.path, r.id))


def _finish(
    catalog: CatalogReads,
    target: str,
    mode: str,
    remove: list[ObjectRow],
    *,
    restored: ObjectRow | None = None,
    relinked: tuple[str, ...] = (),
) -> ForgetPlan:
    gone = [r.id for r in remove]
    holders = {e.source for e in catalog.relations_to_any(gone)}
    # Chunk targets (`<doc>#<n>`) of removed documents count too.
    for doc in gone:
        holders |= {e.source for e in catalog.relations_to_parts(doc)}
    unlinked = tuple(sorted(holders - set(gone) - set(relinked)))
    return ForgetPlan(target, mode, tuple(remove), restored, relinked, unlinked)


def forget(brain: Context, note_id: str, mode: str = "auto") -> tuple[ForgetPlan, list[str]]:
    """Apply a forget; returns the plan carried out and the object ids dropped from caches."""
    with brain.lock.hold():
        brain.catch_up()
        done = plan(brain, note_id, mode)
        if brain.for_model:
            _check_model_may_forget(brain, done)
        dropped: list[str] = []
        if done.mode == "revert":
            dropped += _revert(brain, done)
        elif done.mode == "version":
            dropped += _drop_version(brain, done)
        else:
            for row in done.remove:
                dropped += brain.delete(brain.get(row.id))
        gone = {r.id for r in done.remove}
        for holder in done.unlinked:
            note = brain.get(holder)
            kept = [r for r in note.relations if r.target.split("#", 1)[0] not in gone]
            brain.save(note.with_meta(relations=[r.to_yaml() for r in kept] or None))
        return done, dropped


def _check_model_may_forget(brain: Context, done: ForgetPlan) -> None:
    """A model's forget never removes or rewrites a note hidden from it (a private thread day,
    a private note relating to the target): refused before anything changes, naming none."""
    catalog = brain.caches.catalog
    touched = [*done.remove, *(r for r in [done.restored] if r is not None)]
    touched += [r for i in (*done.relinked, *done.unlinked) if (r := catalog.get(i)) is not None]
    touched += catalog.children([r.id for r in done.remove])
    if not all(brain.shows(r) for r in touched):
        raise InvalidInput(
            f"note {done.target} is tied to notes the person keeps to themselves; "
            "only they can forget it",
            f"ask the person to run `brain forget {done.target}`",
        )


def _revert(brain: Context, done: ForgetPlan) -> list[str]:
    assert done.restored is not None
    (gone,) = done.remove
    newest = brain.get(gone.id)
    previous = brain.get(done.restored.id)
    back = restore(previous, str(newest.meta.get(PRIOR_FIELD, "status: active")))
    # The previous version takes back the place of the current one, in one atomic write.
    brain.save(back.with_path(newest.path))
    brain.remember_forgetting(newest)
    dropped = brain.caches.drop_note(newest.id)
    if previous.path != newest.path:
        brain.store.delete(previous.path)
        brain.caches.catalog.drop_file(previous.path)
    _adopt_children(brain, newest.id, previous.id)
    return dropped


def _drop_version(brain: Context, done: ForgetPlan) -> list[str]:
    (gone,) = done.remove
    (after_id,) = done.relinked
    removed = brain.get(gone.id)
    after = brain.get(after_id)
    relations: list[Relation] = []
    for rel in after.relations:
        if rel.type == "corrects" and rel.target == removed.id:
            if removed.supersedes:
                relations.append(Relation("corrects", removed.supersedes, rel.weight))
        else:
            relations.append(rel)
    relinked = after.with_meta(
        supersedes=removed.supersedes,
        relations=[r.to_yaml() for r in relations] or None,
        **{PRIOR_FIELD: removed.meta.get(PRIOR_FIELD) if removed.supersedes else None},
    )
    brain.save(relinked)
    dropped = brain.delete(removed)
    _adopt_children(brain, removed.id, removed.supersedes or after.id)
    return dropped


def _adopt_children(brain: Context, old_parent: str, new_parent: str) -> None:
    for child in brain.caches.catalog.children([old_parent]):
        note = brain.get(child.id)
        brain.save(note.with_meta(parent=new_parent))
