"""Full text (a generated tsvector, GIN, ts_rank_cd) and vectors (pgvector, HNSW, cosine)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from brain._hosted.schema import VECTOR_DIMS, HostedError
from brain._hosted.sql import TenantDatabase
from brain._indexes import glued, glyphs
from brain._indexes.fulltext import Filters, TextDoc
from brain._indexes.where import filter_sql
from brain._terms import content_words

_WORD = re.compile(r"\w+")
# A text's English words: `words`, where its Latin is glued to CJK or Thai (glued.py), else
# `tsv`; the match in the form each column's GIN index serves.
_ENGLISH = "coalesce(t.words, t.tsv)"
_ENGLISH_MATCH = "(t.words @@ q OR (t.words IS NULL AND t.tsv @@ q))"

# Up to this many vectors a tenant's search scores every one of them (docs/hosted.md: measured
# at 1M rows, where it is both exact and faster than a filtered HNSW scan).
EXACT_BELOW = 50_000


def or_query(query: str) -> str:
    """The query's content words as a tsquery that any of them matches (as BM25 scores any);
    of a query that holds glyphs, its English words (glyphs.split)."""
    words = [w for w in glyphs.split(query)[0] if _WORD.fullmatch(w)]
    return " | ".join(f"'{w}'" for w in dict.fromkeys(words))


def glyph_query(terms: Sequence[str]) -> str:
    """Glyph terms as a tsquery of the `glyph_terms` column (encoded as it holds them)."""
    return " | ".join(f"'{glyphs.encoded(t)}'" for t in dict.fromkeys(terms))


class PgFullText:
    """Full text over the `texts` rows (ports.FullTextPort): the same search, stored text and
    size as the files index, by PostgreSQL's text search."""

    def __init__(self, db: TenantDatabase) -> None:
        self.db = db
        self.problem: str | None = None  # the table is the schema's: always served

    def refresh(self) -> None:
        """Every statement sees what is committed."""

    def stored(self, object_id: str) -> dict[str, str] | None:
        """Title and body as indexed, for snippets (no note file read)."""
        return self.stored_many([object_id])[object_id]

    def search_bare(self, query: str, k: int, scored_as: Filters) -> list[tuple[str, float]]:
        """The query's hits with no filter applied: PostgreSQL's rank adds nothing for a
        filter, so `scored_as` changes no score (the files index's differs)."""
        return self.search(query, k, Filters(exclude_status=()))

    def create(self) -> None:
        """The table is the schema's."""

    @contextmanager
    def writing(self) -> Iterator[None]:
        yield

    def upsert(self, docs: Sequence[TextDoc]) -> None:
        self.db.executemany(
            "INSERT INTO texts (id, title, body) VALUES (?, ?, ?) "
            "ON CONFLICT (tenant, id) DO UPDATE SET title = excluded.title, body = excluded.body",
            [(d.id, d.title, d.body) for d in docs],
        )

    def remove(self, ids: Sequence[str]) -> None:
        if ids:
            self.db.execute("DELETE FROM texts WHERE id = ANY(?)", (list(ids),))

    def clear(self) -> None:
        self.db.execute("DELETE FROM texts")

    def has_deletes(self) -> bool:
        return False

    def everything(self) -> dict[str, dict[str, str]]:
        rows = self.db.execute("SELECT id, title, body FROM texts")
        return {str(i): {"title": str(t), "body": str(b)} for i, t, b in rows}

    def compact(self, docs: Sequence[TextDoc] | None = None) -> None:
        """Deleted rows are the database's to reclaim (autovacuum)."""

    def __len__(self) -> int:
        return int(self.db.value("SELECT count(*) FROM texts"))

    def search(
        self, query: str, k: int, filters: Filters, weighed_in: Filters | None = None
    ) -> list[tuple[str, float]]:
        """Ranked by cover density over 1 + log(length), as BM25 favours the shorter text; a
        title word (weight A) counts more than a body word (B), in `words` where a text has
        them (glued.py), else in `tsv`. A query's glyphs are matched in the `glyph_terms`
        column and their rank added. `weighed_in` changes nothing: cover density
        reads each text alone, with no count of the others, so no other memory weighs a rank."""
        terms, marks = or_query(query), glyphs.asked(query)
        if not (terms or marks) or k <= 0:
            return []
        where, params = filter_sql(filters, "o.id")
        asked = []  # (the tsquery, its configuration, the column it asks, its match, its name)
        if terms:  # alone: the query as it always was, scored the same, but for glued words
            asked.append((terms, "english", _ENGLISH, _ENGLISH_MATCH, "q"))
        if marks:
            asked.append((glyph_query(marks), "simple", "t.glyph_terms", "t.glyph_terms @@ g", "g"))
        queries = ", ".join(f"to_tsquery('{config}', ?) {name}" for _, config, *_, name in asked)
        score = " + ".join(f"ts_rank_cd({column}, {name}, 1)" for _, _, column, _, name in asked)
        found = " OR ".join(match for *_, match, _ in asked)
        rows = self.db.execute(
            f"SELECT t.id, {score} AS score FROM texts t JOIN objects o ON o.id = t.id, "
            f"{queries} WHERE ({found}) AND ({where}) ORDER BY score DESC, t.id LIMIT ?",
            (*(tsquery for tsquery, *_ in asked), *params, k),
        )
        return [(str(oid), float(score)) for oid, score in rows]

    def share(self, word: str, filters: Filters) -> float:
        """As `FullText.share`: the fraction of the memories these filters let through whose
        body (the B-weighted lexemes) holds this word."""
        words = [w for w in content_words(glued.apart(word)) if _WORD.fullmatch(w)]
        if not words:
            return 0.0
        where, params = filter_sql(filters, "o.id")
        row = self.db.execute(
            f"SELECT count(*), count(*) FILTER (WHERE {_ENGLISH} @@ to_tsquery('english', ?)) "
            f"FROM texts t JOIN objects o ON o.id = t.id WHERE ({where})",
            (" & ".join(f"'{w}':B" for w in words), *params),
        ).fetchone()
        total, found = row if row else (0, 0)  # an aggregate always answers one row
        return int(found) / int(total) if total else 0.0

    def doc_freqs(
        self, stems: Sequence[str], within: Filters | None = None
    ) -> tuple[int, dict[str, int]]:
        """As `FullText.doc_freqs`, each stem matched by PostgreSQL's English stemmer, each
        glyph in the `glyph_terms` column."""
        plain = [s for s in dict.fromkeys(stems) if _WORD.fullmatch(s) or glyphs.is_glyph(s)]
        counts = "".join(f", count(*) FILTER (WHERE {_holds(s)})" for s in plain)
        among, params = "texts", list[Any]()  # within: among what the filters let through
        if within is not None:
            where, params = filter_sql(within, "o.id")
            among = f"texts t JOIN objects o ON o.id = t.id WHERE ({where})"
        row = self.db.execute(
            f"SELECT count(*){counts} FROM {among}", [*(_lexeme(s) for s in plain), *params]
        )
        total, *found = row.fetchone() or (0,)
        freqs = dict(zip(plain, (int(n) for n in found), strict=True))
        return int(total), {s: freqs.get(s, 0) for s in stems}

    def stored_many(self, ids: Sequence[str]) -> dict[str, dict[str, str] | None]:
        out: dict[str, dict[str, str] | None] = dict.fromkeys(ids)
        if out:
            rows = self.db.execute(
                "SELECT id, title, body FROM texts WHERE id = ANY(?)", (list(out),)
            )
            out.update((str(i), {"title": str(t), "body": str(b)}) for i, t, b in rows)
        return out


