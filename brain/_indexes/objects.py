"""A note as the caches hold it, in either storage: its index objects (itself and its
sections), its catalog rows, and the texts its encoders and full text see."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from typing import TYPE_CHECKING

from brain._indexes.fulltext import TextDoc
from brain._indexes.readable import readable
from brain._indexes.rows import FileRow, IndexObject, ObjectRow
from brain._ingest.sections import SECTIONED_KINDS, section_text, sections_of
from brain._model import Note, content_hash, normalise_title

if TYPE_CHECKING:
    from brain._indexes.ports import CachesPort, CatalogPort


def objects_of(note: Note, text_hash: str) -> list[IndexObject]:
    """The objects a note contributes to the caches: itself, and a document's or recall's sections.

    A sectioned note's own object carries only the text before its sections (a recall's summary),
    so hits go to the passage that answers, `<note id>#<n>`, whose parent is the note. A
    transcript's turn is indexed with its speaker's label.
    """
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
        updated=note.updated,
    )
    if note.kind not in SECTIONED_KINDS:
        return [IndexObject(row, readable(note.body))]
    sections = sections_of(note)
    # The note itself is found by what precedes its sections (a recall's title and summary).
    own = note.body[: sections[0].start].strip() if sections else note.body
    parts = []
    for section in sections:
        text, source = readable(section_text(note, section)), row.source
        if section.block_type == "turn" and section.role:
            # A turn is said by someone, as a remembered turn is ("Caroline: …", "user: …"):
            # its speaker is part of what it says, and its row says who (recall reads it as a
            # remembered turn's title: catalog `said_titles`). Its title stays the conversation's.
            text, source = f"{section.role}: {text}", {**source, "role": section.role}
        part = replace(
            row,
            id=f"{note.id}#{section.number}",
            kind="chunk",
            parent=note.id,
            source=source,
            heading_path=section.heading_path,
            text_hash=content_hash(text.encode("utf-8")),
        )  # one message, broken where it reads
        parts.append(IndexObject(part, text))
    return [IndexObject(row, readable(own)), *parts]


def catalog_note(
    catalog: CatalogPort, note: Note, data: bytes, stat: os.stat_result
) -> tuple[list[IndexObject], list[str]]:
    """A note's rows in either storage's catalog, inside the caller's transaction: its objects,
    relations and file. Returns its objects and the ids of the objects it no longer has."""
    objects = objects_of(note, text_hash(note.body))
    old = catalog.object_ids_of(note.id)
    gone = sorted(set(old) - {o.row.id for o in objects})
    catalog.drop_note(note.id)
    catalog.put_objects([o.row for o in objects])
    catalog.put_relations(note.id, [(r.type, r.target, r.weight) for r in note.relations])
    catalog.put_file(FileRow.of(note.path, note.id, content_hash(data), stat, None))
    return objects, gone


def put_broken(
    caches: CachesPort, path: str, data: bytes, stat: os.stat_result, error: str
) -> None:
    """A file that does not parse, in either storage's caches: remember why, and drop what it
    used to contribute."""
    row = caches.catalog.file(path)
    if row is not None and row.note_id:
        caches.drop_note(row.note_id)
    caches.catalog.put_file(FileRow.of(path, None, content_hash(data), stat, error))


def text_hash(text: str) -> str:
    return content_hash(text.encode("utf-8"))


def embed_text(obj: IndexObject) -> str:
    return embedding_input(obj.row.title, obj.text)


def embedding_input(title: str, text: str) -> str:
    """What the encoders see: a real title gives a short note its topic; one derived from
    the text's first words would only repeat them."""
    stem = title.rstrip("…").strip()
    if not stem or text.lstrip().startswith(stem):
        return text
    return f"{title}\n{text}"


def vector_json(obj: IndexObject) -> str:
    text = embed_text(obj)
    return json.dumps({"hash": text_hash(text), "text": text}, ensure_ascii=False)


def text_json(obj: IndexObject) -> str:
    # vars, not dataclasses.asdict: its fields are strings, and asdict deep-copies each one
    # (5% of a reindex).
    return json.dumps(vars(text_doc(obj)), ensure_ascii=False)


def text_doc(obj: IndexObject) -> TextDoc:
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
