"""Catching the caches up with the files: hand edits, new files, deletions, breakage."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from brain.errors import BrokenNote
from brain.model import LOCAL_ONLY, Note, content_hash, iso, new_id
from brain.vault.paths import COLD_DIR
from brain.vault.store import RESERVED_TOP

if TYPE_CHECKING:
    from brain.clock import Clock
    from brain.indexes.caches import Caches
    from brain.indexes.catalog import Catalog
    from brain.indexes.rows import FileRow
    from brain.vault.store import NoteStore


@dataclass(frozen=True)
class Comparison:
    """The one walk of the files against the catalog (catch-up, doctor and diagnostics)."""

    on_disk: tuple[tuple[str, os.stat_result, FileRow | None], ...]  # each file, its row if known
    missing: tuple[str, ...]  # files the catalog knows that are gone from disk

    @property
    def out_of_step(self) -> list[str]:
        """Files the catalog does not know, or knew at another size or time."""
        return [
            rel
            for rel, st, row in self.on_disk
            if row is None or row.mtime_ns != st.st_mtime_ns or row.size != st.st_size
        ]


def compare(store: NoteStore, catalog: Catalog, prefix: str = "") -> Comparison:
    """Walk the files (those under `prefix`) beside what the catalog knows of them: no reads."""
    known = {p: row for p, row in catalog.files().items() if p.startswith(prefix)}
    on_disk = [(rel, st, known.get(rel)) for rel, st in store.walk() if rel.startswith(prefix)]
    seen = {rel for rel, _st, _row in on_disk}
    return Comparison(tuple(on_disk), tuple(p for p in known if p not in seen))


def paths_out_of_step(
    store: NoteStore, catalog: Catalog, rels: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Of these vault-relative paths (the watcher's), the note files the catalog does not
    know or knew at another size or time, and the known ones gone: one stat each, no reads,
    so the cost follows the change, not the vault's size."""
    todo, gone = [], []
    for rel in sorted(set(rels)):
        if not is_note_path(rel):
            continue
        row = catalog.file(rel)
        st = store.stat_note(rel)  # gone, or a link (never followed): None
        if st is None:
            if row is not None:
                gone.append(rel)
        elif row is None or (row.mtime_ns, row.size) != (st.st_mtime_ns, st.st_size):
            todo.append(rel)
    return todo, gone


def is_note_path(rel: str) -> bool:
    """Whether a vault-relative path is where `NoteStore.walk()` finds notes."""
    parts = rel.split("/")
    if len(parts) < 2 or any(not p or p.startswith(".") or p == ".." for p in parts):
        return False
    if parts[0] == COLD_DIR:
        return rel.endswith(".md.zst")
    if parts[0] == LOCAL_ONLY:
        parts = parts[1:]
    return len(parts) >= 2 and parts[0] not in RESERVED_TOP and rel.endswith(".md")


@dataclass(frozen=True)
class CatchUp:
    """What a catch-up with the files found: hand edits, new files, deletions, breakage."""

    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()


def apply_files(
    store: NoteStore, caches: Caches, clock: Clock, todo: Sequence[str], gone: Sequence[str]
) -> CatchUp:
    """Drop what vanished, index what changed; lock held."""
    changed, broken, removed = [], [], []
    for rel in gone:
        row = caches.catalog.file(rel)
        if row is None or store.exists(rel):
            continue
        if row.note_id:
            caches.drop_note(row.note_id, rel)
        else:
            caches.catalog.drop_file(rel)
        removed.append(rel)
    for rel in todo:
        outcome = index_file(store, caches, clock, rel)
        if outcome == "broken":
            broken.append(rel)
        elif outcome == "changed":
            changed.append(rel)
    return CatchUp(tuple(changed), tuple(removed), tuple(broken))


def index_file(
    store: NoteStore,
    caches: Caches,
    clock: Clock,
    rel: str,
    owners: Mapping[str, str] | None = None,
) -> str:
    """Bring one file's cache entries in step: `changed`, `same`, `broken` or `gone`.

    `owners`: while reindexing, which file held each id before the caches were cleared
    (see keeps_id); None otherwise.
    """
    try:
        data = store.read_bytes(rel)
        st = store.stat(rel)
    except FileNotFoundError:
        return "gone"
    known = caches.catalog.file(rel)
    if known is not None and known.hash == content_hash(data) and known.error is None:
        # Laid out by hand (fmt: skip below): arguments grouped by meaning.
        caches.catalog.put_file(known.__class__(
            rel, known.note_id, known.hash, st.st_mtime_ns, st.st_size, None))  # fmt: skip
        return "same"
    try:
        note = store.parse(rel, data)
    except BrokenNote as exc:
        caches.put_broken(rel, data, st, exc.message)
        return "broken"
    if not note.id:
        note = adopt(note, clock.now())
        data = store.write(note)
        st = store.stat(rel)
    other = caches.catalog.get(note.id)
    if other is not None and other.path != rel and _holds(store, other.path, note.id):
        # Two files, one id: a copy. The file that held the id first keeps it; the copy gets
        # its own, written into its front-matter, as a dropped-in file does (`copy_of` says why).
        if not keeps_id(owners, note.id, (note.created, rel), (other.created, other.path)):
            note = renew(note, note.id, clock.now())
            data = store.write(note)
            st = store.stat(rel)
        else:
            copy = store.read(other.path)
            caches.drop_note(other.id, other.path)
            caches.put_note(note, data, st)
            copy = renew(copy, note.id, clock.now())
            copied = store.write(copy)
            caches.put_note(copy, copied, store.stat(copy.path))
            return "changed"
    caches.put_note(note, data, st)
    return "changed"


def _holds(store: NoteStore, rel: str, note_id: str) -> bool:
    """Whether the file at rel (as it is now, not as cached) holds this id."""
    try:
        return store.read(rel).id == note_id
    except (OSError, BrokenNote):
        return False


def keeps_id(
    owners: Mapping[str, str] | None, note_id: str, mine: tuple[str, str], theirs: tuple[str, str]
) -> bool:
    """Whether the file `mine` (created, path) keeps an id that `theirs` holds too.

    Outside a rebuild, the catalog's holder keeps it (`owners` is None). In a rebuild, the
    holder the catalog knew before it was cleared; failing that, the earlier `created`, then
    the path.
    """
    if owners is None:
        return False
    before = owners.get(note_id)
    if before in (mine[1], theirs[1]):
        return before == mine[1]
    return mine < theirs


def renew(note: Note, original: str, now: datetime) -> Note:
    """A copy of a note, given an id of its own; `copy_of` names the note it was copied from."""
    return note.with_meta(id=new_id(now), copy_of=original)


def adopt(note: Note, now: datetime) -> Note:
    """A Markdown file written by hand gets an id; the fields the person wrote are kept
    (first, in their order) and only the missing ones are added."""
    stamp = iso(now)
    # Laid out by hand (fmt: skip below): one record's fields, grouped.
    defaults = {"title": Path(note.path).stem, "kind": "titled", "status": "active",
                "created": stamp, "touched": stamp, "source": {"via": "hand"}}  # fmt: skip
    meta = {"id": new_id(now), **dict(note.meta)}
    for key, value in defaults.items():
        meta.setdefault(key, value)
    return Note(meta=meta, body=note.body, path=note.path)
