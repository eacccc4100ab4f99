"""Encoder batches cut by tokens and run side by side, one per core (brain/_indexes/onnxrun.py)."""

from __future__ import annotations

import threading
import time

import pytest

from brain._indexes import onnxrun


def test_batches_hold_every_text_once_shortest_first_within_the_budget() -> None:
    lengths = [7, 300, 3, 50, 50, 9, 120, 1, 64, 64, 64, 64, 2]
    batches = onnxrun.by_tokens(lengths, 128)
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    widths = [max(lengths[i] for i in batch) for batch in batches]
    assert widths == sorted(widths)  # similar lengths together, shortest first
    for batch, width in zip(batches, widths, strict=True):
        # Padded to its longest, a batch stays within the budget; a longer text is alone.
        assert len(batch) * width <= 128 or len(batch) == 1
    assert [300] in [[lengths[i] for i in batch] for batch in batches]


@pytest.mark.usefixtures("two_cores")
def test_several_batches_run_at_once_and_come_back_in_order() -> None:
    both = threading.Barrier(2, timeout=10)  # passes only when two runs are inside at once
    threads: set[str] = set()

    def run(batch: list[int]) -> list[int]:
        threads.add(threading.current_thread().name)
        if batch[0] >= 8:  # the two longest, run first, must overlap
            both.wait()
        return [n * 10 for n in batch]

    batches = [[n, n] for n in range(10)]
    assert onnxrun.each(run, batches) == [[n * 10, n * 10] for n in range(10)]
    assert len(threads) == 2 and threading.current_thread().name not in threads


@pytest.mark.usefixtures("two_cores")
def test_two_callers_at_once_share_the_cores() -> None:
    """Bulk ingest's two stages each hand their model's batches over at once: between them
    no more run than there are cores, and each caller gets its own results back."""
    lock = threading.Lock()
    inside, most = 0, 0

    def run(batch: list[int]) -> list[int]:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.01)
        with lock:
            inside -= 1
        return [n * 10 for n in batch]

    results: dict[str, list[list[int]]] = {}

    def call(name: str, base: int) -> None:
        results[name] = onnxrun.each(run, [[base + n] for n in range(8)])

    callers = [
        threading.Thread(target=call, args=(name, base))
        for name, base in (("embed", 0), ("encode", 100))
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert results == {
        "embed": [[n * 10] for n in range(8)],
        "encode": [[(100 + n) * 10] for n in range(8)],
    }
    assert most == 2


@pytest.mark.usefixtures("two_cores")
def test_the_longest_batches_run_first() -> None:
    began: list[int] = []
    lock = threading.Lock()

    def run(batch: int) -> int:
        with lock:
            began.append(batch)
        time.sleep(0.01)
        return batch

    assert onnxrun.each(run, list(range(6))) == list(range(6))
    # Batches come shortest first; the last two (the longest) are begun first.
    assert sorted(began[:2]) == [4, 5] and sorted(began[-2:]) == [0, 1]


def test_one_batch_or_one_core_runs_on_the_callers_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    here = threading.current_thread().name
    seen: list[str] = []

    def run(batch: int) -> int:
        seen.append(threading.current_thread().name)
        return batch

    assert onnxrun.each(run, [1]) == [1]
    monkeypatch.setattr(onnxrun, "cores", lambda: 1)
    assert onnxrun.each(run, [1, 2, 3]) == [1, 2, 3]
    assert set(seen) == {here}


@pytest.mark.usefixtures("two_cores")
def test_an_error_in_one_batch_reaches_the_caller() -> None:

    def run(batch: int) -> int:
        if batch == 3:
            raise ValueError("batch 3 failed")
        return batch

    with pytest.raises(ValueError, match="batch 3"):
        onnxrun.each(run, list(range(6)))
