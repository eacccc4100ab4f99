"""Addressable sections of a note: chunk records in front-matter, and the text spans they name.

A `document` or `recall` note keeps its whole text in the body and lists its sections under
`sections:` in front-matter, each with a character span into the body. The caches rebuild every
section object (`<note id>#<n>`) from the file alone, so `brain reindex` gives the same sections.
When the body no longer matches (a hand edit), the body is re-chunked instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from brain._ingest.chunking import Chunk, chunk_markdown, chunk_text
from brain._model import Note, content_hash

SECTIONED_KINDS = ("document", "recall")


@dataclass(frozen=True)
class Section:
    """One addressable part of a note: a document chunk or a transcript turn."""

    number: int
    start: int  # character offsets into the body, end exclusive
    end: int
    block_type: str  # paragraph | heading | list | table | code | turn
    heading_path: tuple[str, ...] = ()
    table_data: tuple[tuple[str, ...], ...] | None = None
    role: str | None = None  # turns only

    def to_yaml(self) -> dict[str, Any]:
        data: dict[str, Any] = {"n": self.number, "at": [self.start, self.end]}
        data["type"] = self.block_type
        if self.heading_path:
            data["heading"] = list(self.heading_path)
        if self.table_data is not None:
            data["table"] = [list(row) for row in self.table_data]
        if self.role:
            data["role"] = self.role
        return data


def body_hash(body: str) -> str:
    return content_hash(body.encode("utf-8"))


def sections_meta(body: str, sections: Sequence[Section]) -> dict[str, Any]:
    """The front-matter fields that record a note's sections."""
    return {"body_hash": body_hash(body), "sections": [s.to_yaml() for s in sections]}


def spans_of_chunks(body: str, chunks: Sequence[Chunk]) -> list[Section]:
    """Turn chunker output (line numbers) into sections with character spans into body."""
    starts = [0]
    for line in body.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    out = []
    for chunk in chunks:
        first = starts[chunk.start_line - 1]
        last = min(starts[chunk.end_line] - 1, len(body))
        # A piece of a long paragraph is a verbatim slice: find it exactly within its lines.
        found = body.find(chunk.text, first, last + 1)
        begin, end = (found, found + len(chunk.text)) if found >= 0 else (first, last)
        out.append(
            Section(chunk.index, begin, end, chunk.block_type, chunk.heading_path, chunk.table_data)
        )
    return out


def chunk_body(body: str, markdown: bool = True) -> list[Section]:
    chunks = chunk_markdown(body) if markdown else chunk_text(body)
    return spans_of_chunks(body, chunks)


def sections_of(note: Note) -> list[Section]:
    """The sections recorded in a note, or the body re-chunked when they no longer fit it."""
    if note.kind not in SECTIONED_KINDS:
        return []
    recorded = note.meta.get("sections")
    if note.meta.get("body_hash") == body_hash(note.body) and isinstance(recorded, list):
        try:
            return [_section(item, len(note.body)) for item in recorded]
        except (KeyError, TypeError, ValueError):
            pass  # a hand-mangled record: fall back to the body itself
    return chunk_body(note.body, markdown=not str(note.source.get("path", "")).endswith(".txt"))


def section_text(note: Note, section: Section) -> str:
    return note.body[section.start : section.end].strip()


def _section(item: Any, size: int) -> Section:
    if not isinstance(item, Mapping):
        raise TypeError("a section record must be a mapping")
    start, end = (int(v) for v in item["at"])
    if not 0 <= start <= end <= size:
        raise ValueError("span outside the body")
    table = item.get("table")
    heading = item.get("heading") or []
    return Section(
        number=int(item["n"]),
        start=start,
        end=end,
        block_type=str(item.get("type", "paragraph")),
        heading_path=tuple(str(h) for h in heading),
        table_data=tuple(tuple(str(c) for c in row) for row in table) if table else None,
        role=str(item["role"]) if item.get("role") else None,
    )
