"""A tenant's learned-sparse terms: pgvector sparsevec rows, scored by inner product."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from brain._hosted.sql import TenantDatabase
from brain._indexes.postings import encode_missing
from brain._indexes.sparse import VOCABULARY

if TYPE_CHECKING:
    from brain._indexes.sparse import SparseEncoder, Terms


def sparsevec(terms: Terms) -> str:
    """pgvector's text form: `{index:value,…}/dimensions`, indices from 1."""
    ids, weights = terms
    pairs = ",".join(f"{int(i) + 1}:{float(w)!r}" for i, w in zip(ids, weights, strict=True))
    return "{" + pairs + "}/" + str(VOCABULARY)


class PgSparse:
    """`SparseIndex` over the `sparse_terms` rows, written in the note's transaction; a
    search is one statement, so another server's write counts at once."""

    def __init__(self, db: TenantDatabase, encoder: str) -> None:
        self.db = db
        self.encoder = encoder

    def encode_missing(
        self, encoder: SparseEncoder, items: Sequence[tuple[str, str, str]], batch: int = 256
    ) -> int:
        """As the files index does (postings.encode_missing): nothing unchanged re-encoded."""
        return encode_missing(self, encoder, items, batch)

    def hashes(self, ids: Sequence[str]) -> dict[str, str]:
        rows = self.db.execute(
            "SELECT id, hash FROM sparse_terms WHERE id = ANY(?) AND encoder = ?",
            (list(ids), self.encoder),
        )
        return {str(oid): str(h) for oid, h in rows}

    def upsert(self, rows: Sequence[tuple[str, str, Terms]]) -> None:
        self.db.executemany(
            "INSERT INTO sparse_terms (id, hash, encoder, terms) VALUES (?, ?, ?, ?::sparsevec) "
            "ON CONFLICT (tenant, id) DO UPDATE SET hash = excluded.hash, "
            "encoder = excluded.encoder, terms = excluded.terms",
            [(oid, h, self.encoder, sparsevec(terms)) for oid, h, terms in rows],
        )

    def remove(self, ids: Iterable[str]) -> int:
        chunk = list(dict.fromkeys(ids))
        if not chunk:
            return 0
        rows = self.db.execute("DELETE FROM sparse_terms WHERE id = ANY(?) RETURNING id", (chunk,))
        return len(rows.fetchall())

    def search(
        self, query: Terms, k: int, allowed: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k objects with the largest dot product with the query, best first (> 0 only)."""
        if k <= 0 or not len(query[0]):
            return []
        only = "AND id = ANY(?)" if allowed is not None else ""
        extra = (sorted(allowed),) if allowed is not None else ()
        rows = self.db.execute(
            "SELECT id, -(terms <#> ?::sparsevec) AS score FROM sparse_terms "
            f"WHERE encoder = ? {only} ORDER BY score DESC, id LIMIT ?",
            (sparsevec(query), self.encoder, *extra, k),
        )
        return [(str(oid), float(score)) for oid, score in rows if float(score) > 0]

    def ids(self) -> list[str]:
        rows = self.db.execute("SELECT id FROM sparse_terms ORDER BY id")
        return [str(oid) for (oid,) in rows]

    def empty(self) -> bool:
        return self.db.value("SELECT 1 FROM sparse_terms LIMIT 1") is None

    def __len__(self) -> int:
        return int(self.db.value("SELECT count(*) FROM sparse_terms"))

    def foreign(self) -> bool:
        """Whether any row was made by another encoder (a brain.yaml that changed model)."""
        found = self.db.value(
            "SELECT 1 FROM sparse_terms WHERE encoder <> ? LIMIT 1", (self.encoder,)
        )
        return found is not None

    def clear(self) -> None:
        self.db.execute("DELETE FROM sparse_terms")

    def compact(self) -> None:
        """Deleted rows are reclaimed by PostgreSQL's autovacuum."""

    def close(self) -> None:
        """The connection is the tenant's storage's."""
