"""Keeping every cache in step with the note files: one place that knows them all."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from brain.indexes.catalog import Catalog, FileRow, ObjectRow
from brain.indexes.fulltext import FullText, TextDoc
from brain.model import Note, normalise_title
from brain.vault.store import content_hash


@dataclass(frozen=True)
class IndexObject:
    """One recallable thing made from a note: its catalog row and its searchable text."""

    row: ObjectRow
    text: str


def objects_of(note: Note, text_hash: str) -> list[IndexObject]:
    """The objects a note contributes to the caches (a plain note: exactly itself)."""
    row = ObjectRow(
        id=note.id,
        note_id=note.id,
        path=note.path,
        partition=note.partition,
        node=note.node,
        title=note.title,
        norm_title=normalise_title(note.title),
        kind=note.kind,
        status=note.status,
        visibility=note.visibility,
        created=note.created,
        touched=note.touched,
        parent=note.parent,
        supersedes=note.supersedes,
        defining=note.defining,
        tags=note.tags,
        source=dict(note.source),
        heading_path=(),
        text_hash=text_hash,
    )
    return [IndexObject(row, note.body)]


def text_hash(text: str) -> str:
    return content_hash(text.encode("utf-8"))


@dataclass
class Caches:
    """The catalog and the full-text index (and later vectors) under `.brain/`."""

    folder: Path
    catalog: Catalog = field(init=False)
    fulltext: FullText = field(init=False)
    # Called with the objects added and the ids removed, so more caches can follow.
    listeners: list[Callable[[Sequence[IndexObject], Sequence[str]], None]] = field(
        default_factory=list
    )

    def __post_init__(self) -> None:
        self.catalog = Catalog(self.folder / "catalog.sqlite")
        self.fulltext = FullText(self.folder / "fulltext")

    def close(self) -> None:
        self.catalog.close()

    def put_note(self, note: Note, data: bytes, stat: os.stat_result) -> list[IndexObject]:
        """Record a note just written or read: fingerprint, objects, text. Lock held."""
        objects = objects_of(note, text_hash(note.body))
        old = self.catalog.object_ids_of(note.id)
        gone = sorted(set(old) - {o.row.id for o in objects})
        with self.catalog.transaction():
            self.catalog.drop_note(note.id)
            self.catalog.put_objects([o.row for o in objects])
            self.catalog.put_file(
                FileRow(
                    note.path, note.id, content_hash(data), stat.st_mtime_ns, stat.st_size, None
                )
            )
        with self.fulltext.writing():
            self.fulltext.remove(gone)
            self.fulltext.upsert([_text_doc(o) for o in objects])
        for listener in self.listeners:
            listener(objects, gone)
        return objects

    def put_broken(self, path: str, data: bytes, stat: os.stat_result, error: str) -> None:
        """A file that does not parse: remember why, and drop what it used to contribute."""
        row = self.catalog.file(path)
        if row is not None and row.note_id:
            self.drop_note(row.note_id)
        self.catalog.put_file(
            FileRow(path, None, content_hash(data), stat.st_mtime_ns, stat.st_size, error)
        )

    def drop_note(self, note_id: str, path: str | None = None) -> list[str]:
        """Remove a note (and its chunks) from every cache. Lock held."""
        with self.catalog.transaction():
            ids = self.catalog.drop_note(note_id)
            if path is not None:
                self.catalog.drop_file(path)
        self.fulltext.remove(ids)
        for listener in self.listeners:
            listener([], ids)
        return ids

    def compact(self) -> None:
        """Leave no byte of a removed note on disk: rewrite the full text, vacuum the catalog.

        Lock held. Caches added later (vectors) compact here too.
        """
        if self.fulltext.has_deletes():
            stored = self.fulltext.everything()
            rows = self.catalog.get_many(sorted(stored))
            self.fulltext.compact(
                [_text_doc(IndexObject(rows[oid], stored[oid]["body"])) for oid in sorted(rows)]
            )
        else:
            self.fulltext.compact()
        self.catalog.compact()

    def clear(self) -> None:
        with self.catalog.transaction():
            self.catalog.clear()
        self.fulltext.clear()


def _text_doc(obj: IndexObject) -> TextDoc:
    row = obj.row
    return TextDoc(
        id=row.id,
        note_id=row.note_id,
        partition=row.partition,
        node=row.node,
        status=row.status,
        visibility=row.visibility,
        kind=row.kind,
        title=row.title,
        body=obj.text,
    )
