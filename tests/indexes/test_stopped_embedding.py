"""An embedding pass stopped halfway (Ctrl-C, or SIGTERM, which the command line turns into the
same unwinding: brain/_streams.py) keeps the vectors it made: the next command embeds only the
rest, so a script that retries under `timeout` gets further each time."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._indexes.caches import VECTOR_BATCH
from brain._indexes.embedder import HashingEmbedder
from tests.ingest.test_recalls import chatgpt


class Counting:
    """The hashing embedder, counting the texts it embeds; its `stop_at`-th call is stopped
    as Ctrl-C stops it, before embedding anything."""

    name = "hashing"

    def __init__(self, stop_at: int = 0) -> None:
        self.real = HashingEmbedder()
        self.dim = self.real.dim
        self.calls = self.texts = 0
        self.stop_at = stop_at

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        self.texts += len(texts)
        return self.real.embed(texts)


def test_a_reindex_stopped_while_embedding_leaves_only_the_rest_to_embed(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(chatgpt(300)), encoding="utf-8")
    brain = open_vault(vault, clock=clock, embedder=None)  # notes only: nothing embedded yet
    brain.import_export("chatgpt", export)
    brain.close()

    stopped = Counting(stop_at=3)  # the first VECTOR_BATCH objects are two calls of 256
    brain = open_vault(vault, clock=clock, embedder=stopped)
    objects = brain._context.caches.catalog.count()
    assert objects > VECTOR_BATCH
    with pytest.raises(KeyboardInterrupt):
        brain.reindex()
    brain.close()
    assert stopped.texts == VECTOR_BATCH

    rest = Counting()
    brain = open_vault(vault, clock=clock, embedder=rest)
    try:
        assert brain.recall("prune fig tree 7", mode="vector")
        # Not `objects`: the first batch is kept (and the one more text is the question).
        assert rest.texts == objects - VECTOR_BATCH + 1
        assert len(brain._context.caches.vectors) == objects
    finally:
        brain.close()
