"""Bulk ingest at the models' pace: queued objects encoded in bounded batches beside the writes."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from brain._indexes.catalog import Catalog
    from brain._indexes.embedder import Embedder, EmbeddingCache
    from brain._indexes.postings import SparseIndex
    from brain._indexes.sparse import SparseEncoder
    from brain._indexes.vectors import VectorIndex

# Objects per batch handed to the stages: big enough for the model to run full batches,
# small enough that a batch's texts, tokens and vectors stay a few MB.
BATCH = 512
# The first batch is handed over at this many: the models start once the writer has written
# a few, not a whole batch (at ~1 ms a memory the cores idled 0.6 s of a 3k ingest's 27).
FIRST = 64
# Batches waiting for each stage before the one handing them over waits too: memory stays
# bounded (at most 2 * DEPTH + 2 batches between the writer and the last stage).
DEPTH = 2

Batch = tuple[list[str], list[tuple[str, str, str]]]  # ids to remove; (id, hash, text) to embed


class VectorPipeline:
    """While a bulk block writes files, catalog and full text on the caller's thread, the
    vector queue is encoded batch by batch in two stages, each on its own thread: "embed" puts
    MiniLM's vectors into the vector index, then hands the batch to "encode", which (with
    `sparse`) puts SPLADE's terms into the sparse index.

    Both stages run their models on the one pool of a thread per core (onnxrun.py), so between
    them no more batches run than there are cores. What two stages gain over one worker doing
    both in turn: while one stage tokenizes or stores, the other's batches keep the cores busy
    (docs/lab/ingest.md, "Ingest: two stages on one pool"). Each model is given a whole batch
    in one call, as the benchmark's encoders alone are timed.
    Each stage owns its index; the caller's thread owns the catalog: it takes batches off
    the queue (`feed`, after each write) and dequeues them once both stages are done
    (`finish`). The vector index is saved once, at the end; a crash before leaves the queue in
    place, and the caches keep what was paid for.
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
            catalog,
            index,
            embedder,
            embeddings,
        )
        self.batch = batch
        self.sparse = sparse  # terms beside the vectors
        self.sizes: list[int] = []  # the size of each batch handed over, for tests and bench
        self._taken = 0  # the last queue sequence number handed over
        self._new = 0  # queue entries written since then (counted, not queried)
        self._failed: list[BaseException] = []
        # The writer → "embed" → "encode"; bounded lanes: so is memory.
        self._lane = queue.Queue[Batch | None](maxsize=DEPTH)
        self._to_terms = queue.Queue[Batch | None](maxsize=DEPTH)
        self._stages = [threading.Thread(target=self._embed, name="embed", daemon=True)]
        if sparse is not None:
            self._stages.append(threading.Thread(target=self._encode, name="encode", daemon=True))
        for stage in self._stages:
            stage.start()

    def on_change(self, objects: Sequence[Any], gone: Sequence[str]) -> None:
        """A cache listener: count what was queued; hand over a batch once there is one."""
        self._new += len(objects) + len(gone)
        if self._new >= (self.batch if self.sizes else min(FIRST, self.batch)):
            self.feed()

    def feed(self) -> None:
        """Hand what is queued to the first stage, `batch` entries at a time."""
        self._raise()
        rows = list(
            self.catalog.db.execute(
                "SELECT seq, id, doc FROM vector_queue WHERE seq > ? ORDER BY seq", (self._taken,)
            )
        )
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
        """Hand over the rest, wait for both stages, save the index, dequeue; how many entries."""
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
        """Leave after an error: the stages end, the queue stays for the next flush."""
        self._lane.put(None)
        for stage in self._stages:
            stage.join()

    def _embed(self) -> None:
        """The first stage: each batch's vectors, then the batch on to the second."""
        try:
            while (batch := self._lane.get()) is not None:
                self._step(self._vectors, batch)
                if self.sparse is not None:
                    self._to_terms.put(batch)
        finally:
            self._to_terms.put(None)

    def _encode(self) -> None:
        """The second stage: each batch's sparse terms, in the order the first handed them."""
        while (batch := self._to_terms.get()) is not None:
            self._step(self._terms, batch)

    def _step(self, stage: Callable[[Batch], None], batch: Batch) -> None:
        if self._failed:
            return  # drain: the caller sees the error at its next feed
        try:
            stage(batch)
        except BaseException as exc:  # handed to the caller's thread
            self._failed.append(exc)

    def _vectors(self, batch: Batch) -> None:
        removes, items = batch
        self.index.remove(removes)
        if items:
            # The whole batch in one call of the model, as the benchmark's encoders alone run.
            vectors = self.embeddings.embed_cached(
                self.embedder, items, self.index.vectors, batch=self.batch
            )
            self.index.upsert([oid for oid, _, _ in items], vectors)

    def _terms(self, batch: Batch) -> None:
        assert self.sparse is not None
        terms, encoder = self.sparse
        removes, items = batch
        terms.remove(removes)
        terms.encode_missing(encoder, items, batch=self.batch)

    def _raise(self) -> None:
        if self._failed:
            raise self._failed[0]
