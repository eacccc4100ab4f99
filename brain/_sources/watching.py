"""Live sync: watchdog events on connected folders and on the vault, debounced into syncs.

Editors that save by writing a temp file and renaming it show up as a `moved` event to the real
name; any event simply marks its connector (or the vault) dirty, and a quiet spell of `delay`
seconds runs one hash-based sync, so renames, bursts and partial writes all settle the same way.
In the vault an event names its files, and only those are caught up (Context.catch_up_paths);
a folder created, moved or deleted there makes it walk the whole vault instead.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from brain._errors import BrainError
from brain._indexes.catchup import QUICK_ABOVE
from brain._sources import connectors as conn
from brain._sources import documents
from brain._vault.paths import CACHE_DIR

if TYPE_CHECKING:
    from brain._context import Context
    from brain._indexes import catchup
    from brain._indexes.catchup import CatchUp

VAULT = ""  # the key under which vault edits are queued (connector names are never empty)
EVERYTHING = ""  # the path of an event that needs a full check (a folder of the vault changed)
Dirty = set[tuple[str, str]]  # (connector name or VAULT, vault-relative path or EVERYTHING)
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
    # The last catch-up of the vault: how (`paths`, `walk` or `walk aside`), files named, ms,
    # files changed.
    last_catch_up: dict[str, float | int | str] = field(default_factory=dict)
    first_catch_up: dict[str, float | int | str] = field(default_factory=dict)  # the same, kept
    # From this many files (as the last walk counted them) the first full walk runs aside.
    walk_aside_above: int = QUICK_ABOVE
    _events: queue.Queue[tuple[str, str]] = field(default_factory=queue.Queue)

    def run(self, stop: threading.Event) -> None:
        """Sync once, then follow changes until stop is set."""
        observer = Observer()
        for decl in conn.connected(self.brain.root):
            observer.schedule(_Handler(self._events, decl.name), str(decl.folder), recursive=True)
            self.watched.append(decl.name)
        vault = _Handler(self._events, VAULT, self.brain.root)
        observer.schedule(vault, str(self.brain.root), recursive=True)
        observer.start()
        try:
            self._start()
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
            self._handle_stopped()

    def _start(self) -> None:
        """The first sync, of every connector and the vault, once the observer runs (so no
        change is missed between them). A vault of `walk_aside_above` files or more is first
        checked by its folders, then walked here, off the Brain's thread, while calls are
        served; a smaller one, or one whose folders cannot tell, is walked before them."""
        aside: list[bool] = []

        def first() -> None:
            self._sync({(name, EVERYTHING) for name in self.watched})
            try:
                aside.append(self.brain.catch_up_folders(above=self.walk_aside_above))
            except BrainError as exc:
                self._failed(exc)
            if not any(aside):
                self._sync({(VAULT, EVERYTHING)})

        self._run(first)
        if not any(aside):
            return
        started = time.perf_counter()
        try:
            walk = self.brain.walk_aside()
        except BrainError as exc:  # walked where the Brain lives instead, as a small vault is
            self._failed(exc)
            self._handle({(VAULT, EVERYTHING)})
            return
        self._run(lambda: self._walked(walk, started))

    def _walked(self, walk: catchup.Walk, started: float) -> None:
        try:
            found = self.brain.catch_up_walked(walk)
            self.brain.watched(True)  # in step with every file: the watcher is the catch-up
            self._report("walk aside", 0, started, found)
        except BrainError as exc:
            self.brain.by_hand.fell_behind()
            self._failed(exc)
            self._sync({(VAULT, EVERYTHING)})

    def _handle_stopped(self) -> None:
        try:  # the daemon also clears it on its own thread as it stops (daemon/server.py)
            if self.via is None:
                self.brain.watched(False)
            else:
                self.via(lambda: self.brain.watched(False))
        except BrainError:
            pass

    def _handle(self, dirty: Dirty) -> None:
        self._run(lambda: self._sync(dirty))

    def _run(self, job: Callable[[], None]) -> None:
        if self.via is None:
            job()
        else:
            self.via(job)

    def _failed(self, exc: BrainError) -> None:
        if self.on_error:
            self.on_error(exc)

    def _sync(self, dirty: Dirty) -> None:
        try:
            names = sorted({n for n, _ in dirty if n != VAULT})
            if names:
                reports = self._sync_documents(names)
                if self.on_sync:
                    self.on_sync(reports)
            paths = {p for n, p in dirty if n == VAULT}
            if paths:
                started = time.perf_counter()
                walk = EVERYTHING in paths
                found = (
                    self.brain.catch_up(force=True)  # a folder changed: walk now
                    if walk
                    else self.brain.catch_up_paths(paths)
                )
                if walk:  # in step with every file: from now on the watcher is the catch-up
                    self.brain.watched(True)
                self._report("walk" if walk else "paths", 0 if walk else len(paths), started, found)
        except BrainError as exc:  # a bad moment (a folder gone, a busy lock) is not the end
            if any(name == VAULT for name, _ in dirty):
                self.brain.by_hand.fell_behind()  # its reads look at the files themselves
            self._failed(exc)

    def _sync_documents(self, names: list[str]) -> list[documents.SyncReport]:
        """What `brain sync` does for these connectors, committed as its is (under git): the
        documents brought in are brain's change, not left in git status as the person's."""
        brain = self.brain
        with brain.changes.operation(defer=brain.defer_commits) as op:
            reports = documents.sync(brain, names)
            if any(r.added or r.updated or r.removed for r in reports):
                op.said = f"sync {', '.join(r.connector for r in reports)}"
        return reports

    def _report(self, how: str, paths: int, started: float, found: CatchUp) -> None:
        changed = len(found.changed) + len(found.removed) + len(found.broken)
        self.last_catch_up = {
            "how": how,
            "paths": paths,
            "changed": changed,
            "ms": round((time.perf_counter() - started) * 1000, 2),
        }
        if not self.first_catch_up:
            self.first_catch_up = self.last_catch_up
        if self.on_catch_up and changed:
            self.on_catch_up(found)


class _Handler(FileSystemEventHandler):
    """Turns watchdog events into a dirty mark for one connector or the vault."""

    def __init__(
        self, events: queue.Queue[tuple[str, str]], key: str, root: Path | None = None
    ) -> None:
        super().__init__()
        self.events = events
        self.key = key
        self.root = root  # the vault's: its events name their files

    def dispatch(self, event: FileSystemEvent) -> None:
        kind = event.event_type
        if kind not in _KINDS or (event.is_directory and kind == "modified"):
            return
        path = os.fsdecode(event.dest_path or event.src_path)
        if Path(path).name.startswith("."):
            return  # editors' and brain's own temp files; their rename is what counts
        if self.key == VAULT and f"{os.sep}{CACHE_DIR}{os.sep}" in path + os.sep:
            return
        if self.root is None or event.is_directory:
            self.events.put((self.key, EVERYTHING))
            return
        for name in (event.src_path, event.dest_path):  # a rename: both ends
            if name:
                rel = os.path.relpath(os.fsdecode(name), self.root)
                if not rel.startswith(".."):
                    self.events.put((self.key, Path(rel).as_posix()))
