"""Bulk ingest embeds in bounded batches while it writes, never everything at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes import caches as indexing
from brain._indexes import catalog as catalogs
from brain._indexes import pipeline
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import HashingSparse
from brain._sources import connectors as conn
from brain._sources import documents
from tests.ingest.test_recalls import SEED, chatgpt, zipped


class Counting:
    """Wraps the test embedder and records the size of every call."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(len(texts))
        return self.inner.embed(texts)


def watch_pipelines(monkeypatch: pytest.MonkeyPatch) -> list[pipeline.VectorPipeline]:
    """Every pipeline a bulk block makes from here on, in order, each with the batch size the
    test set on `pipeline.BATCH` (the default argument was bound at import)."""
    made: list[pipeline.VectorPipeline] = []
    real = pipeline.VectorPipeline.__init__

    def keep(self: pipeline.VectorPipeline, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **{**kwargs, "batch": pipeline.BATCH})
        made.append(self)

    monkeypatch.setattr(pipeline.VectorPipeline, "__init__", keep)
    return made


def test_bulk_embeds_in_bounded_batches_during_the_block(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "BATCH", 8)
    assert brain._context.caches.embedder is not None
    counting = Counting(brain._context.caches.embedder)
    brain._context.caches.embedder = counting
    brain._context.embedder = counting
    seen = watch_pipelines(monkeypatch)
    with brain.bulk():
        for n in range(50):
            brain.remember(f"Memory {n} about the orchard and pear {n}", node="Garden")
        (running,) = seen
        handed_during_block = sum(running.sizes)
        # Handed over while writing: most of the writes are already with the stages.
        assert handed_during_block >= 40
    assert all(size <= 8 for size in running.sizes) and sum(running.sizes) >= 50
    assert counting.calls and max(counting.calls) <= 8
    # Complete and saved at the end of the block: nothing left to embed, every note found.
    assert not brain._context.caches.vectors_pending()
    assert len(brain._context.caches.vectors) >= 50
    hits = brain.recall("pear 17 orchard", mode="vector", k=3)
    assert any("pear 17" in h.snippet for h in hits)


