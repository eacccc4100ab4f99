"""Bulk ingest embeds in bounded batches while it writes, never everything at once."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from brain.brain import Brain, open_vault
from brain.clock import FixedClock
from brain.indexes import caches as indexing
from brain.indexes import pipeline
from brain.indexes.embedder import HashingEmbedder
from brain.indexes.sparse import HashingSparse


class Counting:
    """Wraps the test embedder and records the size of every call."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(len(texts))
        return self.inner.embed(texts)


def test_bulk_embeds_in_bounded_batches_during_the_block(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "BATCH", 8)
    assert brain.caches.embedder is not None
    counting = Counting(brain.caches.embedder)
    brain.caches.embedder = counting
    brain.embedder = counting
    seen: list[Any] = []
    real = pipeline.VectorPipeline.__init__

    def keep(self: pipeline.VectorPipeline, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **{**kwargs, "batch": pipeline.BATCH})
        seen.append(self)

    monkeypatch.setattr(pipeline.VectorPipeline, "__init__", keep)
    with brain.bulk():
        for n in range(50):
            brain.remember(f"Memory {n} about the orchard and pear {n}", node="Garden")
        (running,) = seen
        handed_during_block = sum(running.sizes)
        # Handed over while writing: most of the writes are already with the worker.
        assert handed_during_block >= 40
    assert all(size <= 8 for size in running.sizes) and sum(running.sizes) >= 50
    assert counting.calls and max(counting.calls) <= 8
    # Complete and saved at the end of the block: nothing left to embed, every note found.
    assert not brain.caches.vectors_pending()
    assert len(brain.caches.vectors) >= 50
    hits = brain.recall("pear 17 orchard", mode="vector", k=3)
    assert any("pear 17" in h.snippet for h in hits)


def test_flush_vectors_embeds_in_bounded_batches(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(30):
        brain.remember(f"Memory {n} about the harbour and ferry {n}", node="Travel")
    monkeypatch.setattr(indexing, "VECTOR_BATCH", 7)
    assert brain.caches.embedder is not None
    counting = Counting(brain.caches.embedder)
    brain.caches.embedder = counting
    brain.flush()
    assert counting.calls and max(counting.calls) <= 7 and sum(counting.calls) >= 30
    assert len(brain.caches.vectors) >= 30


class InTurn:
    """A test embedder and a test sparse encoder that note the order of their calls and the
    thread each ran on."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str]] = []
        self.vectors, self.terms = HashingEmbedder(), HashingSparse()
        self.name, self.dim = self.vectors.name, self.vectors.dim

    def embed(self, texts: Sequence[str]) -> Any:
        if any("kiln" in t for t in texts):  # the block's writes, not a probe or a query
            self.calls.append(("embed", len(texts), threading.current_thread().name))
        return self.vectors.embed(texts)

    def encode(self, texts: Sequence[str]) -> Any:
        if any("kiln" in t for t in texts):
            self.calls.append(("encode", len(texts), threading.current_thread().name))
        return self.terms.encode(texts)


def test_vectors_then_sparse_terms_for_each_batch_on_one_worker(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch is embedded, then encoded, by the one worker (each model with every core):
    never both models at once on two cores."""
    monkeypatch.setattr(pipeline, "BATCH", 8)
    both = InTurn()
    b = open_vault(vault, clock=clock, embedder=both, sparse=both)
    try:
        with b.bulk():
            ids = [b.remember(f"Memory {n} about the kiln and glaze {n}").id for n in range(30)]
        kinds = [kind for kind, _, _ in both.calls]
        assert kinds == ["embed", "encode"] * (len(kinds) // 2) and kinds
        assert [n for _, n, _ in both.calls[0::2]] == [n for _, n, _ in both.calls[1::2]]
        assert {thread for _, _, thread in both.calls} == {"embed"}  # the worker, not the caller
        # Nothing lost on either side: every memory has its vector and its terms.
        assert not b.caches.vectors_pending()
        assert set(ids) <= set(b.caches.sparse.ids())
        assert len(b.caches.vectors) >= 30
        hits = b.recall("kiln glaze 17", mode="sparse", k=3)
        assert any("glaze 17" in h.snippet for h in hits)
    finally:
        b.close()


class Lagging(HashingSparse):
    """A sparse encoder that, at its first call, waits a while for the writer to finish."""

    def __init__(self) -> None:
        self.written = threading.Event()
        self.ahead: list[int] = []  # batches handed over but not yet taken, at each call
        self.running: pipeline.VectorPipeline | None = None

    def encode(self, texts: Sequence[str]) -> Any:
        if self.running is not None and any("loom" in t for t in texts):  # the block's batches
            if not self.ahead:
                self.written.wait(timeout=2)  # a bounded queue stops the writer before: no wait
            self.ahead.append(len(self.running.sizes) - len(self.ahead) - 1)
        return super().encode(texts)


def test_a_slow_encoder_holds_the_writer_back(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "BATCH", 4)
    lagging = Lagging()
    real = pipeline.VectorPipeline.__init__

    def keep(self: pipeline.VectorPipeline, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **{**kwargs, "batch": pipeline.BATCH})
        lagging.running = self

    monkeypatch.setattr(pipeline.VectorPipeline, "__init__", keep)
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=lagging)
    try:
        with b.bulk():
            for n in range(60):
                b.remember(f"Memory {n} about the loom and weft {n}")
            lagging.written.set()
        # The writer never ran more than the queue's depth (and the batch it was handing
        # over) ahead of the sparse worker: memory stays bounded by the slower encoder.
        assert lagging.ahead and max(lagging.ahead) <= pipeline.DEPTH + 1
        assert len(b.caches.sparse.ids()) >= 60
    finally:
        b.close()
