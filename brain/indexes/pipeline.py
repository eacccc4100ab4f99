"""Bulk ingest at the models' pace: queued objects embedded in bounded batches on a worker."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from brain.indexes.catalog import Catalog
    from brain.indexes.embedder import Embedder, EmbeddingCache
    from brain.indexes.postings import SparseIndex
    from brain.indexes.sparse import SparseEncoder
    from brain.indexes.vectors import VectorIndex

# Objects per batch handed to the worker: big enough for the model to run full batches,
# small enough that a batch's texts, tokens and vectors stay a few MB.
BATCH = 512
# Batches waiting for the worker before the writer waits too: memory stays bounded.
DEPTH = 2

Batch = tuple[list[str], list[tuple[str, str, str]]]  # ids to remove; (id, hash, text) to embed


class VectorPipeline:
    """While a bulk block writes files, catalog and full text on the caller's thread, a worker
    embeds the vector queue batch by batch: MiniLM's vectors into the vector index, then, with
    `sparse`, SPLADE's terms into the sparse index.

    One encoder after the other, each spreading its batches over every core (onnxrun.py): the
    two models side by side fought for two cores and ingest ran 10-25% slower on an idle
    machine (docs/benchmarks.md, "Ingest: the encoders in turn").
    The worker owns both indexes; the caller's thread owns the catalog: it takes batches off
    the queue (`feed`, after each write) and dequeues them once the worker is done (`finish`).
    The index is saved once, at the end; a crash before leaves the queue in place, and the
    caches keep what was paid for.
    """

    def __init__(
        self,
        catalog: Catalog,
        index: VectorIndex,
        embedder: Embedder,
        embeddings: EmbeddingCache,
        batch: int = BATCH,
        sparse: tuple[SparseIndex, SparseEncoder] | None = None,
    ) -> None:
        self.catalog, self.index, self.embedder, self.embeddings = (
            catalog, index, embedder, embeddings)  # fmt: skip
        self.batch = batch
        self.sparse = sparse  # terms beside the vectors
        self.sizes: list[int] = []  # the size of each batch handed over, for tests and bench
        self._taken = 0  # the last queue sequence number handed to the worker
        self._new = 0  # queue entries written since then (counted, not queried)
        self._failed: list[BaseException] = []
        self._lane = queue.Queue[Batch | None](maxsize=DEPTH)  # bounded: so is memory
        self._worker = threading.Thread(target=self._run, name="embed", daemon=True)
        self._worker.start()

    def on_change(self, objects: Sequence[Any], gone: Sequence[str]) -> None:
        """A cache listener: count what was queued; hand over a batch once there is one."""
        self._new += len(objects) + len(gone)
        if self._new >= self.batch:
            self.feed()

    def feed(self) -> None:
        """Hand what is queued to the worker, `batch` entries at a time."""
        self._raise()
        rows = list(self.catalog.db.execute(
            "SELECT seq, id, doc FROM vector_queue WHERE seq > ? ORDER BY seq", (self._taken,)
        ))  # fmt: skip
        self._new = 0
        for start in range(0, len(rows), self.batch):
            chunk = rows[start : start + self.batch]
            latest: dict[str, str | None] = {}
            for _seq, object_id, doc in chunk:
                latest.pop(object_id, None)
                latest[object_id] = doc
            removes = [oid for oid, doc in latest.items() if doc is None]
            items = []
            for oid, doc in latest.items():
                if doc is not None:
                    data = json.loads(doc)
                    items.append((oid, data["hash"], data["text"]))
            self.sizes.append(len(chunk))
            self._lane.put((removes, items))  # blocks while DEPTH batches wait: bounded memory
            self._taken = chunk[-1][0]

    def finish(self) -> int:
        """Hand over the rest, wait for the worker, save the index, dequeue; how many entries."""
        try:
            self.feed()
        finally:
            self.stop()
        self._raise()
        self.index.save()
        if self._taken:
            self.catalog.dequeue("vector_queue", self._taken)
        return sum(self.sizes)

    def stop(self) -> None:
        """Leave after an error: the worker ends, the queue stays for the next flush."""
        self._lane.put(None)
        self._worker.join()

    def _run(self) -> None:
        while (batch := self._lane.get()) is not None:
            if self._failed:
                continue  # drain: the caller sees the error at its next feed
            try:
                self._vectors(batch)
                if self.sparse is not None:
                    self._terms(batch)
            except BaseException as exc:  # handed to the caller's thread
                self._failed.append(exc)

    def _vectors(self, batch: Batch) -> None:
        removes, items = batch
        self.index.remove(removes)
        if items:
            vectors = self.embeddings.embed_cached(self.embedder, items, self.index.vectors)
            self.index.upsert([oid for oid, _, _ in items], vectors)

    def _terms(self, batch: Batch) -> None:
        assert self.sparse is not None
        terms, encoder = self.sparse
        removes, items = batch
        terms.remove(removes)
        terms.encode_missing(encoder, items)

    def _raise(self) -> None:
        if self._failed:
            raise self._failed[0]
