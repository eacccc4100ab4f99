"""A thread pool made at first use, that a forked child makes afresh for itself."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


class Workers:
    """`get()` gives the pool, made at its first call with `size()` threads. In a forked child
    only the forking thread lives on, so the child makes its own: the parent's pool would take
    work and never run it."""

    def __init__(self, size: Callable[[], int], name: str) -> None:
        self._size, self._name = size, name
        self._pool: ThreadPoolExecutor | None = None
        self._made = threading.Lock()
        os.register_at_fork(after_in_child=self._forget)

    def get(self) -> ThreadPoolExecutor:
        with self._made:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._size(), thread_name_prefix=self._name)
            return self._pool

    def _forget(self) -> None:
        self._pool, self._made = None, threading.Lock()
