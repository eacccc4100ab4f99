"""Long work said while it happens: a rich bar (or status line) on a terminal, one line on
stderr elsewhere; nothing for work done in a moment."""

from __future__ import annotations

import atexit
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

MOMENT = 1.0  # seconds of work said only if it lasts longer (the 2 s rule, with a margin)
BIG = 200  # from this many files or memories a job is said at once: it will not be a moment
UNITS = {"indexing": "files", "embedding": "memories"}
WHY = {"indexing": "the full-text index and catalog", "embedding": "the vector index"}
# A script's log should tell a long embedding from a hang, and what stopping it costs.
AFTER = {"embedding": " (once; if stopped, what is done is kept; recall --mode text needs none)"}


class Shown:
    """The core's Steps (model.Steps), shown: one bar per job on a terminal (gone when the job
    is done), one line per job on stderr elsewhere."""

    def __init__(self, root: Path, err: Console) -> None:
        self.root = root
        self.err = err
        self.began: dict[str, float] = {}
        self.said: set[str] = set()
        self.bar: Any = None  # rich's Progress, made when a first job is shown
        self.tasks: dict[str, Any] = {}
        self.status: Any = None  # rich's Status, while a wait for the lock is shown

    def __call__(self, what: str, done: int, total: int) -> None:
        began = self.began.setdefault(what, time.monotonic())
        if what not in self.said:
            if what != "waiting" and total < BIG and time.monotonic() - began < MOMENT:
                return  # (the lock says a wait only once it outlasted a moment)
            self.said.add(what)
            self._begin(what, total)
        if what == "waiting" and done >= total and self.status is not None:
            self.status.stop()
            self.status = None
        if self.bar is not None and what in self.tasks:
            self.bar.update(self.tasks[what], completed=done, total=total)
            if done >= total:
                self._end(what)
        if done >= total:
            self.began.pop(what, None)
            self.said.discard(what)

    def _begin(self, what: str, total: int) -> None:
        if what == "waiting":
            self._waiting()
            return
        label = f"{what.capitalize()} {total:,} {UNITS.get(what, 'items')}"
        err = self.err
        if not err.is_terminal:
            err.print(
                f"brain: {label.lower()} for {WHY.get(what, what)} of {escape(str(self.root))}…"
                + AFTER.get(what, "")
            )
            return
        if self.bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
            self.bar = Progress(*columns, console=err, transient=True)
            self.bar.start()
            atexit.register(self.stop)
        self.tasks[what] = self.bar.add_task(
            f"{what.capitalize()} ({WHY.get(what, what)})", total=total
        )

    def _waiting(self) -> None:
        message = f"waiting for another brain process writing to {self.root}…"
        if not self.err.is_terminal:
            self.err.print(f"brain: {escape(message)}")
            return
        self.status = self.err.status(escape(message))
        self.status.start()

    def _end(self, what: str) -> None:
        self.bar.remove_task(self.tasks.pop(what))
        if not self.tasks:
            self.stop()

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


@contextlib.contextmanager
def waiting(err: Console, message: str) -> Iterator[None]:
    """A wait that outlasted a moment: a status line on a terminal (gone when it ends), one
    line on stderr elsewhere."""
    if err.is_terminal:
        with err.status(escape(message)):
            yield
        return
    err.print(f"brain: {escape(message)}")
    yield
