"""The query encoded ahead: the models run on a worker thread while the full text is searched."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from brain.indexes.workers import Workers

T = TypeVar("T")

# Encoding the query is most of a warm hybrid recall (MiniLM ~4.5 ms and SPLADE ~2.5 of ~20 at
# 10k memories), and onnxruntime and tokenizers release the GIL: begun at the start of a recall,
# both run while this thread searches the full text and reads the catalog. One worker, taking
# them in the order the retrievers want them: two at once did worse beside the recall's own
# thread on two cores (docs/benchmarks.md, "Warm hybrid recall, stage by stage").
_worker = Workers(lambda: 1, "brain-encode")


class Ahead(Generic[T]):
    """One retriever's encoding of the query, begun ahead on the worker thread."""

    def __init__(self, encode: Callable[[str], T], model: object) -> None:
        self.encode = encode
        self.model = model
        self._begun: tuple[str, Future[tuple[T, Any]]] | None = None
        self._last: tuple[str, T] | None = None  # a second search of the same text reuses it
        self._then: Any = None  # what `then` gave for the encoding last returned, until taken

    def start(self, query: str, then: Callable[[T], Any] | None = None) -> None:
        """Begin encoding the query on the worker; `then`, given the encoding, runs there
        right after it (the sparse terms' first search: recall/sparse.py), for `followed`."""
        # A model not loaded yet loads on the recall's own thread, at its first search: loaded
        # on the worker, its memory came from the worker's own malloc arena, and the process
        # peaked ~25 MB higher (10k memories, 100 recalls: 333-347 MB against 318).
        if getattr(self.model, "loaded", True):
            self._begun = (query, _worker.get().submit(self._ahead, query, then))

    def _ahead(self, query: str, then: Callable[[T], Any] | None) -> tuple[T, Any]:
        encoded = self.encode(query)
        if then is None:
            return encoded, None
        try:
            return encoded, then(encoded)
        except Exception:  # only work done ahead: the recall's own thread does it again, and
            return encoded, None  # any error is raised there, where it is handled

    def __call__(self, query: str) -> T:
        """The encoding of this query: the one begun ahead if it was of the same text (a
        search without a speaker's name asks for another), else made now."""
        begun, self._begun = self._begun, None
        self._then = None
        if begun is not None and begun[0] == query:
            encoded, self._then = begun[1].result()
            self._last = (query, encoded)
        elif self._last is None or self._last[0] != query:
            self._last = (query, self.encode(query))
        return self._last[1]

    def followed(self) -> Any:
        """What `then` gave for the encoding the last call returned (None if nothing ran, or
        it failed), once: a second call of the same text finds nothing."""
        then, self._then = self._then, None
        return then