def test_flush_vectors_embeds_in_bounded_batches(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(30):
        brain.remember(f"Memory {n} about the harbour and ferry {n}", node="Travel")
    monkeypatch.setattr(indexing, "VECTOR_BATCH", 7)
    assert brain._context.caches.embedder is not None
    counting = Counting(brain._context.caches.embedder)
    brain._context.caches.embedder = counting
    brain._context.flush()
    assert counting.calls and max(counting.calls) <= 7 and sum(counting.calls) >= 30
    assert len(brain._context.caches.vectors) >= 30


class InTurn:
    """A test embedder and a test sparse encoder that note the order of their calls and the
    thread each ran on."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str]] = []
        self.vectors, self.terms = HashingEmbedder(), HashingSparse()
        self.name, self.dim = self.vectors.name, self.vectors.dim
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Any:
        if any("kiln" in t for t in texts):  # the block's writes, not a probe or a query
            self._note("embed", texts)
        return self.vectors.embed(texts)

    def encode(self, texts: Sequence[str]) -> Any:
        if any("kiln" in t for t in texts):
            self._note("encode", texts)
        return self.terms.encode(texts)

    def _note(self, kind: str, texts: Sequence[str]) -> None:
        with self._lock:
            self.calls.append((kind, len(texts), threading.current_thread().name))


def test_each_batch_is_embedded_then_encoded_by_two_stages(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MiniLM's stage and SPLADE's each run on a thread of their own, neither on the
    caller's: each batch is embedded, then encoded, and both see every batch in order."""
    monkeypatch.setattr(pipeline, "BATCH", 8)
    both = InTurn()
    b = open_vault(vault, clock=clock, embedder=both, sparse=both)
    try:
        with b.bulk():
            ids = [b.remember(f"Memory {n} about the kiln and glaze {n}").id for n in range(30)]
        embeds = [(n, thread) for kind, n, thread in both.calls if kind == "embed"]
        encodes = [(n, thread) for kind, n, thread in both.calls if kind == "encode"]
        assert embeds and [n for n, _ in embeds] == [n for n, _ in encodes]
        assert {thread for _, thread in embeds} == {"embed"}
        assert {thread for _, thread in encodes} == {"encode"}
        # The k-th batch reaches SPLADE's stage only after MiniLM's is done with it.
        at = {
            kind: [i for i, (k, _, _) in enumerate(both.calls) if k == kind]
            for kind in ("embed", "encode")
        }
        assert all(e < t for e, t in zip(at["embed"], at["encode"], strict=True))
        # Nothing lost on either side: every memory has its vector and its terms.
        assert not b._context.caches.vectors_pending()
        assert set(ids) <= set(b._context.caches.sparse.ids())
        assert len(b._context.caches.vectors) >= 30
        hits = b.recall("kiln glaze 17", mode="sparse", k=3)
        assert any("glaze 17" in h.snippet for h in hits)
    finally:
        b.close()


def test_each_batch_goes_to_each_model_in_one_call(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch bigger than the caches' own chunks (256) still reaches each model whole: a
    call per batch, as the benchmark's encoders alone are timed, not one per 256 texts."""
    monkeypatch.setattr(pipeline, "BATCH", 300)
    both = InTurn()
    b = open_vault(vault, clock=clock, embedder=both, sparse=both)
    seen = watch_pipelines(monkeypatch)
    try:
        with b.bulk():
            for n in range(610):
                b.remember(f"Memory {n} about the kiln and glaze {n}")
        (running,) = seen
        # The first batch once a few are written (the models start early), then whole ones.
        assert running.sizes == [pipeline.FIRST, 300, 610 - 300 - pipeline.FIRST]
        assert [n for kind, n, _ in both.calls if kind == "embed"] == running.sizes
        assert [n for kind, n, _ in both.calls if kind == "encode"] == running.sizes
    finally:
        b.close()


class Lagging(HashingSparse):
    """A sparse encoder that, at its first call, waits a while for the writer to finish."""

    def __init__(self, running: list[pipeline.VectorPipeline]) -> None:
        self.written = threading.Event()
        self.ahead: list[int] = []  # batches handed over but not yet taken, at each call
        self.running = running  # the block's pipeline, once it is made

    def encode(self, texts: Sequence[str]) -> Any:
        if self.running and any("loom" in t for t in texts):  # the block's batches
            if not self.ahead:
                self.written.wait(timeout=2)  # a bounded queue stops the writer before: no wait
            self.ahead.append(len(self.running[0].sizes) - len(self.ahead) - 1)
        return super().encode(texts)


def test_a_slow_encoder_holds_the_writer_back(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "BATCH", 4)
    lagging = Lagging(watch_pipelines(monkeypatch))
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=lagging)
    try:
        with b.bulk():
            for n in range(60):
                b.remember(f"Memory {n} about the loom and weft {n}")
            lagging.written.set()
        # The writer never ran further ahead of the sparse stage than both lanes' depth, the
        # batch MiniLM's stage holds and the one it was handing over: memory stays bounded
        # by the slower encoder.
        assert lagging.ahead and max(lagging.ahead) <= 2 * pipeline.DEPTH + 2
        assert len(b._context.caches.sparse.ids()) >= 60
    finally:
        b.close()


def test_an_import_embeds_alongside_in_bounded_batches(
    brain: Brain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`brain import` is a bulk block: its turns are encoded while the notes are written."""
    monkeypatch.setattr(pipeline, "BATCH", 8)
    seen = watch_pipelines(monkeypatch)
    report = brain.import_export("chatgpt", zipped(tmp_path, chatgpt(12), "chatgpt.zip"))
    assert len(report.added) == 12
    (running,) = seen  # one pipeline for the whole import (none before: all at the next flush)
    assert running.sizes and max(running.sizes) <= 8 and sum(running.sizes) >= 12 * 3
    assert not brain._context.caches.vectors_pending()  # every note and turn encoded by the import
    hit = brain.recall("prune fig tree 7 bud", mode="vector", k=3)[0]
    assert hit.title == "Fig pruning 7"
    # One transcript (`brain ingest`) is a single write: its vectors wait for the next flush.
    path = tmp_path / "widget.json"
    path.write_text(json.dumps(SEED))
    brain.ingest(path)
    assert len(seen) == 1 and brain._context.caches.vectors_pending()


def test_a_connector_sync_embeds_alongside_and_saves_its_state_after(
    brain: Brain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder's documents are written in a bulk block; the connector's record of them is
    saved after it, once every note of the block is in place and durable."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(10):
        (folder / f"pear {n}.md").write_text(f"# Pear {n}\n\nPear tree {n} wants pruning.\n")
    decl = conn.Declared("notes", str(folder), partition=brain.partition)
    ident = conn.identity(folder)
    assert ident is not None
    with brain._context.lock.hold():
        documents.confirm(brain._context, decl, ident)
    monkeypatch.setattr(pipeline, "BATCH", 8)
    seen = watch_pipelines(monkeypatch)
    seen_at_save: list[tuple[int, int]] = []  # (notes in place, temp files) at each save
    real_save = conn.State.save

    def save(state: conn.State) -> None:
        notes = [p for p in brain.root.rglob("*.md") if "wants pruning" in p.read_text()]
        temps = [p for p in brain.root.rglob(".*.tmp") if ".brain" not in p.parts]
        seen_at_save.append((len(notes), len(temps)))
        real_save(state)

    monkeypatch.setattr(catalogs, "BATCH_SECONDS", 3600.0)  # the group waits for the block's end
    monkeypatch.setattr(conn.State, "save", save)
    (report,) = brain.sync(["notes"])
    assert len(report.added) == 10
    (running,) = seen
    assert max(running.sizes) <= 8 and sum(running.sizes) >= 10
    assert not brain._context.caches.vectors_pending()
    # The state names the new notes only once the block put every one of them in place.
    assert seen_at_save == [(10, 0)]
