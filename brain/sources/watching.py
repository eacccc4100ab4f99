"""Live sync: watchdog events on connected folders and on the vault, debounced into syncs.

Editors that save by writing a temp file and renaming it show up as a `moved` event to the real
name; any event simply marks its connector (or the vault) dirty, and a quiet spell of `delay`
seconds runs one hash-based sync, so renames, bursts and partial writes all settle the same way.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from brain.errors import BrainError
from brain.sources import connectors as conn
from brain.sources import documents
from brain.vault.paths import CACHE_DIR

if TYPE_CHECKING:
    from brain.context import Context
    from brain.indexes.catchup import CatchUp

VAULT = ""  # the key under which vault edits are queued (connector names are never empty)
_KINDS = {"created", "modified", "moved", "deleted"}


@dataclass
class Watcher:
    """Watch every connected folder and the vault; call `run(stop)` on the thread owning brain."""

    brain: Context
    delay: float = 0.5
    on_sync: Callable[[list[documents.SyncReport]], None] | None = None
    on_catch_up: Callable[[CatchUp], None] | None = None
    on_error: Callable[[BrainError], None] | None = None
    watched: list[str] = field(default_factory=list)
    ready: threading.Event = field(default_factory=threading.Event)  # set after the first sync
    # Runs each sync pass where the Brain lives (the daemon's own thread); None: right here.
    via: Callable[[Callable[[], None]], None] | None = None
    _events: queue.Queue[str] = field(default_factory=queue.Queue)

    def run(self, stop: threading.Event) -> None:
        """Sync once, then follow changes until stop is set."""
        observer = Observer()
        state = conn.State.load(self.brain.root)
        for decl in conn.declared(self.brain.root).values():
            if conn.status_of(decl, state).state == "connected":
                observer.schedule(_Handler(self._events, decl.name), str(decl.folder),
                                  recursive=True)  # fmt: skip # arguments grouped by meaning
                self.watched.append(decl.name)
        observer.schedule(_Handler(self._events, VAULT), str(self.brain.root), recursive=True)
        observer.start()
        try:
            self._handle({VAULT, *self.watched})
            self.ready.set()
            while not stop.is_set():
                try:
                    dirty = {self._events.get(timeout=0.1)}
                except queue.Empty:
                    continue
                while not stop.is_set():  # wait for a quiet spell
                    try:
                        dirty.add(self._events.get(timeout=self.delay))
                    except queue.Empty:
                        break
                self._handle(dirty)
        finally:
            observer.stop()
            observer.join()

    def _handle(self, dirty: set[str]) -> None:
        if self.via is None:
            self._sync(dirty)
        else:
            self.via(lambda: self._sync(dirty))

    def _sync(self, dirty: set[str]) -> None:
        try:
            names = sorted(n for n in dirty if n != VAULT)
            if names:
                reports = documents.sync(self.brain, names)
                if self.on_sync:
                    self.on_sync(reports)
            if VAULT in dirty:
                found = self.brain.catch_up(force=True)  # an event came: walk now
                if self.on_catch_up and (found.changed or found.removed or found.broken):
                    self.on_catch_up(found)
        except BrainError as exc:  # a bad moment (a folder gone, a busy lock) is not the end
            if self.on_error:
                self.on_error(exc)


class _Handler(FileSystemEventHandler):
    """Turns watchdog events into a dirty mark for one connector or the vault."""

    def __init__(self, events: queue.Queue[str], key: str) -> None:
        super().__init__()
        self.events = events
        self.key = key

    def dispatch(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind not in _KINDS or (event.is_directory and kind == "modified"):
            return
        path = os.fsdecode(event.dest_path or event.src_path)
        if Path(path).name.startswith("."):
            return  # editors' and brain's own temp files; their rename is what counts
        if self.key == VAULT and f"{os.sep}{CACHE_DIR}{os.sep}" in path + os.sep:
            return
        self.events.put(self.key)
