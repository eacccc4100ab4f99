"""The opened vault: files, caches, lock, journal and clock, seen from one partition."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Self

from brain import _settings as settings_mod
from brain._clock import Clock, SystemClock
from brain._errors import BrokenNote, InvalidInput, NotFound, broken_in_the_way
from brain._git.autocommit import Autocommit, recorded
from brain._handedits import HandEdits
from brain._indexes import catchup
from brain._indexes.catalog import REBUILDING, REBUILT, ObjectRow
from brain._indexes.catchup import CatchUp
from brain._indexes.embedder import Embedder
from brain._indexes.ports import (
    CachesPort,
    Capabilities,
    JournalPort,
    LockPort,
    NodeIndexPort,
    NotesPort,
)
from brain._indexes.sparse import SparseEncoder
from brain._ingest.sections import Section, sections_of
from brain._mergedids import missing
from brain._model import Note, Relation, Status, Steps, Visibility, is_id, iso
from brain._obsidian import linked
from brain._storage import files_parts, grouped
from brain._vault import forgotten
from brain._vault.archive import check_writable
from brain._vault.cold import is_cold
from brain._vault.files import deferred_dir_sync
from brain._vault.journal import Event
from brain._vault.store import free_hot_path
from brain._vault.tree import Folders

Progress = Callable[[int, int], None]
REINDEX_BATCH = 1000  # files indexed per catalog commit by `reindex`


class Storage(Protocol):
    """Where an opened vault keeps its parts, when not in files: it sets the context's store,
    caches, lock, journal, node indexes and change recording (brain/_hosted: PostgreSQL)."""

    capabilities: Capabilities

    def attach(self, context: Context) -> None: ...


@dataclass
class Context:
    """A vault opened for use: files, caches, lock and clock; every use case takes one.

    It is seen from one partition (and, for a model, without what the person keeps to
    themselves). Another partition is another value: `at()` shares the open caches and lock.
    """

    root: Path
    settings: settings_mod.Settings
    clock: Clock = field(default_factory=SystemClock)
    partition: str = ""
    # Opened for a model (the MCP server): private and local-only notes and other partitions
    # do not exist for it — not in recall, lists, counts, expand or forget.
    for_model: bool = False
    # A model's session (the MCP server): its writes are committed at its close, not one by one.
    defer_commits: bool = False
    store: NotesPort = field(init=False)
    caches: CachesPort = field(init=False)
    lock: LockPort = field(init=False)
    embedder: Embedder | None = None
    sparse: SparseEncoder | None = None  # learned-sparse terms; used only beside an embedder
    steps: Steps | None = None  # told how far a long job is: a build, an embedding (model.Steps)
    catch_up_every: float = 0.0  # seconds between walks for hand edits; 0: before every read
    journal: JournalPort = field(init=False)
    node_index: NodeIndexPort = field(init=False)
    changes: Autocommit = field(init=False)  # the vault under git (git/autocommit.py)
    by_hand: HandEdits = field(init=False)  # the catch-up with hand edits (brain/handedits.py)
    _in_bulk: bool = field(default=False, init=False)
    # None: the vault's own files and the caches under `.brain/`.
    storage: Storage | None = None
    # What the storage can do (ports.Capabilities): a files vault can do everything.
    capabilities: Capabilities = field(default_factory=Capabilities, init=False)

    def __post_init__(self) -> None:
        self.partition = self.partition or self.settings.default_partition
        if self.storage is not None:
            self.capabilities = self.storage.capabilities
            self.storage.attach(self)
        else:
            parts = files_parts(
                self.root,
                self.settings,
                embedder=self.embedder,
                sparse=self.sparse,
                steps=self.steps,
            )
            self.store, self.lock, self.journal = parts.store, parts.lock, parts.journal
            self.changes, self.caches = parts.changes, parts.caches
            self.node_index = parts.node_index
        self.by_hand = HandEdits(
            self.store,
            self.caches,
            self.lock,
            self.node_index,
            self.changes,
            self.clock,
            self.capabilities,
        )
        if self.storage is not None or self._ensure_caches():
            return  # attached (the storage resumes its parts), or just rebuilt from the files
        if self.node_index.stale:
            with self.lock.hold():
                self.node_index.resume(self.store)

    def _ensure_caches(self, *, probe: bool = True) -> bool:
        """Rebuild caches that may not be served (missing, half made, of another schema, out of
        step with the catalog); True if it did. Idempotent and safe from any number of
        processes at once: the check is made again under the writer lock, the one place
        anything is created, deleted or rebuilt, so the first process repairs and the others
        wait and find nothing left to do. Embedding waits for the first recall.
        """
        if probe and not self.caches.problems():
            return False
        with self.lock.hold():
            # Another process may have repaired (or begun on) them while we waited for the lock.
            self.caches.reopen_fulltext()
            self.caches.renew_damaged()  # a cache: a damaged one is rebuilt, not served
            if self.caches.fulltext.problem is None and self.caches.text_pending():
                self.caches.flush_text()
            why = self.caches.problems()
            if not why:
                return False
            # A vault's first build (or one after `.brain/` was deleted) is no news for doctor.
            first = self.caches.catalog.info(REBUILDING) == "new"
            if self.caches.fulltext.problem is not None:
                self.caches.fulltext.create()
            self.reindex(self.indexing_steps(), embed=False)
            if not first:
                when = iso(self.clock.now())
                self.caches.catalog.set_info(REBUILT, f"{when}: {'; '.join(why)}")
            return True

    def close(self) -> None:
        self.caches.close()

    def at(
        self,
        partition: str | None = None,
        *,
        for_model: bool | None = None,
        defer_commits: bool | None = None,
    ) -> Self:
        """The same opened vault seen from another partition or by a model: caches, lock,
        store and journal are shared, nothing of this one changes."""
        view = copy.copy(self)
        view.partition = self.partition if partition is None else partition
        view.for_model = self.for_model if for_model is None else for_model
        view.defer_commits = self.defer_commits if defer_commits is None else defer_commits
        view.by_hand = copy.copy(self.by_hand)  # what it last saw and how often it looks: its own
        return view

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Many writes in a row (imports, connectors, benchmarks): the lock is taken once,
        node index files are written once at the end, each folder is fsynced once at the end,
        and the catalog commits a batch of writes at a time (Catalog.batched).

        Note files are made durable a group at a time (NoteStore.grouped): each is written to
        a temp file, and before each catalog commit one sync puts the group on disk, then each
        is renamed into place. So a write is durable when the block ends, not when it returns;
        a crash inside the block may lose the notes written since the last commit and the
        last renames, never tear a file, and the next catch-up repairs the caches. With git
        autocommit on, each operation commits its own files, so they are put in place at once.
        Placement inside the block sees the node indexes as they were when it began. Vectors
        are embedded in bounded batches alongside the writes (indexes/pipeline.py).
        """
        if self._in_bulk:  # nested: the outer block does it all
            yield
            return
        self._in_bulk = True
        try:
            with (
                self.lock.hold(),
                self.by_hand.listing_once(),
                # Its last group goes with the catalog's last commit. Under git each operation
                # commits its own files, so they must be in place.
                grouped(self.store, self.caches.catalog, at_once=self.changes.enabled),
                self.caches.catalog.batched(),
                self.node_index.batch(),
                deferred_dir_sync(),
                self.caches.embedding_alongside(),
            ):
                yield
        finally:
            self._in_bulk = False

    def save(self, note: Note) -> Note:
        """Write a note atomically and bring every cache in step (callers hold the lock). A note
        saved under a new path has moved (e.g. back from the cold tier): the old file goes."""
        assert self.lock.held, "save() needs the writer lock"
        # The one place every write passes: an archived partition is read-only, whoever asks.
        check_writable(self.store, note.partition)
        note = linked(self.caches.catalog, note)  # relations as links, for Obsidian
        before = self.caches.catalog.get(note.id) if note.id else None
        if self.for_model:
            self._check_model_may_write(note, before)
        data = self.store.write(note)
        self.caches.put_note(note, data, self.store.stat(note.path))
        if before is not None and before.path != note.path:
            moved(self, before, note)
        elif before is None and note.supersedes:
            self.record_event("corrected", note.supersedes, note, detail=note.id)
        return note

    def _check_model_may_write(self, note: Note, before: ObjectRow | None) -> None:
        """A model's write never reaches a note hidden from it: not the note itself, not the
        note whose file it would replace. The refusal names nothing of that note."""
        owner = self.caches.catalog.file(note.path)
        held = self.caches.catalog.get(owner.note_id) if owner and owner.note_id else None
        rows = [r for r in (before, held) if r is not None]
        if note.visibility != Visibility.NORMAL or not all(self.shows(r) for r in rows):
            raise InvalidInput(
                "that note is kept by the person to themselves; it cannot be written over MCP",
                "write it under another title, or ask the person",
            )

    def delete(self, note: Note) -> list[str]:
        """Remove a note file and everything cached about it. Callers hold the lock."""
        assert self.lock.held, "delete() needs the writer lock"
        self.store.delete(note.path)
        current = self.caches.catalog.get(note.id)
        if current is not None and current.path != note.path:
            # An old location of a note that lives elsewhere now: only the file row goes.
            self.caches.catalog.drop_file(note.path)
            return []
        self.remember_forgetting(note)
        return self.caches.drop_note(note.id, note.path)

    def remember_forgetting(self, note: Note) -> None:
        """Journal a forgetting with no id or title, drop what the journal said of the note,
        and keep salted hashes of it for the forgetting check (vault/forgotten.py)."""
        self.journal.forget(note.id)
        self.changes.forgot(str(note.id), note.path)
        self.record_event("forgotten", "", note, anonymous=True)
        if self.capabilities.hand_edits:  # files, where it could come back (a database: no)
            forgotten.record(self.root, note, iso(self.clock.now()))

    def section(self, object_id: str) -> tuple[Note, Section]:
        """A chunk or turn (`<note id>#<n>`): its note and its section record."""
        note = self.get(object_id)
        number = object_id.partition("#")[2]
        found = next((s for s in sections_of(note) if str(s.number) == number), None)
        if found is None:
            raise NotFound(f"no section {object_id}", "chunk ids look like <note id>#<n>")
        return note, found

    def record_event(
        self, kind: str, note_id: str, note: Note, detail: str = "", *, anonymous: bool = False
    ) -> None:
        """Journal what happened to a note for the daily log (`anonymous`: no title kept)."""
        title = "" if anonymous else note.title
        when = iso(self.clock.now())
        self.journal.append(
            Event(when, kind, note_id, title, note.partition, note.visibility, detail)
        )

    def get(self, note_id: str) -> Note:
        """The note with this id (a chunk id gives its note), read from its file."""
        row = self.row(note_id)
        try:
            return self.store.read(row.path)
        except FileNotFoundError:
            raise NotFound(
                f"note {note_id} is in the caches but its file {row.path} is gone",
                "run `brain reindex`",
            ) from None

    def row(self, object_id: str) -> ObjectRow:
        if not is_id(object_id):
            raise InvalidInput(f"{object_id!r} is not a note id (ids look like 01JE2Z3K…)")
        key = object_id.split("#", 1)[0]
        row = self.caches.catalog.get(key)
        if row is not None and self.for_model:
            if self.changed_under_model([row.path]):
                row = self.caches.catalog.get(key)
            if row is not None and not self.shows(row):
                row = None
        if row is None:
            # An id in a broken file is named (not to a model: it is told of no file it can't see);
            # an id a merge of two machines' notes dropped names the note that took it in.
            paths = () if self.for_model else [f.path for f in self.caches.catalog.broken_files()]
            if found := self.store.broken_with_id(paths, key):
                raise broken_in_the_way(*found)
            raise missing(self.caches.catalog, self.store, object_id, self.shows, paths)
        return row

    def changed_under_model(self, paths: Iterable[str]) -> bool:
        """For a model: whether any of these files changed since the caches saw them, caught
        up now if so (HandEdits.changed)."""
        return self.for_model and self.by_hand.changed(paths, defer=self.defer_commits)

    def shows(self, row: ObjectRow) -> bool:
        """Whether this Brain may show the object (always, unless opened for a model)."""
        if not self.for_model:
            return True
        return row.visibility == Visibility.NORMAL and row.partition == self.partition

    def shown_relations(self, note: Note) -> list[Relation]:
        """A note's relations whose targets this Brain may show (for a model: not an id of a
        hidden note, which would tell it one exists)."""
        if not self.for_model:
            return list(note.relations)
        targets = self.caches.catalog.get_many([r.target.split("#", 1)[0] for r in note.relations])
        return [
            r
            for r in note.relations
            if (row := targets.get(r.target.split("#", 1)[0])) is not None and self.shows(row)
        ]

    def touched(self, note: Note) -> Note:
        """The note marked as used now; a dormant or archived note comes back to life."""
        changes: dict[str, Any] = {"touched": iso(self.clock.now())}
        if note.status in (Status.DORMANT, Status.ARCHIVED):
            changes["status"] = "active"
            kept = [t for t in note.tags if t not in ("archived", "closed")]
            changes["tags"] = kept or None
        if is_cold(note.path):
            note = note.with_path(free_hot_path(self.store, note.path))
        return note.with_meta(**changes)

    def flush(self, *, vectors: bool = True) -> None:
        """Apply queued cache changes (from any process) before searching; `vectors=False`
        leaves the embedding for a search that needs it (full text never loads the model)."""
        embed = vectors and self.caches.vectors_pending()
        if self.caches.text_pending() or embed:
            with self.lock.hold():
                self.caches.flush_text()
                if embed:
                    self.caches.flush_vectors()
        if not self.caches.fulltext_whole():
            self._ensure_caches(probe=False)
        if vectors and self.caches.vectors_on and self.caches.vector_problem() is not None:
            with self.lock.hold():
                if self.caches.vector_problem() is not None:  # not mended while we waited
                    self.caches.rebuild_vectors()
        if vectors and self.caches.sparse_on and self.caches.sparse_problem() is not None:
            with self.lock.hold():
                if self.caches.sparse_problem() is not None:
                    self.caches.rebuild_sparse()

    # The catch-up with hand edits is a part of its own (brain/_handedits.py, which says what
    # each does); these name it for the use cases, each with this view's commits and pace.
    def catch_up(self, *, force: bool = False) -> CatchUp:
        """Bring the caches in step with hand edits, new files and deletions on disk."""
        return self.by_hand.catch_up(
            force=force, every=self.catch_up_every, defer=self.defer_commits
        )

    def catch_up_paths(self, rels: Iterable[str]) -> CatchUp:
        return self.by_hand.paths(rels, defer=self.defer_commits)

    def catch_up_folders(self, above: int = 0) -> bool:
        return self.by_hand.folders(above, defer=self.defer_commits)

    def walk_aside(self) -> catchup.Walk:
        return self.by_hand.walk_aside()

    def catch_up_walked(self, walk: catchup.Walk) -> CatchUp:
        return self.by_hand.walked(walk, defer=self.defer_commits)

    def watched(self, on: bool) -> None:
        self.by_hand.watched(on)

    @property
    def walks(self) -> int:
        return self.by_hand.walks

    @walks.setter
    def walks(self, count: int) -> None:
        self.by_hand.walks = count

    @property
    def last_catch_up(self) -> dict[str, float | int | str]:
        return self.by_hand.last

    def _index_file(self, rel: str, *, walked: bool = False) -> str:
        """One file's cache entries brought in step (reindex goes through here)."""
        return self.by_hand.index_file(rel, walked=walked)

    def indexing_steps(self) -> Progress | None:
        """How far a walk that indexes the files is, told to `steps` as "indexing"."""
        steps = self.steps
        return None if steps is None else lambda done, total: steps("indexing", done, total)

    @recorded(lambda count, a: f"reindex ({count} notes)")
    def reindex(self, progress: Progress | None = None, *, embed: bool = True) -> int:
        """Rebuild every cache from the files; returns the number of notes indexed."""
        with (
            self.lock.hold(),
            self.node_index.rebuilding(self.store),
            self.by_hand.keeping_ids(),  # read before the caches are cleared
        ):
            self.caches.clear()
            folders: Folders = []
            files = list(self.store.walk(folders))
            self.changes.leave([rel for rel, _st in files])  # hand-changed files stay the person's
            count = 0
            for start in range(0, len(files), REINDEX_BATCH):
                # One commit per batch of files, not one (or two) per file.
                with self.caches.catalog.transaction():
                    for done, (rel, _st) in enumerate(
                        files[start : start + REINDEX_BATCH], start + 1
                    ):
                        if self._index_file(rel, walked=True) == "changed":
                            count += 1
                        if progress:
                            progress(done, len(files))
            self.caches.flush_text()
            self.caches.rebuilt()
            if self.capabilities.hand_edits:  # what the next catch-up of hand edits compares with
                catchup.record_walk(self.caches.catalog, folders, len(files), self.clock.now())
            if embed and self.caches.vectors_on:
                self.caches.flush_vectors()
            if embed or not self.caches.vectors_on:
                # The cleared rows and the drained queues leave ~1 KB of free pages a memory.
                self.caches.catalog.compact()
            return count

    def notes(self) -> Iterator[Note]:
        """Every parseable note of the vault (all partitions), read from disk."""
        for rel, _st in self.store.walk():
            try:
                yield self.store.read(rel)
            except BrokenNote:
                continue


def moved(brain: Context, before: ObjectRow, note: Note) -> None:
    """After a note was written at a new path: remove the old file and its cache row."""
    brain.store.delete(before.path)
    brain.caches.catalog.drop_file(before.path)
    if is_cold(before.path) != is_cold(note.path):
        detail = "cold → hot" if is_cold(before.path) else "hot → cold"
        brain.record_event("moved", note.id, note, detail=detail)
