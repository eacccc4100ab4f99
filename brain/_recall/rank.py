"""Recall: retrievers find candidates, fusion and priors rank them, hits describe them."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from brain._indexes.catalog import Brief, ObjectRow
from brain._indexes.fulltext import Filters
from brain._indexes.ports import CachesPort, CatalogReads, FullTextPort
from brain._indexes.queries import scopes
from brain._ingest.sections import SECTIONED_KINDS
from brain._model import Hit
from brain._recall.ahead import Ahead
from brain._recall.relevance import band
from brain._terms import without_purpose, words

if TYPE_CHECKING:
    from threading import Event

    from brain._indexes.embedder import Embedder
    from brain._indexes.held import Held

# Archived memories stay findable but give way to live ones.
STATUS_PRIOR = {"active": 1.0, "resolved": 0.9, "dormant": 0.85, "archived": 0.6, "superseded": 0.3}
MODES = ("hybrid", "text", "vector", "sparse")
# Fusion: each retriever's scores scaled to 0..1 over its candidates (`scales`), then a weighted
# sum; then memories written together (same minute) lend each other part of their best scores.
# All tuned on the LoCoMo dev split only, against reciprocal-rank fusion (docs/lab/ranking.md).
# The learned-sparse list weighs as much as the other two together: on the dev split 1.0 to 2.0
# scored alike (hit@10 0.79-0.80, ndcg@10 0.56-0.57), so the round figure, not a fitted one.
WEIGHTS = {"text": 0.6, "vector": 0.4, "sparse": 1.0}
CONTEXT_WEIGHT = 0.5
CONTEXT_TOP = 2
CANDIDATES = 50  # from each retriever, at least
# Memories above which full-text hits are filtered on the catalog (TextRetriever): between the
# 100k (the clauses cheaper) and 1M (the catalog cheaper) measured.
FILTER_HITS_ABOVE = 300_000
# Below this cosine a nearest neighbour is noise, not a memory about the query.
MIN_SIMILARITY = {"minilm": 0.2, "hashing": 0.3}


class Briefs:
    """The catalog's briefs for one recall, each read once. The retrievers' filters, neighbour
    context and ranking ask for many of the same memories (at 10k memories ~700 rows a recall,
    half of them asked for before). Made anew for each recall: it never outlives a change.
    In a process that holds the briefs (the daemon: `Catalog.hold_briefs`) they are taken
    from memory, as the catalog is at the first read: after the recall's catch-up and flush,
    so a note a hand edit made private is out of that very recall."""

    def __init__(self, catalog: CatalogReads) -> None:
        self.catalog = catalog
        self._held: Held | None = None
        self._taken = False
        self._read: dict[str, Brief | None] = {}  # None: not in the catalog

    @property
    def held(self) -> Held | None:
        """The held briefs for this recall (None: read from the catalog), taken once."""
        if not self._taken:
            self._held, self._taken = self.catalog.held(), True
        return self._held

    def keep(self, briefs: Sequence[Brief]) -> None:
        """Briefs read whole elsewhere (a range of the catalog), so no stage reads them again."""
        self._read.update((b.id, b) for b in briefs)

    def of(self, ids: Sequence[str]) -> dict[str, Brief]:
        """The brief of each of these ids that the catalog holds."""
        if self.held is not None:
            known = self.held.briefs
            return {oid: brief for oid in ids if (brief := known.get(oid)) is not None}
        todo = [oid for oid in dict.fromkeys(ids) if oid not in self._read]
        if todo:
            found = self.catalog.briefs(todo)
            self._read.update((oid, found.get(oid)) for oid in todo)
        read = self._read
        return {oid: brief for oid in ids if (brief := read[oid]) is not None}


class Retriever(Protocol):
    """Anything that turns a query into scored object ids under the same filters."""

    name: str

    def start(self, query: str, depth: int, current: Event) -> None:
        """Begin what can run ahead of the search of `depth`: encoding the query
        (recall/ahead.py), and what needs the indexes once `current` is set (they are caught
        up with the vault for this recall)."""

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]: ...


def seen_by(partition: str, for_model: bool) -> Filters | None:
    """What a model may see, the memories among which its words weigh (none of a private
    note's, another partition's: docs/mcp.md, "Private stays private"); None for the person."""
    return Filters(partition, exclude_status=(), visibility=("normal",)) if for_model else None


@dataclass
class TextRetriever:
    """BM25 over the tantivy index. With `catalog`, broad filters are applied to the hits.

    A tantivy query's filter clauses cost in proportion to the memories its words match,
    filtering the hits on the catalog a fixed ~2 ms (the rows of 200 hits): at 100k memories
    the clauses cost 0.7 ms, at 1M 8 ms bare against 20 with them (docs/lab/scale.md). Above
    FILTER_HITS_ABOVE memories the best hits of the bare query are filtered on their catalog
    rows, and the query is asked again with its clauses only when too few pass. BM25 scores do
    not depend on the filters, so the hits and their scores are the same (`search_bare`). A
    node scope or a kind is narrow: asked with its clauses at once."""

    fulltext: FullTextPort
    catalog: CatalogReads | None = None
    name: str = "text"
    filter_above: int = FILTER_HITS_ABOVE
    briefs: Briefs | None = None  # this recall's, shared with the other stages
    # A model's recall: words weighed by their rarity among what it may see (FullText.search).
    weighed_in: Filters | None = None

    def start(self, query: str, depth: int, current: Event) -> None:
        """Nothing to begin ahead: the words are the query's own."""

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        if self.weighed_in is not None:
            return self.fulltext.search(query, k, filters, self.weighed_in)
        narrow = filters.node or filters.nodes is not None or filters.kinds is not None
        narrow = narrow or filters.ids is not None
        if self.catalog is None or narrow or len(self.fulltext) < self.filter_above:
            return self.fulltext.search(query, k, filters)
        return filtered(
            self.briefs or Briefs(self.catalog),
            lambda n, _allowed: self.fulltext.search_bare(query, n, filters),
            k,
            filters,
            again=lambda: self.fulltext.search(query, k, filters),
        )


