"""Bulk ingest embeds in bounded batches while it writes, never everything at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from brain.brain import Brain
from brain.indexes import caches as indexing
from brain.indexes import pipeline


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
