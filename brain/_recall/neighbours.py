"""Neighbour context: a memory borrows part of the scores of those written just around it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from brain._indexes.catalog import Brief
from brain._indexes.fulltext import Filters
from brain._indexes.ports import CatalogReads, VectorsPort
from brain._ingest.sections import SECTIONED_KINDS
from brain._recall.rank import Briefs, TextRetriever, VectorRetriever, passes

if TYPE_CHECKING:
    pass

# Neighbours: up to WINDOW memories either side, written one after another (ids are ULIDs, so
# id order is write order) in the same partition and node within GAP_MS of each other; the
# sections of a note (`<note id>#<n>`) neighbour each other in order. A reply such as "Yes,
# last Tuesday" shares no word with the question it answers; the turns around it do. Window
# and blends chosen on the LoCoMo dev split (../shared/FACTS.md, "Neighbour context";
# docs/lab/ranking.md).
WINDOW = 2
GAP_MS = 60_000
VECTOR_BLEND = 1.0  # a vector plus this times its neighbours' mean, renormalised
TEXT_BLEND = 0.5  # a BM25 score plus this times its neighbours' mean score
_SLACK = 2  # extra rows fetched when neighbours must also be among named ids (`Filters.ids`)
# The neighbourhoods of this many of each retriever's best candidates are read: a third of a
# warm recall's work at 100k memories. On the LoCoMo dev split 20 ranks the top 10 as 30 did
# (hit@10 and session hit@5 the same to the question, ndcg@10 -0.000) at ~1-2 ms less a
# recall at 100k; 15 lost two sessions, 10 more (docs/lab/latency.md, "Warm hybrid recall:
# fewer neighbourhoods").
DEPTH = 20

Near = dict[str, tuple[list[str], list[str]]]  # a memory's neighbours before and after it


def order_key(object_id: str) -> tuple[str, int]:
    """Write order: ids are ULIDs (time first); sections `<note id>#<n>` follow their number."""
    note, _, number = object_id.partition("#")
    return note, int(number) if number.isdigit() else -1


class Neighbourhood:
    """The neighbours of memories, looked up in the catalog once per recall and shared by the
    retrievers; a memory the filters hide lends nothing (nor is it lent to)."""

    def __init__(
        self, catalog: CatalogReads, window: int = WINDOW, briefs: Briefs | None = None
    ) -> None:
        self.catalog = catalog
        self.window = window
        self.briefs = briefs or Briefs(catalog)
        self._filters: Filters | None = None
        self._around: dict[str, tuple[str, ...]] = {}
        self._loaded: set[str] = set()

    def around(self, ids: Sequence[str], filters: Filters) -> dict[str, tuple[str, ...]]:
        """Neighbours of each of these ids and of each of their neighbours."""
        if filters != self._filters:
            self._filters, self._around, self._loaded = filters, {}, set()
        found = self.briefs.of([oid for oid in ids if oid not in self._loaded])
        nearby = self._near_each(list(found.values()), filters)
        # In id order, as the catalog gives them back: where two runs overlap, the later one
        # sets the windows they share.
        for oid in sorted(found):
            run = self._run(found[oid], filters, nearby)
            # Every memory within `window` of this one has its whole window inside the run.
            me = run.index(oid)
            for i in range(max(0, me - self.window), min(len(run), me + self.window + 1)):
                near = run[max(0, i - self.window) : i] + run[i + 1 : i + 1 + self.window]
                self._around[run[i]] = tuple(near)
                self._loaded.add(run[i])
        return self._around

    def _asks(self, brief: Brief, filters: Filters) -> tuple[Brief, str, str, int]:
        """What `written_near` is asked of a memory that is neither a section nor a document."""
        millis = _millis(brief.id)
        extra = _SLACK if filters.ids is not None else 0  # the named ones are kept below
        low, high = _ulid_at(millis - GAP_MS), _ulid_at(millis + GAP_MS + 1)
        return brief, low, high, 2 * self.window + extra

    def _near_each(self, briefs: list[Brief], filters: Filters) -> Near:
        """The neighbours read from the catalog for all these memories at once (one statement);
        none where the briefs are held in memory, which answers each for itself."""
        if self.briefs.held is not None:
            return {}
        talk = [b for b in briefs if b.kind not in SECTIONED_KINDS and "#" not in b.id]
        return self.catalog.written_near_each([self._asks(b, filters) for b in talk], filters)

    def _run(self, brief: Brief, filters: Filters, nearby: Near) -> list[str]:
        """The memories up to 2 × window before and after this one, in write order."""
        reach = 2 * self.window
        if brief.kind in SECTIONED_KINDS:  # a document's context is its own sections
            return [brief.id]
        if "#" in brief.id:
            sections = self.catalog.sections(brief.id.partition("#")[0])
            shown = (b.id for b in sections if b.id == brief.id or passes(b, filters))
            run = sorted(shown, key=order_key)
            me = run.index(brief.id)
            return run[max(0, me - reach) : me + reach + 1]
        if brief.id in nearby:
            before, after = nearby[brief.id]
        else:
            held = self.briefs.held
            near = self.catalog.written_near if held is None else held.near
            before, after = near(*self._asks(brief, filters), filters)
        if filters.ids is not None:
            before = [oid for oid in before if oid in filters.ids]
            after = [oid for oid in after if oid in filters.ids]
        return [*reversed(before[:reach]), brief.id, *after[:reach]]


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_FROM_CROCKFORD = str.maketrans(_CROCKFORD, "0123456789abcdefghijklmnopqrstuv")


def _millis(object_id: str) -> int:
    """The millisecond a ULID was made (its first 10 characters)."""
    try:
        return int(object_id[:10].translate(_FROM_CROCKFORD), 32)
    except ValueError:  # not a ULID: no time to go by
        return 0


_PAIRS = [a + b for a in _CROCKFORD for b in _CROCKFORD]  # ten bits, two characters


def _ulid_at(millis: int) -> str:
    """The smallest ULID of this millisecond: a bound for a range of ids."""
    m = max(0, millis)
    head = _PAIRS[(m >> 40) & 1023] + _PAIRS[(m >> 30) & 1023] + _PAIRS[(m >> 20) & 1023]
    return head + _PAIRS[(m >> 10) & 1023] + _PAIRS[m & 1023] + "0" * 16


@dataclass
class Blend:
    """Scores with neighbour context, and the scores before it (for --explain)."""

    scores: list[tuple[str, float]]
    own: dict[str, float] = field(default_factory=dict)


def blend_scores(
    ranked: Sequence[tuple[str, float]], around: dict[str, tuple[str, ...]], weight: float
) -> Blend:
    """Each score plus `weight` times its neighbours' mean score (0 for a neighbour that was
    not found); neighbours of found memories join the list."""
    own = dict(ranked)
    pool = set(own)
    for oid in own:
        pool.update(around.get(oid, ()))
    out = []
    for oid in pool:
        near = around.get(oid, ())
        lent = sum(own.get(n, 0.0) for n in near) / len(near) if near else 0.0
        score = own.get(oid, 0.0) + weight * lent
        if score > 0:
            out.append((oid, score))
    out.sort(key=lambda item: (-item[1], item[0]))
    return Blend(out, own)


def blend_vectors(
    query: Any,
    ranked: Sequence[tuple[str, float]],
    around: dict[str, tuple[str, ...]],
    index: VectorsPort,
    weight: float,
) -> Blend:
    """Cosine of the query to each vector blended with its neighbours' mean vector
    (renormalised), for the found memories and their neighbours: no text is encoded again."""
    import numpy as np

    pool = dict.fromkeys(oid for oid, _ in ranked)
    for oid, _ in ranked:
        pool.update(dict.fromkeys(around.get(oid, ())))
    needed = dict.fromkeys(pool)
    for oid in pool:
        needed.update(dict.fromkeys(around.get(oid, ())))
    stored, matrix = index.stacked(list(needed))
    row = {oid: i for i, oid in enumerate(stored)}
    names = [oid for oid in pool if oid in row]
    if not names:
        return Blend([], {})
    # One row of zeros after the vectors: a memory with fewer neighbours points the rest of
    # its slots there, so each mean is a plain sum over the slots, divided by the count.
    empty = len(stored)
    matrix = np.vstack([matrix, np.zeros((1, matrix.shape[1]), matrix.dtype)])
    near = [[row[n] for n in around.get(oid, ()) if n in row] for oid in names]
    slots = np.full((len(names), max(1, max(map(len, near)))), empty, dtype=np.int64)
    for i, rows in enumerate(near):
        slots[i, : len(rows)] = rows
    counts = np.maximum(1, (slots != empty).sum(axis=1, keepdims=True)).astype(np.float32)
    means = matrix[slots].sum(axis=1) / counts  # 0 for a memory without neighbours
    mine = matrix[[row[oid] for oid in names]]
    mixed = mine + weight * means
    mixed /= np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12)
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    scores = (mixed @ q).tolist()
    out = sorted(zip(names, scores, strict=True), key=lambda item: (-item[1], item[0]))
    return Blend(out, dict(zip(names, (mine @ q).tolist(), strict=True)))


@dataclass
class TextInContext(TextRetriever):
    """BM25, each memory lifted by its neighbours' scores."""

    neighbourhood: Neighbourhood | None = None
    weight: float = TEXT_BLEND
    last: Blend | None = None

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        found = super().search(query, k, filters)
        if self.neighbourhood is None or not self.weight:
            return found
        around = self.neighbourhood.around([oid for oid, _ in found[:DEPTH]], filters)
        self.last = blend_scores(found, around, self.weight)
        return self.last.scores[:k]


@dataclass
class VectorsInContext(VectorRetriever):
    """Cosine similarity to each memory's vector blended with its neighbours' vectors."""

    neighbourhood: Neighbourhood | None = None
    weight: float = VECTOR_BLEND
    last: Blend | None = None

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        vector = self.encoded(query)
        found = self.nearest(vector, k, filters)
        if self.neighbourhood is None or not self.weight:
            return found
        around = self.neighbourhood.around([oid for oid, _ in found[:DEPTH]], filters)
        self.last = blend_vectors(vector, found, around, self.caches.vectors, self.weight)
        return [(oid, s) for oid, s in self.last.scores[:k] if s >= self.floor]
