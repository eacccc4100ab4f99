"""The learned-sparse retriever: SPLADE terms of the query against each memory's, in context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brain._indexes.fulltext import Filters
from brain._indexes.ports import CachesPort
from brain._recall.ahead import Ahead
from brain._recall.neighbours import DEPTH, Blend, Neighbourhood, blend_scores
from brain._recall.rank import Briefs, Scored, fetched, filtered

if TYPE_CHECKING:
    from threading import Event

    from brain._indexes.sparse import SparseEncoder, Terms

# A dot product of expansion weights, so a question to "buy" finds the turn that "purchased".
# Neighbours lend nothing here: on the LoCoMo dev split a blend of 0.5 or 1 (as BM25's) did
# worse than none beside the other two lists, which already lend (docs/lab/ranking.md).
SPARSE_BLEND = 0.0


@dataclass
class SparseInContext:
    """Dot products over the sparse index, filtered like the full text, each memory lifted
    by its neighbours' scores."""

    caches: CachesPort
    encoder: SparseEncoder
    neighbourhood: Neighbourhood | None = None
    weight: float = SPARSE_BLEND
    name: str = "sparse"
    last: Blend | None = None
    briefs: Briefs | None = None  # this recall's, shared with the other stages
    encoded: Ahead[Terms] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.encoded = Ahead(lambda query: self.encoder.encode([query])[0], self.encoder)

    def start(self, query: str, depth: int, current: Event) -> None:
        # The worker, once it has the terms, makes the first search `filtered` will ask for
        # (the best `fetched(depth)` under no filter) while the recall's own thread searches
        # the vectors: the terms are ready ~3 ms after MiniLM's vector. Not if the indexes
        # were not caught up by then (never seen: the catch-up comes first, at once).
        if not self.caches.search_ahead:
            self.encoded.start(query)
            return
        index, fetch = self.caches.sparse, fetched(depth)

        def first(terms: Terms) -> tuple[int, Scored] | None:
            return (fetch, index.search(terms, fetch)) if current.is_set() else None

        self.encoded.start(query, first)

    def search(self, query: str, k: int, filters: Filters) -> list[tuple[str, float]]:
        terms = self.encoded(query)
        ahead: tuple[int, Scored] | None = self.encoded.followed()
        index = self.caches.sparse
        rows = self.briefs or Briefs(self.caches.catalog)

        def search(n: int, allowed: set[str] | None) -> Scored:
            if ahead is not None and allowed is None and n == ahead[0]:
                return ahead[1]
            return index.search(terms, n, allowed)

        kept = filtered(rows, search, k, filters)
        if self.neighbourhood is None or not self.weight:
            return kept
        around = self.neighbourhood.around([oid for oid, _ in kept[:DEPTH]], filters)
        self.last = blend_scores(kept, around, self.weight)
        return self.last.scores[:k]