@dataclass
class VectorRetriever:
    """Cosine similarity over the faiss index, filtered like the full text."""

    caches: CachesPort
    embedder: Embedder
    name: str = "vector"
    briefs: Briefs | None = None  # this recall's, shared with the other stages
    encoded: Ahead[Any] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.encoded = Ahead(lambda query: self.embedder.embed([query])[0], self.embedder)

    @property
    def floor(self) -> float:
        return MIN_SIMILARITY.get(self.embedder.name, 0.0)

    def start(self, query: str, depth: int, current: Event) -> None:
        # Only the encoding: the recall's thread waits for the vector, and a search made here
        # too put SPLADE's encoding later and was slower (docs/lab/latency.md, "hits named as
        # they are read").
        self.encoded.start(query)

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        return self.nearest(self.encoded(query), k, filters)

    def nearest(self, vector: Any, k: int, filters: Filters) -> list[tuple[str, float]]:
        index = self.caches.vectors
        rows = self.briefs or Briefs(self.caches.catalog)
        kept = filtered(rows, lambda n, allowed: index.ranked(vector, n, allowed), k, filters)
        return [(oid, s) for oid, s in kept if s >= self.floor]


Scored = list[tuple[str, float]]


class Ranked(Protocol):
    """A search's hits, best first, read a slice at a time (a list, or `vectors.Found`)."""

    def __len__(self) -> int: ...

    def __getitem__(self, part: slice, /) -> Scored: ...


