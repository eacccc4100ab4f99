"""Fixtures of the indexes' tests: encoder workers on two cores, a counting sparse encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import HashingSparse


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Encoder batches run side by side on two cores (brain/_indexes/onnxrun.py), with workers
    made afresh for the test whatever the machine."""
    from brain._indexes import onnxrun
    from brain._indexes.workers import Workers

    monkeypatch.setattr(onnxrun, "cores", lambda: 2)
    monkeypatch.setattr(onnxrun, "_workers", Workers(lambda: 2, "brain-model"))


class Counting(HashingSparse):
    """The test encoder, counting every text it is asked to encode."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().encode(texts)


@pytest.fixture
def encoder() -> Counting:
    return Counting()


@pytest.fixture
def sbrain(vault: Path, clock: FixedClock, encoder: Counting) -> Brain:
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=encoder)
    yield b
    b.close()
