"""Neighbour context: a memory borrows part of the scores of those written just around it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brain.indexes.catalog import Brief, Catalog
from brain.indexes.fulltext import Filters
from brain.recall import TextRetriever, VectorRetriever, passes

if TYPE_CHECKING:
    from brain.indexes.embedder import Vectors
    from brain.indexes.vectors import VectorIndex

# Neighbours: up to WINDOW memories either side in the same partition, node and minute (one
# conversation, one document), in the order they were written. A reply such as "Yes, last
# Tuesday" shares no word with the question it answers; its neighbours do. Chosen on the
# LoCoMo dev split (../shared/FACTS.md, "Neighbour context"; docs/benchmarks.md).
WINDOW = 2
VECTOR_BLEND = 1.0  # a vector plus this times its neighbours' mean, renormalised
TEXT_BLEND = 0.5  # a BM25 score plus this times its neighbours' mean score


def order_key(object_id: str) -> tuple[str, int]:
    """Write order: ids are ULIDs (time first); chunks `<note id>#<n>` follow their number."""
    note, _, number = object_id.partition("#")
    return note, int(number) if number.isdigit() else -1


def neighbourhoods(
    catalog: Catalog, rows: dict[str, Brief], filters: Filters, window: int = WINDOW
) -> dict[str, tuple[str, ...]]:
    """For each of these objects and each object around them: its neighbours that the filters
    let through (a filtered-out memory must not lend its words to a visible one)."""
    moments = {_moment(b) for b in rows.values()}
    if not moments:
        return {}
    members: dict[tuple[str, str, str], list[str]] = {}
    for brief in catalog.moments(sorted({m[0] for m in moments}), sorted({m[2] for m in moments})):
        key = _moment(brief)
        if key in moments and passes(brief, filters):
            members.setdefault(key, []).append(brief.id)
    around: dict[str, tuple[str, ...]] = {}
    for ids in members.values():
        ids.sort(key=order_key)
        for i, oid in enumerate(ids):
            around[oid] = tuple(ids[max(0, i - window) : i] + ids[i + 1 : i + 1 + window])
    return around


def _moment(brief: Brief) -> tuple[str, str, str]:
    return brief.partition, brief.node, brief.created[:16]


@dataclass
class Blend:
    """Scores with neighbour context, and what the context changed (for --explain)."""

    scores: list[tuple[str, float]]
    own: dict[str, float] = field(default_factory=dict)  # the score before context


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
    query: Vectors,
    ranked: Sequence[tuple[str, float]],
    around: dict[str, tuple[str, ...]],
    index: VectorIndex,
    weight: float,
) -> Blend:
    """Cosine of the query to each vector blended with its neighbours' mean vector (renormalised),
    for the found memories and their neighbours: context without encoding anything again."""
    import numpy as np

    own = dict(ranked)
    pool = set(own)
    for oid in own:
        pool.update(around.get(oid, ()))
    needed = set(pool)
    for oid in pool:
        needed.update(around.get(oid, ()))
    vectors = index.vectors(sorted(needed))
    out = []
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    for oid in pool:
        mine = vectors.get(oid)
        if mine is None:
            continue
        near = [vectors[n] for n in around.get(oid, ()) if n in vectors]
        mixed = mine + weight * np.mean(near, axis=0) if near else mine
        norm = float(np.linalg.norm(mixed)) or 1.0
        out.append((oid, float(mixed @ q) / norm))
    out.sort(key=lambda item: (-item[1], item[0]))
    return Blend(out, {oid: float(vectors[oid] @ q) for oid in pool if oid in vectors})


@dataclass
class TextInContext(TextRetriever):
    """BM25, each memory lifted by its neighbours' scores."""

    catalog: Catalog | None = None
    weight: float = TEXT_BLEND
    last: Blend | None = None

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        found = super().search(query, k, filters)
        if self.catalog is None or not self.weight:
            return found
        around = neighbourhoods(self.catalog, self.catalog.briefs([o for o, _ in found]), filters)
        self.last = blend_scores(found, around, self.weight)
        return self.last.scores[:k]


@dataclass
class VectorsInContext(VectorRetriever):
    """Cosine similarity to each memory's vector blended with its neighbours' vectors."""

    weight: float = VECTOR_BLEND
    last: Blend | None = None

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        vector = self.embedder.embed([query])[0]
        found = self.nearest(vector, k, filters)
        if not self.weight:
            return found
        catalog = self.caches.catalog
        around = neighbourhoods(catalog, catalog.briefs([o for o, _ in found]), filters)
        self.last = blend_vectors(vector, found, around, self.caches.vectors, self.weight)
        return [(oid, s) for oid, s in self.last.scores[:k] if s >= self.floor]
