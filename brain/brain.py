"""Brain: the one coordinator that the CLI and the MCP server call."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain import (
    catchup,
    corrections,
    defining,
    forgetting,
    githistory,
    gitvault,
    graph,
    relations,
    tiers,
)
from brain import settings as settings_mod
from brain.catchup import CatchUp
from brain.clock import Clock, SystemClock
from brain.doctor import REBUILT, DoctorReport
from brain.errors import BrainError, BrokenNote, InvalidInput, NotFound
from brain.gitvault import recorded, title_of
from brain.indexes.catalog import REBUILDING, ObjectRow
from brain.indexes.embedder import Embedder, load_embedder
from brain.indexes.fulltext import Filters
from brain.indexing import Caches
from brain.journal import Event, Journal
from brain.model import STATUSES, Hit, Note, is_id, iso, normalise_title
from brain.nodeindex import NodeIndex
from brain.partitions import check_recallable, check_writable, is_archived
from brain.recall import (
    CANDIDATES,
    MODES,
    Retriever,
    TextRetriever,
    VectorRetriever,
    fuse,
    load_rows,
    rank,
    to_hit,
    with_context,
)
from brain.vault.cold import is_cold
from brain.vault.files import WriterLock, deferred_dir_sync, keep_private
from brain.vault.paths import CACHE_DIR, check_node, check_segment
from brain.vault.store import NoteStore
from brain.writing import INBOX, Request, check_text, node_is_dated, plan

if TYPE_CHECKING:
    from brain.connectors import Status
    from brain.documents import SyncReport
    from brain.recalls import ImportReport
    from brain.sections import Section

if TYPE_CHECKING:
    from brain.sleep import SleepReport
    from brain.splits import Suggestion

Progress = Callable[[int, int], None]
NamesByTitle = dict[str, list[str]]  # a folder's note file names by normalised title


@dataclass
class Brain:
    """A vault opened for use: files, caches, lock and clock."""

    root: Path
    settings: settings_mod.Settings
    clock: Clock = field(default_factory=SystemClock)
    partition: str = ""
    # Opened for a model (the MCP server): private and local-only notes and other partitions
    # do not exist for it — not in recall, lists, counts, expand or forget.
    for_model: bool = False
    store: NoteStore = field(init=False)
    caches: Caches = field(init=False)
    lock: WriterLock = field(init=False)
    embedder: Embedder | None = None
    catch_up_every: float = 0.0  # seconds between walks for hand edits; 0: before every read
    _last_walk: float = field(default=-1e9, init=False)
    journal: Journal = field(init=False)
    node_index: NodeIndex = field(init=False)
    changes: gitvault.Autocommit = field(init=False)  # the vault under git (gitvault.py)
    _bulk_names: dict[str, NamesByTitle] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.partition = self.partition or self.settings.default_partition
        self.store = NoteStore(self.root)
        keep_private(self.root / CACHE_DIR)
        self.lock = WriterLock(self.root / CACHE_DIR / "writer.lock")
        self.journal = Journal(self.root / CACHE_DIR / "events.jsonl")
        self.changes = gitvault.Autocommit(self.root, self.settings, self.lock)
        folder = self.root / CACHE_DIR
        self._open_caches(folder)
        if self._ensure_caches():
            return  # just rebuilt from the files: nothing more to catch up with
        if self.node_index.stale:
            with self.lock.hold():
                self.node_index.resume(self.store)
        if self.changes.enabled:
            gitvault.regenerate_after_merge(self)

    def _ensure_caches(self, *, probe: bool = True) -> bool:
        """Rebuild caches that may not be served (missing, half made, of another schema, empty
        beside a full catalog); True if it did. Idempotent and safe from any number of
        processes at once: the check is made again under the writer lock, the one place
        anything is created, deleted or rebuilt, so the first process repairs and the others
        wait and find nothing left to do.
        """
        if probe and not self.caches.problems():
            return False
        with self.lock.hold():
            # Another process may have repaired (or begun on) them while we waited for the lock.
            self.caches.reopen_fulltext()
            if self.caches.fulltext.problem is None and self.caches.text_pending():
                self.caches.flush_text()
            why = self.caches.problems()
            if not why:
                return False
            # A vault's first build (or one after `.brain/` was deleted) is no news for doctor.
            first = self.caches.catalog.info(REBUILDING) == "new"
            if self.caches.fulltext.problem is not None:
                self.caches.fulltext.create()
            self.reindex(embed=False)
            if not first:
                when = iso(self.clock.now())
                self.caches.catalog.set_info(REBUILT, f"{when}: {'; '.join(why)}")
            return True

    def _open_caches(self, folder: Path) -> None:
        self.caches = Caches(folder, embedder=self.embedder)
        self.node_index = NodeIndex(self.root, self.caches.catalog)
        self.caches.listeners.append(self.node_index.on_change)

    def close(self) -> None:
        self.caches.close()

    # writing -----------------------------------------------------------------
    @recorded(lambda note, a: f"remember {title_of(note)}")
    def remember(
        self,
        text: str,
        *,
        title: str | None = None,
        node: str | None = None,
        tags: Sequence[str] = (),
        kind: str | None = None,
        source: dict[str, Any] | None = None,
    ) -> Note:
        """Store a memory; what happens depends on the note kind (see writing.py)."""
        check_text(text, self.settings.max_text_bytes)
        clean_tags = tuple(_check_tag(t) for t in tags)
        request = Request(
            text=text, partition=self.partition, node=node, title=title, kind=kind,
            tags=clean_tags, source=source,
        )  # fmt: skip
        with self.lock.hold():
            check_writable(self.root, self.partition)
            # No catch-up walk here: plan() reads the current file from disk, so hand edits
            # are kept, and a walk per write would make ingesting quadratic. Only a note
            # written by hand under this very title must be known before deduplicating.
            if title is not None and not node_is_dated(node):
                self._refresh_title(f"{self.partition}/{node or INBOX}", title)
            note = plan(request, self.store, self.caches.catalog, self.clock.now(), self.place)
            if self.for_model and note.visibility != "normal":
                raise InvalidInput(
                    f"title {note.title!r} belongs to a note the person keeps to themselves",
                    "remember it under another title",
                )
            # A write is a touch: it reactivates a dormant or archived note, and warms a cold one.
            return self.save(self.touched(defining.mark(note, text)))

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Many writes in a row (imports, benchmarks): the lock is taken once, node index
        files are written once at the end, and each folder is fsynced once at the end.

        Every note file is still written whole (temp, fsync, rename); a crash inside the block
        may lose the last renames, never tear a file, and the next catch-up repairs the caches.
        Placement inside the block sees the node indexes as they were when it began.
        """
        if self._bulk_names is not None:  # nested: the outer block does it all
            yield
            return
        self._bulk_names = {}
        try:
            with self.lock.hold(), self.node_index.batch(), deferred_dir_sync():
                yield
        finally:
            self._bulk_names = None

    def place(self, request: Request) -> str:
        """The node for a memory given no --node: its best-matching topic, else the inbox."""
        from brain.scoping import place

        return place(
            self.node_index, self.caches.catalog, request.partition, request.text, request.title
        )

    def save(self, note: Note) -> Note:
        """Write a note atomically and bring every cache in step. Callers hold the lock.

        A note saved under a new path has moved (e.g. back from the cold tier): the old file goes.
        """
        assert self.lock.held, "save() needs the writer lock"
        # The one place every write passes: an archived partition is read-only, whoever asks.
        check_writable(self.root, note.partition)
        before = self.caches.catalog.get(note.id) if note.id else None
        data = self.store.write(note)
        self.caches.put_note(note, data, self.store.path(note.path).stat())
        if before is not None and before.path != note.path:
            tiers.moved(self, before, note)
        elif before is None and note.supersedes:
            self.record_event("corrected", note.supersedes, note, detail=note.id)
        return note

    def delete(self, note: Note) -> list[str]:
        """Remove a note file and everything cached about it. Callers hold the lock."""
        assert self.lock.held, "delete() needs the writer lock"
        self.store.delete(note.path)
        current = self.caches.catalog.get(note.id)
        if current is not None and current.path != note.path:
            # An old location of a note that lives elsewhere now: only the file row goes.
            self.caches.catalog.drop_file(note.path)
            return []
        self.record_event("forgotten", note.id, note, anonymous=True)
        return self.caches.drop_note(note.id, note.path)

    # A forgotten note's title stays out of git's history: the commit names the id only.
    @recorded(lambda gone, a: f"forget {a['note_id']} ({len(gone)} objects)")
    def forget(self, note_id: str, mode: str = "auto") -> list[str]:
        """Forget a note (see forgetting.py); returns the object ids removed from the caches.

        mode: `auto` (a plain note and its children; the current version of a corrected note
        is reverted to the previous one), `version` (that version only), `history` (all).
        """
        check_writable(self.root, self.row(note_id).partition)
        return forgetting.forget(self, note_id, mode)[1]

    def forget_plan(self, note_id: str, mode: str = "auto") -> forgetting.ForgetPlan:
        """What `forget` would remove, restore and relink, without changing anything."""
        self.catch_up()
        return forgetting.plan(self, note_id, mode)

    @recorded(lambda note, a: f"correct {title_of(note)}, superseding {a['note_id']}")
    def correct(self, note_id: str, text: str, *, source: dict[str, Any] | None = None) -> Note:
        """A new version of a note that supersedes it; the old one is kept as history."""
        return corrections.correct(self, note_id, text, source)

    def history(self, note_id: str) -> list[Note]:
        """Every version of a note, oldest first."""
        return corrections.history(self, note_id)

    @recorded(lambda _, a: f"relate {a['src']} {a['kind']} {a['dst']}")
    def relate(self, src: str, kind: str, dst: str, weight: float | None = None) -> Note:
        """Add a typed relation from one note to another (stored in the source's front-matter)."""
        return relations.relate(self, src, kind, dst, weight)

    @recorded(lambda _, a: f"unrelate {a['src']} {a['kind']} {a['dst']}")
    def unrelate(self, src: str, kind: str, dst: str) -> Note:
        """Remove a typed relation."""
        return relations.unrelate(self, src, kind, dst)

    def links(self, note_id: str) -> relations.Links:
        """A note's outgoing and incoming relations."""
        self.catch_up()
        return relations.links(self.caches.catalog, self.row(note_id).note_id)

    @recorded(lambda note, a: f"graph {note.path}")
    def write_graph(self) -> Note:
        """Regenerate `<partition>/Insights/Graph.md` from the relations."""
        return graph.write_graph(self)

    # ingestion: connectors, transcripts, exports (documents.py, recalls.py) ----
    @recorded(lambda report, a: f"connect {report.connector}")
    def connect(self, path: Path, name: str | None = None) -> SyncReport:
        """Ask the person at the terminal, then read the folder as document notes."""
        from brain import documents

        return documents.connect(self, path, name)

    def connectors(self) -> list[Status]:
        from brain import documents

        return documents.statuses(self)

    @recorded(lambda n, a: f"disconnect {a['name']} ({n} notes)")
    def disconnect(self, name: str, *, forget: bool = False) -> int:
        from brain import documents

        return documents.disconnect(self, name, forget=forget)

    @recorded(lambda reports, a: f"sync {', '.join(r.connector for r in reports) or 'nothing'}")
    def sync(self, names: Sequence[str] = ()) -> list[SyncReport]:
        from brain import documents

        return documents.sync(self, list(names))

    @recorded(lambda report, a: f"ingest {Path(a['path']).name}")
    def ingest(self, path: Path) -> ImportReport:
        """Store one transcript file (seed JSON or Markdown chat) as a recall note."""
        from brain import recalls

        return recalls.store_transcripts(self, [recalls.read_transcript(path)], "ingest")

    @recorded(lambda report, a: f"import a {a['platform']} export")
    def import_export(
        self, platform: str, path: Path, progress: Progress | None = None
    ) -> ImportReport:
        """Store every conversation of a ChatGPT or Claude export as a recall note."""
        from brain import recalls

        found = recalls.read_export(platform, path)
        return recalls.store_transcripts(self, found, "import", progress)

    def section(self, object_id: str) -> tuple[Note, Section]:
        """A chunk or turn (`<note id>#<n>`): its note and its section record."""
        from brain.sections import sections_of

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
        self.journal.append(Event(iso(self.clock.now()), kind, note_id, title, note.partition,
                                  note.visibility, detail))  # fmt: skip

    # reading -----------------------------------------------------------------
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
        row = self.caches.catalog.get(object_id.split("#", 1)[0])
        if row is not None and self.for_model and not self.shows(row):
            row = None
        if row is None:
            raise NotFound(f"no note with id {object_id}", "check the id with `brain list`")
        return row

    def shows(self, row: ObjectRow) -> bool:
        """Whether this Brain may show the object (always, unless opened for a model)."""
        if not self.for_model:
            return True
        return row.visibility == "normal" and row.partition == self.partition

    @recorded(lambda note, a: f"set {a['field']}={a['value']} on {title_of(note)}")
    def set_field(self, note_id: str, field: str, value: str) -> Note:
        """The person's levers: visibility, defining, eternal, status (see levers.py)."""
        from brain.levers import set_field

        return set_field(self, note_id, field, value)

    @recorded(quiet=True)  # a touch rides along with the next commit
    def expand(self, note_id: str, *, touch: bool = True) -> Note:
        """The whole note, read for use: this counts as a touch (it keeps the note alive)."""
        self.catch_up()
        note = self.get(note_id)
        # History stays byte for byte as it was; an archived partition is read-only.
        if not touch or note.status == "superseded" or is_archived(self.root, note.partition):
            return note
        with self.lock.hold():
            note = self.get(note_id)
            return self.save(self.touched(note))

    def touched(self, note: Note) -> Note:
        """The note marked as used now; a dormant or archived note comes back to life."""
        changes: dict[str, Any] = {"touched": iso(self.clock.now())}
        if note.status in ("dormant", "archived"):
            changes["status"] = "active"
            kept = [t for t in note.tags if t not in ("archived", "closed")]
            changes["tags"] = kept or None
        if is_cold(note.path):
            note = note.with_path(tiers.free_hot_path(self.store, note.path))
        return note.with_meta(**changes)

    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        node: str | None = None,
        include_superseded: bool = False,
        mode: str = "hybrid",
        defining_first: bool = False,
        scope: str | None = None,
    ) -> list[Hit]:
        """The few objects that best answer the query, best first.

        `scope`: `all` (the default), `auto` (the nodes whose index.json match), or one node.
        """
        if not query or not query.strip():
            raise InvalidInput("query is empty; say what to recall")
        k = self.settings.recall_k if k is None else k
        if k < 1 or k > 100:
            raise InvalidInput(f"-k must be between 1 and 100, not {k}")
        if mode not in MODES:
            raise InvalidInput(f"unknown mode {mode!r}; allowed: {', '.join(MODES)}")
        check_recallable(self.root, self.partition)
        self.catch_up()
        # Scoping (precision warming, scoping.py): the nodes to search, None for all of them.
        from brain.scoping import resolve_scope

        filters = Filters(
            partition=self.partition,
            node=check_node(node) if node else None,
            nodes=resolve_scope(self, query, scope),
            exclude_status=() if include_superseded else ("superseded",),
            visibility=("normal",) if self.for_model else None,
        )
        retrievers = self._retrievers(mode)
        self.flush(vectors=any(isinstance(r, VectorRetriever) for r in retrievers))
        lists = {r.name: r.search(query, max(k * 5, CANDIDATES), filters) for r in retrievers}
        floors = {r.name: r.floor for r in retrievers if isinstance(r, VectorRetriever)}
        fused = fuse(lists, floors) if len(lists) > 1 else next(iter(lists.values()))
        briefs = load_rows(self.caches.catalog, [oid for oid, _ in fused])
        if len(lists) > 1:
            fused = with_context(fused, briefs)
        ranked = rank(fused, briefs)
        best = (defining.defining_first(ranked, briefs) if defining_first else ranked)[:k]
        rows = self.caches.catalog.get_many([oid for oid, _ in best])
        flags = corrections.suspicion_flags(self.caches.catalog, [rows[oid] for oid, _ in best])
        hits = []
        for oid, score in best:
            stored = self.caches.fulltext.stored(oid)
            body = stored["body"] if stored else ""
            hits.append(to_hit(rows[oid], score, body, query, flags.get(oid, ())))
        return hits

    def _retrievers(self, mode: str) -> list[Retriever]:
        text = TextRetriever(self.caches.fulltext)
        if mode == "text":
            return [text]
        if self.embedder is None:
            if mode == "vector":
                raise InvalidInput(
                    "vector recall needs an embedder; brain.yaml says `embedder: none`",
                    "set `embedder: minilm` and run `brain reindex`",
                )
            return [text]
        vector = VectorRetriever(self.caches, self.embedder)
        return [vector] if mode == "vector" else [text, vector]

    def list(
        self,
        *,
        node: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        defining_only: bool = False,
    ) -> list[ObjectRow]:
        """Notes in this partition, newest first, optionally by node, status, kind or defining."""
        self.catch_up()
        where = ["partition=?", "id=note_id"]
        params: list[Any] = [self.partition]
        if self.for_model:
            where.append("visibility='normal'")
        if node:
            node = check_node(node)
            where.append("(node=? OR node LIKE ?)")
            params += [node, node.replace("%", r"\%") + "/%"]
        if status:
            if status not in STATUSES:
                raise InvalidInput(f"unknown status {status!r}; allowed: {', '.join(STATUSES)}")
            where.append("status=?")
            params.append(status)
        if kind:
            where.append("kind=?")
            params.append(kind)
        if defining_only:
            where.append("defining IS NOT NULL")
        sql = " AND ".join(where) + " ORDER BY created DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return list(self.caches.catalog.select(sql, params))

    # keeping caches true to the files -----------------------------------------
    def flush(self, *, vectors: bool = True) -> None:
        """Apply queued cache changes (from any process) before searching; `vectors=False`
        leaves the embedding for a search that needs it (full text never loads the model)."""
        embed = vectors and self.caches.vectors_pending()
        if self.caches.text_pending() or embed:
            with self.lock.hold():
                self.caches.flush_text()
                if embed:
                    self.caches.flush_vectors()
        try:
            self.caches.fulltext.index.reload()
            whole = len(self.caches.fulltext) > 0 or not self.caches.catalog.count()
        except (AttributeError, OSError, ValueError):  # its folder went away under this process
            whole = False
        if not whole:
            self._ensure_caches(probe=False)
        if vectors and self.caches.vectors_on and self.caches.vector_problem() is not None:
            with self.lock.hold():
                if self.caches.vector_problem() is not None:  # not mended while we waited
                    self.caches.rebuild_vectors()

    def catch_up(self, *, force: bool = False) -> CatchUp:
        """Bring the caches in step with hand edits, new files and deletions on disk.

        Other brain processes record their writes in the shared caches; the walk is only for
        changes made by hand. A long-lived process may set `catch_up_every` to walk at most
        that often (a watcher covers the rest); a command-line run walks every time.
        """
        if not force and self.catch_up_every > 0:
            now = time.monotonic()
            if now - self._last_walk < self.catch_up_every:
                return CatchUp()
            self._last_walk = now
        known = self.caches.catalog.files()
        todo, seen = [], set()
        for rel, st in self.store.walk():
            seen.add(rel)
            row = known.get(rel)
            if row is None or row.mtime_ns != st.st_mtime_ns or row.size != st.st_size:
                todo.append(rel)
        gone = [p for p in known if p not in seen]
        if not todo and not gone:
            return CatchUp()
        with self.lock.hold():
            return self._apply(todo, gone)

    # After a pull or hand edits the caches rewrite index.json: brain's own change, committed.
    @recorded(lambda _, a: f"catch up with {len(a['todo']) + len(a['gone'])} changed file(s)")
    def _apply(self, todo: Sequence[str], gone: Sequence[str]) -> CatchUp:
        self.changes.leave([*todo, *gone])  # the person's own changes stay theirs to commit
        with self.node_index.batch():
            return self._apply_files(todo, gone)

    def _apply_files(self, todo: Sequence[str], gone: Sequence[str]) -> CatchUp:
        return catchup.apply_files(self, todo, gone)

    def _refresh_title(self, folder: str, title: str) -> None:
        """Catch up the files of a folder whose names match a title (cheap: no stat calls)."""
        for name in self._names_by_title(folder).get(normalise_title(title), ()):
            rel = f"{folder}/{name}"
            st = self.store.path(rel).stat()
            row = self.caches.catalog.file(rel)
            if row is None or row.mtime_ns != st.st_mtime_ns or row.size != st.st_size:
                self._index_file(rel)

    def _names_by_title(self, folder: str) -> NamesByTitle:
        """A folder's note file names by normalised title. Inside `bulk()` a folder is listed
        once per block: the lock is held, so its new files are ours and already cached (a
        listing per titled write made ingesting quadratic: 26k files in one folder at 100k)."""
        if self._bulk_names is not None and folder in self._bulk_names:
            return self._bulk_names[folder]
        found: NamesByTitle = {}
        try:
            for entry in os.scandir(self.store.path(folder)):
                if entry.name.endswith(".md"):
                    found.setdefault(normalise_title(entry.name[:-3]), []).append(entry.name)
        except (FileNotFoundError, NotADirectoryError, BrainError):
            pass
        if self._bulk_names is not None:
            self._bulk_names[folder] = found
        return found

    def _index_file(self, rel: str) -> str:
        """Bring one file's cache entries in step: `changed`, `same`, `broken` or `gone`."""
        return catchup.index_file(self, rel)

    @recorded(lambda count, a: f"reindex ({count} notes)")
    def reindex(self, progress: Progress | None = None, *, embed: bool = True) -> int:
        """Rebuild every cache from the files; returns the number of notes indexed."""
        with self.lock.hold(), self.node_index.rebuilding(self.store):
            self.caches.clear()
            files = list(self.store.walk())
            self.changes.leave([rel for rel, _st in files])  # hand-changed files stay the person's
            count = 0
            for done, (rel, _st) in enumerate(files, 1):
                if self._index_file(rel) == "changed":
                    count += 1
                if progress:
                    progress(done, len(files))
            self.caches.flush_text()
            self.caches.rebuilt()
            if embed and self.caches.vectors_on:
                self.caches.flush_vectors()
            return count

    def doctor(self) -> DoctorReport:
        """Look without touching: broken notes, files the caches don't know, stale caches."""
        from brain.doctor import examine

        return examine(self)

    # upkeep ------------------------------------------------------------------
    @recorded(lambda report, a: f"sleep — {gitvault.sleep_summary(report)}")
    def sleep(
        self, *, dry_run: bool = False, waiting: Callable[[], None] | None = None
    ) -> SleepReport:
        """One pass of the sleep cycle at the clock's time (see sleep.py)."""
        from brain import sleep

        return sleep.run(self, self.clock.now(), dry_run=dry_run, waiting=waiting)

    @recorded(lambda move, a: f"move {a['note_id']} to the {a['tier']} tier")
    def tier_move(self, note_id: str, tier: str) -> tiers.Move | None:
        """Move a note to the hot or cold tier, byte for byte; None if it is already there."""
        return tiers.move(self, note_id, tier)

    def tier_status(self) -> tiers.TierStatus:
        return tiers.status(self)

    @recorded(lambda dict_id, a: f"train cold-tier dictionary {dict_id}")
    def tier_retrain(self) -> int:
        """Train a new cold-tier dictionary; returns its id (old ones are kept)."""
        return tiers.retrain(self)

    @recorded(lambda result, a: f"split {a['node']}")
    def split(self, node: str, *, apply: bool = False) -> tuple[Suggestion, Sequence[tiers.Move]]:
        """The suggested split of a crowded node; `apply` moves the files (ids unchanged)."""
        from brain import splits

        return splits.split(self, node, apply=apply)

    # the vault under git (gitvault.py) -------------------------------------------
    def git_log(self, note_id: str | None = None, limit: int = 20) -> Sequence[githistory.Entry]:
        """Recent commits, newest first: all, or one note's (found by id, across renames)."""
        path = None
        if note_id is not None:
            row = self.row(note_id)
            if row.visibility == "local-only":
                raise InvalidInput(f"note {note_id} is local-only; git never carries it")
            path = row.path
        return githistory.log(self.root, path, limit)

    def git_undo(self) -> tuple[str, str]:
        """Revert brain's last commit; returns (the commit undone, the commit that undoes it)."""
        githistory.require_repo(self.root)
        with self.lock.hold():
            self.changes.commit()  # what is pending first: undo names brain's real last change
            target = githistory.undo_target(self.root)
            made = githistory.undo(self.root, target)
            self.catch_up(force=True)
        return target, made

    def notes(self) -> Iterator[Note]:
        """Every parseable note of the vault (all partitions), read from disk."""
        for rel, _st in self.store.walk():
            try:
                yield self.store.read(rel)
            except BrokenNote:
                continue


def _check_tag(tag: str) -> str:
    tag = tag.strip().lstrip("#")
    check_segment(tag, "tag")
    return tag


def open_vault(
    root: Path,
    *,
    clock: Clock | None = None,
    partition: str | None = None,
    embedder: Embedder | str | None = "settings",
    model_cache: Path | None = None,
) -> Brain:
    """Open an existing vault (raises VaultMissing with the `brain init` hint).

    The embedder is the one brain.yaml names unless one is passed (None: full text only).
    """
    loaded = settings_mod.load(root)
    if isinstance(embedder, str):
        cache = model_cache or settings_mod.model_cache_dir(os.environ, Path.home())
        embedder = load_embedder(loaded.embedder, cache)
    brain = Brain(
        root=root,
        settings=loaded,
        clock=clock or SystemClock(),
        partition=partition or "",
        embedder=embedder,
    )
    if brain.partition not in brain.store.partitions():
        check_segment(brain.partition, "partition")
        raise NotFound(
            f"no partition {brain.partition!r} in {root}",
            f"partitions: {', '.join(brain.store.partitions()) or 'none'}",
        )
    return brain