def filtered(
    briefs: Briefs,
    search: Callable[[int, set[str] | None], Ranked],
    k: int,
    filters: Filters,
    again: Callable[[], Scored] | None = None,
) -> Scored:
    """The best k of an index that knows no filters (faiss, the sparse terms) that pass them:
    a deeper search filtered on the catalog's rows, or, when the filters are narrow, a search
    of exactly the ids they allow (or `again`, an index's own filtered search)."""
    if filters.ids is not None:  # a few named objects: exactly those that pass
        named = briefs.of(sorted(filters.ids))
        return search(k, {oid for oid, row in named.items() if passes(row, filters)})[:k]
    fetch = fetched(k)
    found = search(fetch, None)
    kept: Scored = []
    # The catalog's rows are read for the best k and a quarter first: under the usual filters
    # nearly every memory passes, and the rest of the fetch is only read when too few did.
    # Each part is read (its ids named, for faiss) only when it is needed.
    first = k + k // 4
    for part in (slice(first), slice(first, None)):
        hits = found[part]
        rows = briefs.of([oid for oid, _ in hits])
        kept += [(oid, s) for oid, s in hits if oid in rows and passes(rows[oid], filters)]
        if len(kept) >= k:
            break
    if len(kept) < k and len(found) == fetch:
        if again is not None:
            return again()[:k]
        return search(k, briefs.catalog.ids_matching(filters))[:k]
    return kept[:k]


def fetched(k: int) -> int:
    """How deep `filtered` first searches an index for its best k."""
    return max(k * 4, 200)


def passes(row: Brief, filters: Filters) -> bool:
    """The same filters the full-text index applies, on a catalog row."""
    if filters.partition is not None and row.partition != filters.partition:
        return False
    if filters.ids is not None and row.id not in filters.ids:
        return False
    for nodes in scopes(filters):
        if not any(row.node == n or row.node.startswith(n + "/") for n in nodes):
            return False
    if row.status in filters.exclude_status:
        return False
    if filters.visibility is not None and row.visibility not in filters.visibility:
        return False
    if row.kind in filters.exclude_kinds:
        return False
    return filters.kinds is None or row.kind in filters.kinds


def fuse(
    lists: dict[str, list[tuple[str, float]]],
    floors: dict[str, float] | None = None,
    depth: int | None = None,
    scaled: dict[str, Scale] | None = None,
    then: Then | None = None,
) -> list[tuple[str, float]]:
    """A weighted sum of each retriever's scores, scaled by `scales` (or as `scaled` says)."""
    scores: dict[str, float] = {}
    for name, scale in (scaled or scales(lists, floors, depth)).items():
        weight = WEIGHTS.get(name, 1.0)
        there = (then or {}).get(name)
        for oid, score in lists[name]:
            scores[oid] = scores.get(oid, 0.0) + weight * share(scale, oid, score, there)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


# Per retriever, its list of the memories of a time the query names, and that list's cut.
Then = dict[str, tuple[frozenset[str], float]]


def share(
    scale: Scale, oid: str, score: float, there: tuple[frozenset[str], float] | None = None
) -> float:
    """A retriever's score of one memory on its scale, from its list's cut; a memory of its
    list of a named time counts from that list's cut (recall/pipeline.py `_look_then`)."""
    cut, span = scale
    if there is not None and oid in there[0]:
        cut = there[1]
    return (score - cut) / span


Scale = tuple[float, float]  # the score that counts as nothing, the span that counts as 1


def scales(
    lists: dict[str, list[tuple[str, float]]],
    floors: dict[str, float] | None = None,
    depth: int | None = None,
) -> dict[str, Scale]:
    """Per retriever, the score that counts as nothing and the span that counts as 1.

    The span runs from the retriever's floor (a score that means nothing: 0 for BM25 and the
    sparse terms, the similarity floor for vectors) to its best candidate. A list cut at
    `depth` says of a memory it did not return only that it scored at most its last one, so
    that last score, not the floor, counts as nothing. Counted from the floor, a memory just
    below the cut lost the whole of the last one's share to one just above it (on LoCoMo a
    median 0.19 of the sparse weight, whose list is always full, and 0.10 of each other one):
    a step in the fused score that no retriever saw. The span is unchanged, so the weights keep
    their meaning (docs/lab/ranking.md, "A list cut at its depth").
    """
    out: dict[str, Scale] = {}
    for name, ranked in lists.items():
        if not ranked:
            continue
        low = (floors or {}).get(name, 0.0)
        span = (max(s for _, s in ranked) - low) or 1.0
        cut = min(s for _, s in ranked) if depth is not None and len(ranked) >= depth else low
        out[name] = (cut, span)
    return out


