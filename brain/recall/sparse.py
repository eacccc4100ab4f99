"""The learned-sparse retriever: SPLADE terms of the query against each memory's, in context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from brain.indexes.fulltext import Filters
from brain.recall.neighbours import DEPTH, Blend, Neighbourhood, blend_scores
from brain.recall.rank import passes

if TYPE_CHECKING:
    from brain.indexes.caches import Caches
    from brain.indexes.sparse import SparseEncoder

# A dot product of expansion weights, so a question about a "puppy" finds the turn about a
# "dog". Neighbours lend like BM25's (chosen on the LoCoMo dev split, docs/benchmarks.md).
SPARSE_BLEND = 0.5


@dataclass
class SparseInContext:
    """Dot products over the sparse index, filtered like the full text, each memory lifted
    by its neighbours' scores."""

    caches: Caches
    encoder: SparseEncoder
    neighbourhood: Neighbourhood | None = None
    weight: float = SPARSE_BLEND
    name: str = "sparse"
    last: Blend | None = None

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        terms = self.encoder.encode([query])[0]
        index = self.caches.sparse
        fetch = max(k * 4, 200)
        found = index.search(terms, fetch)
        rows = self.caches.catalog.briefs([oid for oid, _ in found])
        kept = [(oid, s) for oid, s in found if oid in rows and passes(rows[oid], filters)]
        if len(kept) < k and len(found) == fetch:
            # The filters are narrow: score only the ids they allow.
            kept = index.search(terms, k, allowed=self.caches.catalog.ids_matching(filters))
        kept = kept[:k]
        if self.neighbourhood is None or not self.weight:
            return kept
        around = self.neighbourhood.around([oid for oid, _ in kept[:DEPTH]], filters)
        self.last = blend_scores(kept, around, self.weight)
        return self.last.scores[:k]
