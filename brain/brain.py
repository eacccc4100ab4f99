"""Brain: the one coordinator that the CLI and the MCP server call."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brain import settings as settings_mod
from brain.clock import Clock, SystemClock
from brain.errors import BrokenNote, InvalidInput, NotFound
from brain.indexes.catalog import ObjectRow
from brain.indexes.fulltext import Filters
from brain.indexing import Caches
from brain.model import STATUSES, Hit, Note, is_id, iso
from brain.nodeindex import NodeIndex
from brain.recall import Retriever, TextRetriever, load_rows, rank, to_hit
from brain.vault.files import WriterLock
from brain.vault.paths import CACHE_DIR, check_node, check_segment
from brain.vault.store import NoteStore, content_hash
from brain.writing import Request, check_text, plan

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class CatchUp:
    """What a catch-up with the files found: hand edits, new files, deletions, breakage."""

    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()


@dataclass(frozen=True)
class DoctorReport:
    broken: tuple[tuple[str, str], ...] = ()  # (path, reason)
    unknown: tuple[str, ...] = ()  # files on disk the caches do not know
    changed: tuple[str, ...] = ()  # files changed since the caches saw them
    missing: tuple[str, ...] = ()  # cached files no longer on disk
    stale: tuple[str, ...] = ()  # problems with the caches themselves

    @property
    def ok(self) -> bool:
        return not (self.broken or self.unknown or self.changed or self.missing or self.stale)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "broken": [{"path": p, "reason": r} for p, r in self.broken],
            "unknown": list(self.unknown),
            "changed": list(self.changed),
            "missing": list(self.missing),
            "stale": list(self.stale),
        }


@dataclass
class Brain:
    """A vault opened for use: files, caches, lock and clock."""

    root: Path
    settings: settings_mod.Settings
    clock: Clock = field(default_factory=SystemClock)
    partition: str = ""
    store: NoteStore = field(init=False)
    caches: Caches = field(init=False)
    lock: WriterLock = field(init=False)
    retrievers: list[Retriever] = field(init=False)
    node_index: NodeIndex = field(init=False)

    def __post_init__(self) -> None:
        self.partition = self.partition or self.settings.default_partition
        self.store = NoteStore(self.root)
        self.caches = Caches(self.root / CACHE_DIR)
        self.node_index = NodeIndex(self.root, self.caches.catalog)
        self.caches.listeners.append(self.node_index.on_change)
        self.lock = WriterLock(self.root / CACHE_DIR / "writer.lock")
        self.retrievers = [TextRetriever(self.caches.fulltext)]
        if self.caches.catalog.stale or (
            self.caches.fulltext.fresh and self.caches.catalog.count() > 0
        ):
            self.reindex()
        elif self.node_index.stale:
            with self.lock.hold():
                self.node_index.resume(self.store)

    def close(self) -> None:
        self.caches.close()

    # writing -----------------------------------------------------------------
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
            self.catch_up()
            note = plan(request, self.store, self.caches.catalog, self.clock.now(), self.place)
            return self.save(note)

    def place(self, request: Request) -> str:
        """The node for a memory given no --node: its best-matching topic, else the inbox."""
        from brain.scoping import place

        return place(
            self.node_index, self.caches.catalog, request.partition, request.text, request.title
        )

    def save(self, note: Note) -> Note:
        """Write a note atomically and bring every cache in step. Callers hold the lock."""
        assert self.lock.held, "save() needs the writer lock"
        data = self.store.write(note)
        self.caches.put_note(note, data, self.store.path(note.path).stat())
        return note

    def delete(self, note: Note) -> list[str]:
        """Remove a note file and everything cached about it. Callers hold the lock."""
        assert self.lock.held, "delete() needs the writer lock"
        self.store.delete(note.path)
        return self.caches.drop_note(note.id, note.path)

    def forget(self, note_id: str) -> list[str]:
        """Remove a note completely; returns the object ids removed from the caches."""
        with self.lock.hold():
            self.catch_up()
            note = self.get(note_id)
            return self.delete(note)

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
        if row is None:
            raise NotFound(f"no note with id {object_id}", "check the id with `brain list`")
        return row

    def expand(self, note_id: str, *, touch: bool = True) -> Note:
        """The whole note, read for use: this counts as a touch (it keeps the note alive)."""
        self.catch_up()
        note = self.get(note_id)
        if not touch:
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
        return note.with_meta(**changes)

    def recall(
        self,
        query: str,
        *,
        k: int | None = None,
        node: str | None = None,
        include_superseded: bool = False,
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
        self.catch_up()
        # Scoping (precision warming, scoping.py): the nodes to search, None for all of them.
        from brain.scoping import resolve_scope

        filters = Filters(
            partition=self.partition,
            node=check_node(node) if node else None,
            nodes=resolve_scope(self, query, scope),
            exclude_status=() if include_superseded else ("superseded",),
        )
        self.flush()
        candidates = self.retrievers[0].search(query, k * 3, filters)
        rows = load_rows(self.caches.catalog, [oid for oid, _ in candidates])
        ranked = rank(candidates, rows)[:k]
        hits = []
        for oid, score in ranked:
            stored = self.caches.fulltext.stored(oid)
            hits.append(to_hit(rows[oid], score, stored["body"] if stored else "", query))
        return hits

    def list(
        self,
        *,
        node: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
    ) -> list[ObjectRow]:
        """Notes in this partition, newest first, optionally by node, status or kind."""
        self.catch_up()
        where = ["partition=?", "id=note_id"]
        params: list[Any] = [self.partition]
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
        sql = " AND ".join(where) + " ORDER BY created DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return list(self.caches.catalog.select(sql, params))

    # keeping caches true to the files -----------------------------------------
    def flush(self) -> None:
        """Apply queued cache changes (from any process) before searching."""
        if self.caches.text_pending():
            with self.lock.hold():
                self.caches.flush_text()
        self.caches.fulltext.index.reload()

    def catch_up(self) -> CatchUp:
        """Bring the caches in step with hand edits, new files and deletions on disk."""
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

    def _apply(self, todo: Sequence[str], gone: Sequence[str]) -> CatchUp:
        with self.node_index.batch():
            return self._apply_files(todo, gone)

    def _apply_files(self, todo: Sequence[str], gone: Sequence[str]) -> CatchUp:
        changed, broken, removed = [], [], []
        for rel in gone:
            row = self.caches.catalog.file(rel)
            if row is None or self.store.exists(rel):
                continue
            if row.note_id:
                self.caches.drop_note(row.note_id, rel)
            else:
                self.caches.catalog.drop_file(rel)
            removed.append(rel)
        for rel in todo:
            outcome = self._index_file(rel)
            if outcome == "broken":
                broken.append(rel)
            elif outcome == "changed":
                changed.append(rel)
        return CatchUp(tuple(changed), tuple(removed), tuple(broken))

    def _index_file(self, rel: str) -> str:
        path = self.store.path(rel)
        try:
            data = path.read_bytes()
            st = path.stat()
        except FileNotFoundError:
            return "gone"
        known = self.caches.catalog.file(rel)
        if known is not None and known.hash == content_hash(data) and known.error is None:
            self.caches.catalog.put_file(known.__class__(
                rel, known.note_id, known.hash, st.st_mtime_ns, st.st_size, None))  # fmt: skip
            return "same"
        try:
            note = self.store.parse(rel, data)
        except BrokenNote as exc:
            self.caches.put_broken(rel, data, st, exc.message)
            return "broken"
        if not note.id:
            note = self._adopt(note, st)
            data = self.store.write(note)
            st = path.stat()
        other = self.caches.catalog.get(note.id)
        if other is not None and other.path != rel and self.store.exists(other.path):
            reason = f"{rel}: id {note.id} is also used by {other.path}; give one of them a new id"
            self.caches.put_broken(rel, data, st, reason)
            return "broken"
        self.caches.put_note(note, data, st)
        return "changed"

    def _adopt(self, note: Note, st: os.stat_result) -> Note:
        """A Markdown file dropped in by hand gets an id, keeping its text as it is."""
        from brain.model import new_id

        now = self.clock.now()
        title = Path(note.path).stem
        stamp = iso(now)
        meta = {"id": new_id(now), "title": title, "kind": "titled", "status": "active",
                "created": stamp, "touched": stamp, "source": {"via": "hand"}}  # fmt: skip
        return Note(meta=meta, body=note.body, path=note.path)

    def reindex(self, progress: Progress | None = None) -> int:
        """Rebuild every cache from the files; returns the number of notes indexed."""
        with self.lock.hold(), self.node_index.rebuilding(self.store):
            self.caches.clear()
            files = list(self.store.walk())
            count = 0
            for done, (rel, _st) in enumerate(files, 1):
                if self._index_file(rel) == "changed":
                    count += 1
                if progress:
                    progress(done, len(files))
            self.caches.flush_text()
            return count

    def doctor(self) -> DoctorReport:
        """Look without touching: broken notes, files the caches don't know, stale caches."""
        known = self.caches.catalog.files()
        broken, unknown, changed, seen = [], [], [], set()
        for rel, _st in self.store.walk():
            seen.add(rel)
            data = self.store.read_bytes(rel)
            try:
                self.store.parse(rel, data)
            except BrokenNote as exc:
                broken.append((rel, exc.message))
                continue
            row = known.get(rel)
            if row is None:
                unknown.append(rel)
            elif row.error is not None:
                broken.append((rel, row.error))
            elif row.hash != content_hash(data):
                changed.append(rel)
        missing = sorted(p for p in known if p not in seen)
        stale = []
        self.flush()
        objects = self.caches.catalog.count()
        in_text = len(self.caches.fulltext)
        if objects != in_text:
            stale.append(
                f"full-text index holds {in_text} objects, the catalog {objects}; "
                "run `brain reindex`"
            )
        return DoctorReport(tuple(broken), tuple(unknown), tuple(changed), tuple(missing),
                            tuple(stale))  # fmt: skip

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


def open_vault(root: Path, *, clock: Clock | None = None, partition: str | None = None) -> Brain:
    """Open an existing vault (raises VaultMissing with the `brain init` hint)."""
    loaded = settings_mod.load(root)
    brain = Brain(root=root, settings=loaded, clock=clock or SystemClock(),
                  partition=partition or "")  # fmt: skip
    if brain.partition not in brain.store.partitions():
        check_segment(brain.partition, "partition")
        raise NotFound(f"no partition {brain.partition!r} in {root}",
                       f"partitions: {', '.join(brain.store.partitions()) or 'none'}")  # fmt: skip
    return brain
