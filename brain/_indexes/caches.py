"""Keeping every cache in step with the note files: one place that knows them all."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from brain._indexes import approximate
from brain._indexes.catalog import MARKS, REBUILDING, Catalog
from brain._indexes.fulltext import FullText, TextDoc
from brain._indexes.objects import (
    catalog_note,
    put_broken,
    text_doc,
    text_hash,
    text_json,
    vector_json,
)
from brain._indexes.rows import IndexObject as IndexObject  # named here by callers too
from brain._model import Note, Steps

if TYPE_CHECKING:
    from brain._indexes.embedder import Embedder, EmbeddingCache
    from brain._indexes.postings import SparseIndex
    from brain._indexes.sparse import SparseEncoder
    from brain._indexes.vectors import VectorIndex


PRUNE_VECTORS = "prune vectors"  # info key: the next vector flush drops ids no object has


@dataclass
class Caches:
    """The catalog and the full-text index (and later vectors) under `.brain/`."""

    # Recall filters full-text hits on the catalog's rows (recall/rank.py, TextRetriever).
    filter_text_hits: ClassVar[bool] = True
    # The sparse index may be searched on recall's worker thread (recall/sparse.py): it is
    # in this process, behind its own lock.
    search_ahead: ClassVar[bool] = True
    folder: Path
    embedder: Embedder | None = None  # None: full text only
    # Learned-sparse terms, encoded from the vector queue beside the vectors (none without them).
    sparse_encoder: SparseEncoder | None = None
    steps: Steps | None = None  # told how far a long embedding is (model.Steps)
    catalog: Catalog = field(init=False)
    fulltext: FullText = field(init=False)
    _vectors: VectorIndex | None = field(default=None, init=False)
    _sparse: SparseIndex | None = field(default=None, init=False)
    _embeddings: EmbeddingCache | None = field(default=None, init=False)
    _unbounded: int = field(default=0, init=False)  # writes since the queue's size was read
    # Called with the objects added and the ids removed, so more caches can follow.
    listeners: list[Callable[[Sequence[IndexObject], Sequence[str]], None]] = field(
        default_factory=list
    )

    def __post_init__(self) -> None:
        self.catalog = Catalog(self.folder / "catalog.sqlite")
        self.fulltext = FullText(self.folder / "fulltext")

    def problems(self) -> list[str]:
        """Why these caches may not be served as they are (empty: they may). Reads only.

        The full-text index must hold exactly the catalog's objects once its queue is applied.
        With changes still queued only an empty index beside a full catalog is suspect; the
        caller flushes under the lock and asks again.
        """
        try:
            return self._problems()
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError):
                raise  # locked or full: the file is not at fault
            return [f"the catalog is damaged ({error})"]

    def renew_damaged(self) -> bool:
        """Start the catalog over if a page of it cannot be read; True if it did. Lock held."""
        damaged = any(p.startswith("the catalog is damaged") for p in self.problems())
        if damaged:
            self.catalog.renew()
        return damaged

    def _problems(self) -> list[str]:
        found = []
        if self.catalog.stale:
            found.append("the catalog was built for another schema")
        mark = self.catalog.info(REBUILDING)
        if mark is not None:
            found.append(MARKS.get(mark, "a rebuild was interrupted"))
        if self.fulltext.problem is not None:
            found.append(f"the full-text index {self.fulltext.problem}")
            return found
        in_text = len(self.fulltext)
        if in_text and self.text_pending():
            return found
        objects = self.catalog.count()
        if objects != in_text:
            found.append(f"the full-text index held {in_text} objects, the catalog {objects}")
        return found

    def rebuilt(self) -> None:
        """A rebuild from the files is done (its mark came with `clear()`). Lock held."""
        self.catalog.drop_info(REBUILDING)

    def fulltext_whole(self) -> bool:
        """Whether the full-text index may be searched as it is (after a flush): not empty
        beside a full catalog, its folder still there (it may go away under this process)."""
        try:
            self.fulltext.refresh()
            return len(self.fulltext) > 0 or not self.catalog.count()
        except (AttributeError, OSError, ValueError):
            return False

    def reopen_fulltext(self) -> None:
        """Look at the full-text index afresh (another process may have rebuilt it)."""
        self.fulltext = FullText(self.folder / "fulltext")

    @property
    def vectors_on(self) -> bool:
        return self.embedder is not None

    @property
    def sparse_on(self) -> bool:
        return self.vectors_on and self.sparse_encoder is not None

    @property
    def sparse(self) -> SparseIndex:
        if self._sparse is None:
            from brain._indexes.postings import SparseIndex

            assert self.sparse_encoder is not None, "the sparse index needs an encoder"
            self._sparse = SparseIndex(self.folder / "sparse", self.sparse_encoder.name)
        return self._sparse

    def use_models(self, embedder: Embedder | None, sparse_encoder: SparseEncoder | None) -> None:
        """Other models from now on (brain.yaml changed under a long-lived process): the vector
        and sparse indexes open afresh, and are rebuilt at their next use if made by others."""
        for index in (self._vectors, self._sparse):
            if index is not None:
                index.close()
        self._vectors = self._sparse = None
        self.embedder, self.sparse_encoder = embedder, sparse_encoder

    def close(self) -> None:
        self.catalog.close()
        if self._sparse is not None:
            self._sparse.close()
        if self._vectors is not None:
            self._vectors.close()
        if self._embeddings is not None:
            self._embeddings.close()

    def put_note(self, note: Note, data: bytes, stat: os.stat_result) -> list[IndexObject]:
        """Record a note just written or read: fingerprint, objects, text. Lock held."""
        with self.catalog.transaction():
            objects, gone = catalog_note(self.catalog, note, data, stat)
            self._index(objects, gone)
        self._bound_queue()
        for listener in self.listeners:
            listener(objects, gone)
        return objects

    def _index(self, objects: Sequence[IndexObject], gone: Sequence[str]) -> None:
        """Within the catalog's transaction: the text and vector changes of a note, queued
        for a batched commit to tantivy and faiss."""
        self.catalog.enqueue("text_queue", [(o.row.id, text_json(o)) for o in objects], gone)
        if self.vectors_on:
            self.catalog.enqueue(
                "vector_queue", [(o.row.id, vector_json(o)) for o in objects], gone
            )

    def put_broken(self, path: str, data: bytes, stat: os.stat_result, error: str) -> None:
        put_broken(self, path, data, stat, error)

    def drop_note(self, note_id: str, path: str | None = None) -> list[str]:
        """Remove a note (and its chunks) from every cache. Lock held."""
        with self.catalog.transaction():
            ids = self.catalog.drop_note(note_id)
            if path is not None:
                self.catalog.drop_file(path)
            self.catalog.enqueue("text_queue", [], ids)
            if self.vectors_on:
                self.catalog.enqueue("vector_queue", [], ids)
        if self.sparse_on:  # at once: deleting terms needs no model
            self.sparse.remove(ids)
        self._bound_queue()
        for listener in self.listeners:
            listener([], ids)
        return ids

    def compact(self) -> None:
        """Leave no byte of a removed note on disk: rewrite the full text, vacuum the catalog.

        Lock held.
        """
        self.flush_text()
        if self.vectors_on:
            self.flush_vectors()
            self.embeddings.prune(self.catalog.object_ids())
            self.embeddings.compact()
        if self.sparse_on:
            self.sparse.prune(self.catalog.object_ids())
            self.sparse.compact()
        if self.fulltext.has_deletes():
            stored = self.fulltext.everything()
            rows = self.catalog.get_many(sorted(stored))
            self.fulltext.compact(
                [text_doc(IndexObject(rows[oid], stored[oid]["body"])) for oid in sorted(rows)]
            )
        else:
            self.fulltext.compact()
        self.catalog.compact()

    def clear(self) -> None:
        """Empty the caches for a rebuild from the files. The vector index is kept: it is the
        one copy of the vectors the embedding cache names, so unchanged texts are not embedded
        again; the flush that follows re-adds every object and drops the rest. The sparse
        index is kept for the same reason (its terms are known by text hash; SPLADE at 100k
        is ~20 minutes of a core), unless it may not be served."""
        from brain._indexes.postings import StaleSparse, recreate

        with self.catalog.transaction():
            self.catalog.clear()
            self.catalog.set_info(PRUNE_VECTORS, "1")
        self.fulltext.clear()
        if self.sparse_on:
            assert self.sparse_encoder is not None
            try:
                self.sparse.empty()  # reads its stamp: another encoder or schema is stale
            except StaleSparse:
                self._sparse = recreate(self.sparse, self.sparse_encoder)

    # A tantivy commit costs 25–45 ms (fsyncs), so writes queue their text changes in the
    # catalog, in the same transaction as the catalog change, and one commit applies a batch.
    # Every search flushes the queue first, so a recall always sees every write before it.
    MAX_QUEUE = 1000

    def text_pending(self) -> bool:
        return self.catalog.pending("text_queue") > 0

    def flush_text(self) -> int:
        """Apply queued full-text changes in one commit. Lock held. Returns how many."""
        seq, latest = _collapse(self.catalog.queued("text_queue"))
        if not seq:
            return 0
        with self.fulltext.writing():
            self.fulltext.remove([oid for oid, doc in latest.items() if doc is None])
            self.fulltext.upsert(
                [TextDoc(**json.loads(doc)) for doc in latest.values() if doc is not None]
            )
        self.catalog.dequeue("text_queue", seq)
        return len(latest)

    def _bound_queue(self) -> None:
        # Counting the queue costs a scan of it (8% of a reindex when counted per write): look
        # every MAX_QUEUE / 20 writes, so it stays within 5% of its bound per writer.
        self._unbounded += 1
        if self._unbounded < self.MAX_QUEUE // 20:
            return
        self._unbounded = 0
        if self.catalog.pending("text_queue") >= self.MAX_QUEUE:
            self.flush_text()

    # vectors: embedding is the expensive part, so it waits for the first search that needs it
    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            from brain._indexes.vectors import VectorIndex

            assert self.embedder is not None, "vectors need an embedder"
            self._vectors = VectorIndex(
                self.folder / "vectors", self.embedder.dim, self.embedder.name
            )
        return self._vectors

    @property
    def embeddings(self) -> EmbeddingCache:
        if self._embeddings is None:
            from brain._indexes.embedder import EmbeddingCache

            self._embeddings = EmbeddingCache(self.folder / "embeddings")
        return self._embeddings

    def vectors_pending(self) -> bool:
        return self.vectors_on and self.catalog.pending("vector_queue") > 0

    def flush_vectors(self) -> int:
        """Embed queued objects (reusing cached vectors) and update the faiss index. Lock held.
        Stopped halfway (Ctrl-C, SIGTERM), it saves the vectors made, which only the index holds
        (the embedding cache keeps their marks): the queue stays, the next flush does the rest."""
        from brain._indexes.vectors import StaleIndex

        seq, latest = _collapse(self.catalog.queued("vector_queue"))
        if not seq:
            return 0
        try:
            index = self.vectors
            len(index)
        except StaleIndex:
            # Built for another embedder or size: start over from every object.
            self.vectors.clear()
            self.requeue_vectors()
            seq, latest = _collapse(self.catalog.queued("vector_queue"))
            index = self.vectors
        index.remove([oid for oid, doc in latest.items() if doc is None])
        if self.sparse_on:
            self.sparse.remove([oid for oid, doc in latest.items() if doc is None])
        docs = {oid: json.loads(doc) for oid, doc in latest.items() if doc is not None}
        items = [(oid, data["hash"], data["text"]) for oid, data in docs.items()]
        assert self.embedder is not None or not items
        try:
            for start in range(0, len(items), VECTOR_BATCH):  # never every vector at once
                chunk = items[start : start + VECTOR_BATCH]
                assert self.embedder is not None
                vectors = self.embeddings.embed_cached(self.embedder, chunk, index.vectors)
                index.upsert([oid for oid, _, _ in chunk], vectors)
                if self.sparse_encoder is not None:
                    self.sparse.encode_missing(self.sparse_encoder, chunk)
                if self.steps is not None:
                    self.steps("embedding", start + len(chunk), len(items))
        except BaseException:
            with contextlib.suppress(OSError):
                index.save()
            raise
        if self.catalog.info(PRUNE_VECTORS):  # after a reindex: drop what no object holds
            objects = self.catalog.object_ids()
            index.remove(set(index.ids()) - set(objects))
            if self.sparse_on:
                self.sparse.prune(objects)
            self.catalog.drop_info(PRUNE_VECTORS)
        if len(items) >= approximate.THRESHOLD:  # a reindex or a big import: no sleep needed
            index.rebuild()
        index.save()
        self.catalog.dequeue("vector_queue", seq)
        return len(latest)

    @contextlib.contextmanager
    def embedding_alongside(self) -> Iterator[None]:
        """Inside: writes are encoded in bounded batches, by two stages, while more are written
        (pipeline.py); at the end the vector index is complete and saved. Lock held."""
        from brain._indexes.pipeline import VectorPipeline
        from brain._indexes.vectors import StaleIndex

        if not self.vectors_on:
            yield
            return
        try:
            len(self.vectors)
        except StaleIndex:  # to be rebuilt from every object: the next flush does it
            yield
            return
        assert self.embedder is not None
        self.flush_vectors()  # what was queued before is embedded first: the order holds
        terms = None
        if self.sparse_on:
            assert self.sparse_encoder is not None
            terms = (self.sparse, self.sparse_encoder)
        pipeline = VectorPipeline(
            self.catalog, self.vectors, self.embedder, self.embeddings, sparse=terms
        )
        self.listeners.append(pipeline.on_change)
        try:
            yield
        except BaseException:
            pipeline.stop()
            raise
        finally:
            self.listeners.remove(pipeline.on_change)
        pipeline.finish()

    def vector_problem(self) -> str | None:
        """Why the vector index may not be served (another embedder or size, damaged, or empty
        beside a full catalog with nothing queued); None if it may. Reads only."""
        from brain._indexes.vectors import StaleIndex

        try:
            held = len(self.vectors)
        except StaleIndex as exc:
            return exc.message
        if held or self.vectors_pending():
            return None
        objects = self.catalog.count()
        return f"the vector index is empty while the catalog holds {objects}" if objects else None

    def sparse_problem(self) -> str | None:
        """Why the sparse index may not be served (another encoder or schema, damaged, or
        empty beside a full catalog with nothing queued); None if it may. Reads only."""
        from brain._indexes.postings import StaleSparse

        try:
            held = not self.sparse.empty()
        except StaleSparse as exc:
            return exc.message
        if held or self.vectors_pending():
            return None
        objects = self.catalog.count()
        return f"the sparse index is empty while the catalog holds {objects}" if objects else None

    def rebuild_sparse(self) -> None:
        """Encode every object afresh from the full text's stored text. Lock held."""
        from brain._indexes.postings import recreate

        assert self.sparse_encoder is not None
        self._sparse = recreate(self.sparse, self.sparse_encoder)
        items = []
        for oid in self.catalog.object_ids():
            if (stored := self.fulltext.stored(oid)) is not None:
                text = f"{stored['title']}\n{stored['body']}"
                items.append((oid, text_hash(text), text))
        self._sparse.encode_missing(self.sparse_encoder, items)

    def rebuild_vectors(self) -> None:
        """Start the vector index over from every object (embeddings are reused). Lock held."""
        if self._vectors is not None:  # its files may have been deleted under this process
            self._vectors.close()
            self._vectors = None
        self.vectors.clear()
        self.requeue_vectors()
        self.flush_vectors()

    def requeue_vectors(self) -> None:
        """Queue every object for the vector index (after it was cleared)."""
        ids = self.catalog.object_ids()
        with self.catalog.transaction():
            self.catalog.dequeue("vector_queue", 2**62)
        upserts = []
        for oid in ids:
            if (stored := self.fulltext.stored(oid)) is not None:
                text = f"{stored['title']}\n{stored['body']}"
                upserts.append((oid, json.dumps({"hash": text_hash(text), "text": text})))
        with self.catalog.transaction():
            self.catalog.enqueue("vector_queue", upserts, [])


VECTOR_BATCH = 512  # objects embedded and added per step of flush_vectors


def _collapse(queue: Sequence[tuple[int, str, str | None]]) -> tuple[int, dict[str, str | None]]:
    """The last queued state of each id, and the last sequence number seen."""
    latest: dict[str, str | None] = {}
    for _seq, object_id, doc in queue:
        latest.pop(object_id, None)
        latest[object_id] = doc
    return (queue[-1][0] if queue else 0), latest
