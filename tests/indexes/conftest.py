"""Fixtures of the indexes' tests: encoder workers on two cores."""

from __future__ import annotations

import pytest


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """Encoder batches run side by side on two cores (brain/indexes/onnxrun.py), with workers
    made afresh for the test whatever the machine."""
    from brain.indexes import onnxrun
    from brain.indexes.workers import Workers

    monkeypatch.setattr(onnxrun, "cores", lambda: 2)
    monkeypatch.setattr(onnxrun, "_workers", Workers(lambda: 2, "brain-model"))
