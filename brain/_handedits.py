"""The opened vault's caches brought in step with what a person changed in its folder by hand."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence

from brain._clock import Clock
from brain._errors import BrainError
from brain._git.autocommit import Autocommit
from brain._indexes import catchup
from brain._indexes.catalog import Catalog
from brain._indexes.catchup import CatchUp
from brain._indexes.copies import Holders
from brain._indexes.ports import CachesPort, Capabilities, LockPort, NodeIndexPort, NotesPort
from brain._model import normalise_title
from brain._processes import process_mark

NamesByTitle = dict[str, list[str]]  # a folder's note file names by normalised title


class HandEdits:
    """The catch-up of one view of an opened vault (Context.by_hand): hand edits, new files
    and deletions on disk reach the caches, each batch of them one git operation.

    A view (Context.at) takes a copy: how often it looks and what it last saw are its own, as
    the parts it takes are shared. Its commits follow the view's `defer_commits`, which each
    catch-up that may write is given (`defer`).
    """

    def __init__(
        self,
        store: NotesPort,
        caches: CachesPort,
        lock: LockPort,
        node_index: NodeIndexPort,
        changes: Autocommit,
        clock: Clock,
        capabilities: Capabilities,
    ) -> None:
        self.store, self.caches, self.lock = store, caches, lock
        self.node_index, self.changes, self.clock = node_index, changes, clock
        self.capabilities = capabilities
        self.walks = 0  # full walks of the files by this process
        # What the last catch_up looked at: how (walk or folders), folders stat'ed and listed, ms.
        self.last: dict[str, float | int | str] = {}
        # While reindexing: which file held each id before the caches were cleared, so a copied
        # note (same id, other file) never takes the id from the original (copies.Holders).
        self.id_owners: dict[str, str] | None = None
        self._last_walk = -1e9
        self._names: dict[str, NamesByTitle] | None = None  # inside listing_once()
        self._behind = False  # a watcher's catch-up failed: look, trust no watcher (fell_behind)

    def catch_up(self, *, force: bool = False, every: float = 0.0, defer: bool = False) -> CatchUp:
        """Bring the caches in step with hand edits, new files and deletions on disk.

        Other brain processes record their writes in the shared caches; this is only for
        changes made by hand. A long-lived process may look at most `every` seconds
        apart (a watcher covers the rest). Otherwise the cost follows the change: the
        folders changed since the last full walk are listed (catchup.by_folders), and the
        full walk runs when forced, when nothing was recorded, or when the last one is older
        than `catchup.FULL_WALK_EVERY` (what the folders cannot show: an edit in place).
        """
        if not self.capabilities.hand_edits:  # nobody edits a database's rows by hand
            return CatchUp()
        force = force or self._behind
        if not force and every > 0:
            now = time.monotonic()
            if now - self._last_walk < every:
                return CatchUp()
            self._last_walk = now
        started = time.perf_counter()
        look = catchup.look(self.store, self.caches.catalog, self.clock.now(), force=force)
        result = self._catch_up_with(look, started, defer)
        self._behind = False  # in step: a failure above leaves it behind, and says so
        return result

    def fell_behind(self) -> None:
        """This process's watcher failed to catch up (a full disk, say): until a catch-up
        succeeds, each one walks the files itself, trusting no watcher, so a read says what
        fails instead of answering from caches that silently miss what changed."""
        self._behind = True

    def _catch_up_with(self, look: catchup.Look, started: float, defer: bool) -> CatchUp:
        result = CatchUp()
        if look.todo or look.gone:
            with self.lock.hold():
                result = self._apply(look.todo, look.gone, defer)
        look.record()  # after: its stamps were taken before each listing, never newer
        if look.how == "walk":
            self.walks += 1
        self.last = {
            "how": look.how,
            "folders": look.folders,
            "listed": look.listed,
            "ms": round((time.perf_counter() - started) * 1000, 2),
            "changed": len(look.todo) + len(look.gone),
        }
        return result

    # A watcher's first catch-up of a big vault, in three steps, so that calls are served
    # within milliseconds instead of after a full walk (~15 s at 1M files): the folders
    # first (new, deleted and renamed files), then a walk aside on the watcher's thread (what
    # folders cannot show: an edit in place made while nothing watched), applied here.
    def folders(self, above: int = 0, *, defer: bool = False) -> bool:
        """Catch up what the folders recorded by the last walk show; True if done so, and
        reads leave the rest to the walk aside (`walked`) instead of walking. False, with
        nothing done, where only a full walk can tell, or its count was below `above`."""
        catalog = self.caches.catalog
        if not self.capabilities.hand_edits or catchup.walked_files(catalog) < max(above, 1):
            return False
        started = time.perf_counter()
        look = catchup.look_by_folders(self.store, catalog)
        if look is None:
            return False
        self._catch_up_with(look, started, defer)
        self._last_walk = time.monotonic()
        return True

    def walk_aside(self) -> catchup.Walk:
        """A full walk of the files against the catalog, safe on any thread: it reads
        through a catalog connection of its own and writes nothing."""
        try:
            own = self.caches.catalog
            assert isinstance(own, Catalog), "only a files vault is walked aside"
            catalog = Catalog(own.path)
            try:
                return catchup.walk_against(self.store, catalog, self.clock.now())
            finally:
                catalog.close()
        except (OSError, sqlite3.Error) as exc:
            raise BrainError(f"could not walk the vault aside: {exc}") from exc

    def walked(self, walk: catchup.Walk, *, defer: bool = False) -> CatchUp:
        """Apply a walk made aside: each file it found out of step is checked again by its
        stat (it may have changed since), then its folders are recorded as a walk's are."""
        result = self.paths(walk.suspects, defer=defer)
        catchup.record_walk(self.caches.catalog, walk.folders, walk.files, walk.when)
        self.caches.catalog.fill_inodes(walk.unknown)
        self.walks += 1
        return result

    def watched(self, on: bool) -> None:
        """This process's watcher follows the vault from now on (after its own full walk),
        or stopped: while on, other processes' catch-ups trust it instead of looking."""
        catalog = self.caches.catalog
        mine = catchup.watcher_mark(os.getpid(), self.store.root)
        if on and mine:
            if catalog.info(catchup.WATCHER) != mine:  # no write when it is there
                catalog.set_info(catchup.WATCHER, mine)
        elif not on and (catalog.info(catchup.WATCHER) or "").startswith(
            f"{process_mark(os.getpid())} "
        ):
            catalog.drop_info(catchup.WATCHER)

    def paths(self, rels: Iterable[str], *, defer: bool = False) -> CatchUp:
        """Catch up these files only (the watcher's paths): one stat each, read and hashed only
        when (size, mtime) changed, so the cost follows the change, not the vault's size."""
        todo, gone = catchup.paths_out_of_step(self.store, self.caches.catalog, rels)
        if not todo and not gone:
            return CatchUp()
        with self.lock.hold():
            return self._apply(todo, gone, defer)

    def changed(self, paths: Iterable[str], *, defer: bool = False) -> bool:
        """Whether any of these files changed since the caches saw them, caught up now if so.
        A note rewritten in place (made private, say) changes no folder, and a catch-up may
        trust the folders for minutes, or the daemon's first walk run aside."""
        return self.capabilities.hand_edits and self.paths(paths, defer=defer) != CatchUp()

    def _apply(self, todo: Sequence[str], gone: Sequence[str], defer: bool) -> CatchUp:
        # After a pull or hand edits the caches rewrite index.json: brain's own change,
        # committed as one operation (git/autocommit.py), or left for a model's session.
        with self.changes.operation(defer=defer) as op:
            self.changes.leave([*todo, *gone])  # the person's own changes stay theirs to commit
            with self.node_index.batch():
                result = self.apply_files(todo, gone)
            op.said = f"catch up with {len(todo) + len(gone)} changed file(s)"
        return result

    def apply_files(self, todo: Sequence[str], gone: Sequence[str]) -> CatchUp:
        """Drop the files gone and index those changed; the lock held, nothing recorded."""
        return catchup.apply_files(self.store, self.caches, self.clock, todo, gone)

    def index_file(self, rel: str, *, walked: bool = False) -> str:
        """Bring one file's cache entries in step: `changed`, `same`, `broken` or `gone`."""
        holders = None if self.id_owners is None else Holders(self.id_owners)
        return catchup.index_file(self.store, self.caches, self.clock, rel, holders, walked=walked)

    @contextlib.contextmanager
    def keeping_ids(self) -> Iterator[None]:
        """While the caches are cleared and rebuilt: each id stays with the file that held it."""
        self.id_owners = self.caches.catalog.id_owners()
        try:
            yield
        finally:
            self.id_owners = None

    def refresh_title(self, folder: str, title: str) -> list[str]:
        """Catch up the files of a folder whose names match a title (cheap: no stat calls);
        returns those of them that do not parse."""
        if not self.capabilities.hand_edits:
            return []
        catalog = self.caches.catalog
        broken = []
        for name in self.names_by_title(folder).get(normalise_title(title), ()):
            rel = f"{folder}/{name}"
            st = self.store.stat(rel)
            row = catalog.file(rel)
            if row is None or not row.matches(st):
                self.index_file(rel)
                row = catalog.file(rel)
            if row is not None and row.error is not None:
                broken.append(rel)
        # The catalog's note of this title whose file was deleted by hand: dropped now, or the
        # write would read a file that is not there.
        partition, _, node = folder.partition("/")
        held = catalog.find_title(partition, node, normalise_title(title))
        if held is not None and not self.store.exists(held.path):
            self.apply_files([], [held.path])
        return broken

    @contextlib.contextmanager
    def listing_once(self) -> Iterator[None]:
        """Inside Context.bulk(): each folder is listed once for the titles in it."""
        self._names = {}
        try:
            yield
        finally:
            self._names = None

    def names_by_title(self, folder: str) -> NamesByTitle:
        """A folder's note file names by normalised title. Inside `bulk()` a folder is listed
        once per block: the lock is held, so its new files are ours and already cached (a
        listing per titled write made ingesting quadratic: 26k files in one folder at 100k)."""
        if self._names is not None and folder in self._names:
            return self._names[folder]
        found: NamesByTitle = {}
        for name in self.store.names(folder):
            if name.endswith(".md"):
                found.setdefault(normalise_title(name[:-3]), []).append(name)
        if self._names is not None:
            self._names[folder] = found
        return found