def _holds(term: str) -> str:
    """The condition of a text holding a term (its lexeme a parameter: `_lexeme`)."""
    if glyphs.is_glyph(term):
        return "glyph_terms @@ to_tsquery('simple', ?)"
    return "coalesce(words, tsv) @@ to_tsquery('english', ?)"


def _lexeme(term: str) -> str:
    return f"'{glyphs.encoded(term) if glyphs.is_glyph(term) else term}'"


def _literal(vector: Any) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectors:
    """Vectors as `vectors` rows (ports.VectorsPort): cosine distance on an HNSW index per
    size. Nothing is built aside: the database keeps its index as rows are written."""

    def __init__(self, db: TenantDatabase, dim: int, embedder: str) -> None:
        if dim not in VECTOR_DIMS:
            raise HostedError(
                f"a hosted brain indexes vectors of {', '.join(map(str, VECTOR_DIMS))} dimensions, "
                f"not {dim}",
                "use the minilm embedder (384)",
            )
        self.db = db
        self.dim = dim
        self.embedder = embedder
        self.cast = f"vector({dim})"

    def upsert(self, ids: Sequence[str], vectors: Any, hashes: Sequence[str] = ()) -> None:
        hashes = list(hashes) or [""] * len(ids)
        self.db.executemany(
            "INSERT INTO vectors (id, hash, dims, embedding) VALUES (?, ?, ?, ?::vector) "
            "ON CONFLICT (tenant, id) DO UPDATE SET hash = excluded.hash, dims = excluded.dims, "
            "embedding = excluded.embedding",
            [
                (oid, h, self.dim, _literal(v))
                for oid, h, v in zip(ids, hashes, vectors, strict=True)
            ],
        )

    def hashes(self, ids: Sequence[str]) -> dict[str, str]:
        """The text hash each of these ids was embedded from (to embed only what changed)."""
        rows = self.db.execute(
            "SELECT id, hash FROM vectors WHERE id = ANY(?) AND dims = ?", (list(ids), self.dim)
        )
        return {str(i): str(h) for i, h in rows}

    def remove(self, ids: Iterable[str]) -> int:
        gone = list(ids)
        if not gone:
            return 0
        return int(self.db.execute("DELETE FROM vectors WHERE id = ANY(?)", (gone,)).rowcount or 0)

    def search(
        self, vector: Any, k: int, allowed: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """The k nearest of this tenant's vectors (of those allowed): exact for a tenant of up
        to EXACT_BELOW vectors or a list of ids, else an HNSW scan of the shared index."""
        if k <= 0 or (allowed is not None and not allowed):
            return []
        keep, params = "", list[Any]([_literal(vector)])
        if allowed is not None:
            keep, params = " AND id = ANY(?)", [*params, sorted(allowed)]
        # The function form of `<=>`, which no index serves: the tenant's own rows (found by
        # the primary key's tenant prefix), each scored, then sorted. An HNSW scan of an index
        # shared by every tenant filters after it walks the graph, and for a tenant that is
        # a small share of the rows it returns fewer than k or not the nearest.
        distance = f"cosine_distance(embedding::{self.cast}, q)"
        if allowed is None and not self._small():
            distance = f"embedding::{self.cast} <=> q"
        rows = self.db.execute(
            f"SELECT id, 1 - ({distance}) AS score FROM vectors, "
            f"(SELECT ?::{self.cast} AS q) query WHERE dims = {self.dim}{keep} "
            f"ORDER BY {distance}, id LIMIT ?",
            (*params, k),
        )
        return [(str(oid), float(score)) for oid, score in rows]

    def ranked(
        self, vector: Any, k: int, allowed: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """`search`: the database names its rows."""
        return self.search(vector, k, allowed)

    def _small(self) -> bool:
        """Whether this tenant has few enough vectors to score them all (counted up to the
        bound only, through the primary key)."""
        counted = self.db.value(
            "SELECT count(*) FROM (SELECT 1 FROM vectors WHERE dims = ? LIMIT ?) few",
            (self.dim, EXACT_BELOW + 1),
        )
        return int(counted) <= EXACT_BELOW

    def stacked(self, ids: Sequence[str]) -> tuple[list[str], Any]:
        import numpy as np

        found: dict[str, Any] = {}
        if ids:
            # pgvector's binary form (a 16-bit length, 16 unused bits, then big-endian float4s)
            # read straight into numpy (the text form: ~50 µs a vector to parse, 1-2 ms a recall).
            rows = self.db.execute(
                "SELECT id, vector_send(embedding) FROM vectors WHERE id = ANY(?) AND dims = ?",
                (list(ids), self.dim),
            )
            found = {str(i): np.frombuffer(raw, ">f4", offset=4) for i, raw in rows}
        names = [oid for oid in ids if oid in found]
        matrix = np.array([found[oid] for oid in names], np.float32).reshape(len(names), self.dim)
        return names, matrix

    def ids(self) -> list[str]:
        rows = self.db.execute("SELECT id FROM vectors WHERE dims = ? ORDER BY id", (self.dim,))
        return [str(r[0]) for r in rows]

    def __len__(self) -> int:
        return int(self.db.value("SELECT count(*) FROM vectors WHERE dims = ?", (self.dim,)))

    def kind(self) -> str:
        return "hnsw"

    def rebuild(self, target: str | None = None) -> bool:
        return False  # the HNSW index is kept in step by PostgreSQL on every write

    def begin_rebuild(self, target: str | None = None) -> None:
        return None  # nothing to rebuild (as above), so sleep builds nothing off the lock

    def finish_rebuild(self, plan: Any, built: Any) -> None:
        """Never called: `begin_rebuild` plans nothing."""

    def vectors(self, ids: Sequence[str]) -> dict[str, Any]:
        """The stored vector of each of these ids the database holds."""
        names, matrix = self.stacked(ids)
        return dict(zip(names, matrix, strict=True))

    def save(self) -> None:
        """Every write is already in the database."""

    def clear(self) -> None:
        self.db.execute("DELETE FROM vectors")

    def close(self) -> None:
        """The connection is the tenant's storage's."""