def with_context(
    fused: Sequence[tuple[str, float]], rows: dict[str, Brief]
) -> list[tuple[str, float]]:
    """Memories written together (one conversation, one pass: `_sitting`) share context: each
    gains part of the best scores among its companions, so a turn that answers a question
    rises when the conversation around it matches too."""
    sitting = {oid: _sitting(rows[oid]) for oid, _ in fused if oid in rows}
    groups: dict[tuple[str, ...], list[float]] = {}
    for oid, score in fused:
        if oid in sitting:
            groups.setdefault(sitting[oid], []).append(score)
    best = {key: sum(sorted(v, reverse=True)[:CONTEXT_TOP]) for key, v in groups.items()}
    out = [
        (oid, score + CONTEXT_WEIGHT * best[sitting[oid]]) if oid in sitting else (oid, score)
        for oid, score in fused
    ]
    return sorted(out, key=lambda item: (-item[1], item[0]))


def _sitting(row: Brief) -> tuple[str, ...]:
    """What a memory was written with: a document (or a recall kept whole) with its own
    sections; any other memory with those written in the same minute in the same node. Not the
    minute alone: a new vault's notes share the minute of its first memory, and a connector's
    documents the minute of their sync, without being one conversation."""
    note, section, _ = row.id.partition("#")
    if section or row.kind in SECTIONED_KINDS:
        return row.partition, note
    return row.partition, row.node, row.created[:16]


def rank(
    candidates: Sequence[tuple[str, float]], rows: dict[str, Brief]
) -> list[tuple[str, float]]:
    """Apply the status prior to one retriever's scores; unknown ids are dropped."""
    ranked = [
        (oid, score * STATUS_PRIOR.get(rows[oid].status, 1.0))
        for oid, score in candidates
        if oid in rows
    ]
    return sorted(ranked, key=lambda item: (-item[1], item[0]))


def to_hit(
    row: ObjectRow,
    score: float,
    body: str,
    terms: frozenset[str],
    flags: tuple[str, ...] = (),
    relevance: float = 0.0,
) -> Hit:
    shown = snippet(body, terms)
    return Hit(
        id=row.id,
        title=row.title,
        snippet=shown,
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
        relevance=relevance,
        band=band(relevance),
        more=len(words(shown)) < len(words(without_purpose(body))),
    )


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# A quoted line's marks: `>` (nested too) and an Obsidian callout's `[!type]` with its fold sign.
_QUOTED = re.compile(r"^>[\s>]*(?:\[![\w-]+\][+-]?\s*)?")


def snippet(body: str, wanted: frozenset[str], width: int = 200) -> str:
    """The passage of the body that holds the most of the query's words, trimmed to `width`.

    A quoted line (a callout, `> [!warning] …`, where an Obsidian user writes what matters, or
    a quote) is read without its marks, and chosen when it holds more of the query's words than
    the body's own lines: the lines brain quotes at the top of its notes (a purpose, a log's
    or a transcript's header) are not what a snippet should open with.
    """
    pieces: list[tuple[str, bool]] = []  # each sentence, and whether it was quoted
    for line in without_purpose(body).split("\n"):
        if re.match(r"#+\s", line):
            continue
        quoted = _QUOTED.match(line)
        text = line[quoted.end() :] if quoted else line
        pieces += [(p.strip(), bool(quoted)) for p in _SENTENCE.split(text) if p and p.strip()]
    if not pieces:
        return body.strip()[:width]
    best = max(
        range(len(pieces)),
        key=lambda i: (sum(1 for w in words(pieces[i][0]) if w in wanted), not pieces[i][1], -i),
    )
    out = pieces[best][0]
    follow = best + 1
    while len(out) < width // 2 and follow < len(pieces):
        out += " " + pieces[follow][0]
        follow += 1
    return out if len(out) <= width else out[: width - 1].rstrip() + "…"
