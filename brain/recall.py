"""Recall: retrievers find candidates, fusion and priors rank them, hits describe them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from brain.indexes.catalog import Catalog, ObjectRow
from brain.indexes.fulltext import Filters, FullText
from brain.model import Hit
from brain.words import content_words, words

# Archived memories stay findable but give way to live ones.
STATUS_PRIOR = {"active": 1.0, "resolved": 0.9, "dormant": 0.85, "archived": 0.6, "superseded": 0.3}


class Retriever(Protocol):
    """Anything that turns a query into scored object ids under the same filters."""

    name: str

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]: ...


@dataclass
class TextRetriever:
    """BM25 over the tantivy index."""

    fulltext: FullText
    name: str = "text"

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        return self.fulltext.search(query, k, filters)


def rank(
    candidates: Sequence[tuple[str, float]], rows: dict[str, ObjectRow]
) -> list[tuple[str, float]]:
    """Apply the status prior to one retriever's scores; unknown ids are dropped."""
    ranked = [
        (oid, score * STATUS_PRIOR.get(rows[oid].status, 1.0))
        for oid, score in candidates
        if oid in rows
    ]
    return sorted(ranked, key=lambda item: (-item[1], item[0]))


def to_hit(row: ObjectRow, score: float, body: str, query: str, flags: tuple[str, ...] = ()) -> Hit:
    return Hit(
        id=row.id,
        title=row.title,
        snippet=snippet(body, query),
        created=row.created,
        path=row.path,
        score=score,
        kind=row.kind,
        status=row.status,
        node=row.node,
        source=row.source,
        flags=flags,
        parent=row.parent,
        heading_path=row.heading_path,
        tags=row.tags,
    )


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def snippet(body: str, query: str, width: int = 200) -> str:
    """The passage of the body that holds the most query words, trimmed to `width`."""
    text = re.sub(r"^#+\s.*$", "", body, flags=re.MULTILINE)
    text = re.sub(r"^>.*$", "", text, flags=re.MULTILINE)
    pieces = [p.strip() for p in _SENTENCE.split(text) if p and p.strip()]
    if not pieces:
        return body.strip()[:width]
    wanted = set(content_words(query))
    best = max(
        range(len(pieces)),
        key=lambda i: (sum(1 for w in words(pieces[i]) if w in wanted), -i),
    )
    out = pieces[best]
    follow = best + 1
    while len(out) < width // 2 and follow < len(pieces):
        out += " " + pieces[follow]
        follow += 1
    return out if len(out) <= width else out[: width - 1].rstrip() + "…"


def load_rows(catalog: Catalog, ids: Sequence[str]) -> dict[str, ObjectRow]:
    return catalog.get_many(list(dict.fromkeys(ids)))
