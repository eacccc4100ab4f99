"""Typed relations between notes: stored by id in the source's front-matter, checked here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain._errors import InvalidInput, NotFound
from brain._indexes.catalog import RelationRow
from brain._indexes.ports import CatalogReads
from brain._model import RELATION_TYPES, Note, Relation, Status
from brain._notes.corrections import current
from brain._notes.merged import kept_id

if TYPE_CHECKING:
    from brain._context import Context


@dataclass(frozen=True)
class Links:
    """A note's relations both ways, as the catalog knows them."""

    outgoing: tuple[RelationRow, ...]
    incoming: tuple[RelationRow, ...]

    def to_json(self, titles: dict[str, str]) -> dict[str, Any]:
        def edge(e: RelationRow, other: str) -> dict[str, Any]:
            return {"type": e.type, "id": other, "title": titles.get(other), "weight": e.weight}

        return {
            "outgoing": [edge(e, e.target) for e in self.outgoing],
            "incoming": [edge(e, e.source) for e in self.incoming],
        }


def check_type(kind: str) -> str:
    if kind not in RELATION_TYPES:
        raise InvalidInput(
            f"unknown relation type {kind!r}; allowed: {', '.join(RELATION_TYPES)}",
            "relatesTo is the last resort",
        )
    return kind


def _source(brain: Context, note_id: str) -> Note:
    if "#" in note_id:
        raise InvalidInput(f"{note_id} is a chunk; a relation starts from a whole note")
    row = brain.row(note_id)
    if row.status == Status.SUPERSEDED:
        latest = current(brain.caches.catalog, row.id)
        raise InvalidInput(
            f"note {row.id} is superseded (kept as history); the current version is "
            f"{latest.id if latest else 'unknown'}",
            "relations are added and removed on the current version: use its id",
        )
    return brain.get(row.id)


def relate(brain: Context, src: str, kind: str, dst: str, weight: float | None) -> Note:
    """Add (or re-weigh) a typed relation from one note to another."""
    check_type(kind)
    if weight is not None and not 0.0 <= weight <= 1.0:
        raise InvalidInput(f"--weight must be between 0 and 1, not {weight}")
    with brain.lock.hold():
        brain.catch_up()
        # An id a merge of two machines' notes did not keep: the note that took it in.
        src, dst = kept_id(brain, src), kept_id(brain, dst)
        if src.split("#", 1)[0] == dst.split("#", 1)[0]:
            raise InvalidInput(f"a note cannot be related to itself ({src})")
        note = _source(brain, src)
        brain.row(dst)  # not an id / no such note: refused with the reason
        if "#" in dst and brain.caches.catalog.get(dst) is None:
            raise NotFound(f"no chunk with id {dst}", "check the id with `brain recall`")
        edges = [r for r in note.relations if not (r.type == kind and r.target == dst)]
        edges.append(Relation(kind, dst, weight))
        return brain.save(note.with_meta(relations=[r.to_yaml() for r in edges]))


def unrelate(brain: Context, src: str, kind: str, dst: str) -> Note:
    """Remove one typed relation; refused if the note does not have it."""
    check_type(kind)
    with brain.lock.hold():
        brain.catch_up()
        note = _source(brain, src)
        edges = [r for r in note.relations if not (r.type == kind and r.target == dst)]
        if len(edges) == len(note.relations):
            raise NotFound(f"note {note.id} has no relation {kind} → {dst}")
        return brain.save(note.with_meta(relations=[r.to_yaml() for r in edges] or None))


def links(catalog: CatalogReads, note_id: str) -> Links:
    out = catalog.relations_from(note_id)
    into = catalog.relations_into(note_id)
    return Links(tuple(out), tuple(into))


def check(notes: Sequence[Note], catalog: CatalogReads) -> tuple[list[str], list[str]]:
    """What hand edits can leave, read from the files: `supersedes` cycles, targets of
    relations or `supersedes` that name no note."""
    by_id = {n.id: n for n in notes if n.id}
    pointers = {i: n.supersedes for i, n in sorted(by_id.items()) if n.supersedes}
    cycles: list[str] = []
    settled: set[str] = set()
    for start in pointers:
        path: list[str] = []
        node: str | None = start
        while node in pointers and node not in settled and node not in path:
            path.append(node)
            node = pointers[node]
        if node in path:
            loop = path[path.index(node) :]
            files = ", ".join(by_id[n].path for n in loop)
            cycles.append(f"supersedes cycle: {' → '.join([*loop, loop[0]])} ({files})")
        settled.update(path)

    def exists(target: str) -> bool:
        return target in by_id or ("#" in target and catalog.get(target) is not None)

    dangling: list[str] = []
    for note_id, older in pointers.items():
        if not exists(older):
            dangling.append(f"{by_id[note_id].path}: supersedes {older}, which no note has")
    for _id, note in sorted(by_id.items()):
        for rel in note.relations:
            if not exists(rel.target):
                dangling.append(
                    f"{note.path}: relation {rel.type} → {rel.target}, which no note has"
                )
    return cycles, dangling
