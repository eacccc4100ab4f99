"""onnxruntime sessions for the encoders, one thread each, and batches spread over the cores.

A session that parallelises each operator over every core stalls whenever another thread
needs a core: its threads meet at every operator, and one that was preempted holds up the
rest. Bulk ingest always has another thread (the writer of files and catalog), and so does a
recall (its own search) and a shared machine (other processes). So each session runs on one
thread, and a call with several batches runs them side by side, one per core. Alone the two
ways were equally fast here; beside one busy Python thread MiniLM ran 119-125 texts/s against
94-98, SPLADE 314-342 against 240-262 (docs/lab/ingest.md, "The encoders one thread a batch").
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from brain._indexes.workers import Workers

T = TypeVar("T")
R = TypeVar("R")

THREADS = 1  # intra-op threads per session


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_told = threading.local()  # `running`: called as this thread's next model run begins


@contextmanager
def telling(running: Callable[[], None]) -> Iterator[None]:
    """Within: `running()` is called as a model run on this thread begins, once the GIL is
    about to be let go for the model's own work (recall/ahead.py waits for that)."""
    _told.running = running
    try:
        yield
    finally:
        _told.running = None


class Session:
    """An onnxruntime session whose `run` first tells `telling`'s caller that it begins."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def run(self, outputs: list[str], feeds: dict[str, Any]) -> Any:
        running = getattr(_told, "running", None)
        if running is not None:
            running()
        return self.inner.run(outputs, feeds)

    def get_inputs(self) -> Any:
        return self.inner.get_inputs()


def session(onnx_file: Path, threads: int = THREADS) -> Session:
    """An inference session on the CPU, quiet, with no busy-waiting between operators."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads  # 0: onnxruntime's choice (a thread per core)
    options.log_severity_level = 3  # errors only: the core never prints
    # No spinning: on a shared 2-core machine spinning threads fight the other processes, and
    # a query embedding took 52 ms at p50 with it, 15 without.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return Session(
        onnxruntime.InferenceSession(str(onnx_file), options, providers=["CPUExecutionProvider"])
    )


def by_tokens(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """The positions of `lengths` in batches of similar length, shortest first, each at most
    `budget` tokens once padded to its longest (a longer text is a batch alone): little
    work spent on padding, and a batch's buffers stay bounded however long the texts."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * lengths[i] <= budget:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def padded(encodings: Sequence[Any]) -> dict[str, Any]:
    """A batch's token ids, padded with 0 ([PAD] in BERT's vocabulary, which both models use)
    to its longest, and the mask of the real tokens."""
    import numpy as np

    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), dtype=np.int64)
    mask = np.zeros((len(encodings), width), dtype=np.int64)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def each(run: Callable[[T], R], batches: Sequence[T]) -> list[R]:
    """`run` of every batch, in order; several at once, one per core, when there are more.
    onnxruntime and tokenizers release the GIL, and a session may run on several threads.
    The batches come shortest first (sorted by length); they are run longest first, so the
    last to run are short and no core waits long for the others at the end."""
    if len(batches) < 2 or cores() < 2:
        return [run(batch) for batch in batches]
    return list(_workers.get().map(run, batches[::-1]))[::-1]


_workers = Workers(cores, "brain-model")  # one per core
