"""The query encoded ahead: the models run on a worker thread while the full text is searched."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from brain._indexes import onnxrun
from brain._indexes.workers import Workers

T = TypeVar("T")

# Encoding the query is most of a warm hybrid recall (MiniLM ~4.5 ms and SPLADE ~2.5 of ~20 at
# 10k memories), and onnxruntime and tokenizers release the GIL: begun at the start of a recall,
# both run while this thread searches the full text and reads the catalog. One worker, taking
# them in the order the retrievers want them: two at once did worse beside the recall's own
# thread on two cores (docs/lab/latency.md, "Warm hybrid recall, stage by stage"). But a recall
# that would wait for the first takes the next one over (`Ahead.__call__`).
_worker = Workers(lambda: 1, "brain-encode")
# A recall's first encoding is let begin before its thread goes on. Woken, the worker needs the
# GIL to reach the model, and the recall's thread, checking the vault and the caches in Python,
# let it have it only at a system call: the model began ~0.2 ms later at 100k memories
# (docs/lab/latency.md, "The model begun first"). The wait ends as the model's run begins (it
# lets the GIL go), when the encoding ends (a model without onnxruntime), or after this many
# seconds. No wait when the worker has other encodings: this one would not begin soon.
BEGIN_WAIT = 0.001
_queued = 0  # encodings given to the worker and not yet done or taken back
_counting = threading.Lock()


def _afresh() -> None:
    """In a forked child: the parent's encodings are not its own, and the lock may have been
    held by a thread that does not live on."""
    global _queued, _counting
    _queued, _counting = 0, threading.Lock()


os.register_at_fork(after_in_child=_afresh)
_begun_here = threading.local()  # `pending`: the encodings this thread began, not yet taken


class Ahead(Generic[T]):
    """One retriever's encoding of the query, begun ahead on the worker thread."""

    def __init__(self, encode: Callable[[str], T], model: object) -> None:
        self.encode = encode
        self.model = model
        # The text, the encoding with what `then` gave (or a future of it, run apart), `then`
        self._begun: tuple[str, Future[tuple[T, Any]], Callable[[T], Any] | None] | None = None
        self._last: tuple[str, T] | None = None  # a second search of the same text reuses it
        self._then: Any = None  # what `then` gave for the encoding last returned, until taken

    def start(self, query: str, then: Callable[[T], Any] | None = None) -> None:
        """Begin encoding the query on the worker; `then`, given the encoding, runs there
        right after it (the sparse terms' first search: recall/sparse.py), for `followed`."""
        # A model not loaded yet loads on the recall's own thread, at its first search: loaded
        # on the worker, its memory came from the worker's own malloc arena, and the process
        # peaked ~25 MB higher (10k memories, 100 recalls: 333-347 MB against 318).
        if getattr(self.model, "loaded", True):
            global _queued
            begun = threading.Event()
            future = _worker.get().submit(self._ahead, query, then, begun)
            with _counting:
                idle, _queued = _queued == 0, _queued + 1
            future.add_done_callback(_done)  # run, failed or cancelled (taken over)
            self._begun = (query, future, then)
            _pending().add(self)
            if idle:
                begun.wait(BEGIN_WAIT)

    def _ahead(
        self, query: str, then: Callable[[T], Any] | None, begun: threading.Event
    ) -> tuple[T, Any]:
        try:
            with onnxrun.telling(begun.set):
                encoded = self.encode(query)
        finally:
            begun.set()  # a model without onnxruntime (the hashing one): at its end
        return encoded, None if then is None else _followed(then, encoded)

    def __call__(self, query: str) -> T:
        """The encoding of this query: the one begun ahead if it was of the same text (a
        search without a speaker's name asks for another), else made now."""
        # Rather than wait, this thread encodes what the worker has not begun: this one, or
        # the next (SPLADE's, while MiniLM runs: the two models side by side on the two cores,
        # where one after the other left the sparse list the last to come).
        waiting = self._begun is not None and not self._begun[1].done()
        if waiting and not self._take():
            for other in list(_pending()):
                if other is not self and other._take():
                    break
        begun, self._begun = self._begun, None
        _pending().discard(self)
        self._then = None
        if begun is not None and begun[0] == query:
            encoded, self._then = begun[1].result()
            self._last = (query, encoded)
        elif self._last is None or self._last[0] != query:
            self._last = (query, self.encode(query))
        return self._last[1]

    def _take(self) -> bool:
        """Encode here the text begun ahead if the worker has not begun it; its `then` goes
        to the worker still. False if there was nothing to take."""
        if self._begun is None or not self._begun[1].cancel():
            return False
        query, _future, then = self._begun
        _pending().discard(self)
        try:
            encoded = self.encode(query)
        except Exception:  # encoded again when asked for, where the error is handled
            self._begun = None
            return True
        done: Future[tuple[T, Any]] = Future()
        done.set_result(
            (encoded, None if then is None else _worker.get().submit(_followed, then, encoded))
        )
        self._begun = (query, done, then)
        return True

    def followed(self) -> Any:
        """What `then` gave for the encoding the last call returned (None if nothing ran, or
        it failed), once: a second call of the same text finds nothing."""
        then, self._then = self._then, None
        return then.result() if isinstance(then, Future) else then


def _pending() -> weakref.WeakSet[Ahead[Any]]:
    pending: weakref.WeakSet[Ahead[Any]] | None = getattr(_begun_here, "pending", None)
    if pending is None:
        pending = _begun_here.pending = weakref.WeakSet()
    return pending


def _done(_future: Future[Any]) -> None:
    global _queued
    with _counting:
        _queued -= 1


def _followed(then: Callable[[Any], Any], encoded: Any) -> Any:
    try:
        return then(encoded)
    except Exception:  # only work done ahead: the recall's own thread does it again, and
        return None  # any error is raised there, where it is handled
