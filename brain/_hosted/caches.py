"""A tenant's caches in PostgreSQL, written in the transaction of the note they come from."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence

from brain._hosted.catalog import PgCatalog
from brain._hosted.search import PgFullText, PgVectors
from brain._hosted.sparse import PgSparse
from brain._hosted.sql import TenantDatabase
from brain._indexes.embedder import Embedder
from brain._indexes.objects import catalog_note, embed_text, put_broken, text_doc, text_hash
from brain._indexes.rows import IndexObject
from brain._indexes.sparse import SparseEncoder
from brain._model import Note, Steps

Listener = Callable[[Sequence[IndexObject], Sequence[str]], None]


class PgCaches:
    """The caches (ports.CachesPort) as one tenant's rows: catalog, full text, vectors and
    sparse terms. Nothing is queued: the text and the vectors of a note are written with it
    (its embedding too, so a memory written through one server is found by vector through
    every other at once)."""

    filter_text_hits = False  # the database filters by the tenant's prefix and indexes
    search_ahead = False  # one connection to the database, used by the recall's own thread

    def __init__(
        self, db: TenantDatabase, embedder: Embedder | None, sparse: SparseEncoder | None = None
    ) -> None:
        self.db = db
        self.steps: Steps | None = None
        self.listeners: list[Listener] = []
        self.catalog = self.pg_catalog = PgCatalog(db)
        self.fulltext = PgFullText(db)
        self.use_models(embedder, sparse)

    def use_models(self, embedder: Embedder | None, sparse_encoder: SparseEncoder | None) -> None:
        """These models from now on: their vectors and terms are rows of their own."""
        self.embedder = embedder
        # Learned-sparse terms, as on files only beside an embedder; encoded with the vector.
        self.sparse_encoder = sparse_encoder if embedder is not None else None
        self.pg_vectors = PgVectors(self.db, embedder.dim, embedder.name) if embedder else None
        encoder = self.sparse_encoder
        self.pg_sparse = PgSparse(self.db, encoder.name) if encoder is not None else None

    @property
    def vectors_on(self) -> bool:
        return self.pg_vectors is not None

    @property
    def sparse_on(self) -> bool:
        return self.pg_sparse is not None

    @property
    def sparse(self) -> PgSparse:
        assert self.pg_sparse is not None, "the sparse index needs an encoder"
        return self.pg_sparse

    def put_note(self, note: Note, data: bytes, stat: os.stat_result) -> list[IndexObject]:
        """Record a note just written: its rows, text, vectors and terms, in one transaction."""
        with self.catalog.transaction():
            objects, gone = catalog_note(self.catalog, note, data, stat)
            self._index(objects, gone)
        for listener in self.listeners:
            listener(objects, gone)
        return objects

    def put_broken(self, path: str, data: bytes, stat: os.stat_result, error: str) -> None:
        put_broken(self, path, data, stat, error)

    def problems(self) -> list[str]:
        return []  # written in the same transactions as the notes: never out of step

    def renew_damaged(self) -> bool:
        return False  # PostgreSQL's tables: never a file a person can damage

    def rebuilt(self) -> None:
        """Nothing marks a rebuild: it is one transaction."""

    def reopen_fulltext(self) -> None:
        """Always current."""

    def fulltext_whole(self) -> bool:
        return True

    def close(self) -> None:
        self.db.close()  # the caches are the last of a tenant's parts to use it

    @property
    def vectors(self) -> PgVectors:
        assert self.pg_vectors is not None, "vectors need an embedder"
        return self.pg_vectors

    def _index(self, objects: Sequence[IndexObject], gone: Sequence[str]) -> None:
        """Within the note's transaction: its text, vectors and terms, written at once."""
        self.fulltext.remove(gone)
        self.fulltext.upsert([text_doc(o) for o in objects])
        if self.pg_vectors is not None:
            self.pg_vectors.remove(gone)
            self._embed(objects)
        if self.pg_sparse is not None:
            self.pg_sparse.remove(gone)
            self._encode_terms(objects)

    def _embed(self, objects: Sequence[IndexObject]) -> None:
        """Embed the objects whose text changed since they were last embedded."""
        assert self.pg_vectors is not None and self.embedder is not None
        texts = {o.row.id: embed_text(o) for o in objects}
        hashes = {oid: text_hash(text) for oid, text in texts.items()}
        known = self.pg_vectors.hashes(list(texts))
        todo = [oid for oid in texts if known.get(oid) != hashes[oid]]
        if todo:
            vectors = self.embedder.embed([texts[oid] for oid in todo])
            self.pg_vectors.upsert(todo, vectors, [hashes[oid] for oid in todo])

    def _encode_terms(self, objects: Sequence[IndexObject]) -> None:
        """Encode the learned-sparse terms of the objects whose text changed."""
        assert self.pg_sparse is not None and self.sparse_encoder is not None
        items = [(o.row.id, text_hash(text), text) for o in objects if (text := embed_text(o))]
        self.pg_sparse.encode_missing(self.sparse_encoder, items)

    def drop_note(self, note_id: str, path: str | None = None) -> list[str]:
        with self.catalog.transaction():
            ids = self.catalog.drop_note(note_id)
            if path is not None:
                self.catalog.drop_file(path)
            self.fulltext.remove(ids)
            if self.pg_vectors is not None:
                self.pg_vectors.remove(ids)
            if self.pg_sparse is not None:
                self.pg_sparse.remove(ids)
        for listener in self.listeners:
            listener([], ids)
        return ids

    def compact(self) -> None:
        """Deleted rows are reclaimed by PostgreSQL's autovacuum."""

    def clear(self) -> None:
        with self.catalog.transaction():
            self.catalog.clear()

    def text_pending(self) -> bool:
        return False

    def flush_text(self) -> int:
        return 0

    def vectors_pending(self) -> bool:
        return False

    def flush_vectors(self) -> int:
        return 0

    @contextlib.contextmanager
    def embedding_alongside(self) -> Iterator[None]:
        yield  # each note is embedded as it is written

    def vector_problem(self) -> str | None:
        return None

    def sparse_problem(self) -> str | None:
        """Written with the notes, so never behind; but terms of another encoder are stale."""
        if self.pg_sparse is not None and self.pg_sparse.foreign():
            return "the sparse terms were made by another encoder"
        return None

    def rebuild_sparse(self) -> None:
        """Encode every object's terms again from its stored text (brain.yaml changed model)."""
        if self.pg_sparse is None:
            return
        rows = self.catalog.get_many(self.catalog.object_ids())
        stored = self.fulltext.everything()
        objects = [IndexObject(rows[oid], stored[oid]["body"]) for oid in rows if oid in stored]
        with self.catalog.transaction():
            self.pg_sparse.clear()
            for start in range(0, len(objects), 256):
                self._encode_terms(objects[start : start + 256])

    def rebuild_vectors(self) -> None:
        """Embed every object again from its stored text (another embedder, say)."""
        if self.pg_vectors is None:
            return
        with self.catalog.transaction():
            self.pg_vectors.clear()
            self.requeue_vectors()

    def requeue_vectors(self) -> None:
        rows = self.catalog.get_many(self.catalog.object_ids())
        stored = self.fulltext.everything()
        objects = [IndexObject(rows[oid], stored[oid]["body"]) for oid in rows if oid in stored]
        for start in range(0, len(objects), 256):
            self._embed(objects[start : start + 256])
