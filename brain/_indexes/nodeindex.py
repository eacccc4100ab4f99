"""Per-node index.json files: made from the node statistics, kept in step on every write.

Every folder inside a partition is a node. A write updates the statistics of the note's node and
ancestors (`brain/_indexes/nodestats.py`) and regenerates their index.json from them, so no write
ever re-reads the notes of a large node. `rebuild` recomputes everything from the note files.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from brain import _terms as keywords
from brain._errors import BrokenNote, InvalidInput
from brain._indexes.nodestats import ENTITY, KEYWORD, NodeStats, NoteStats
from brain._indexes.ports import NotesPort, SqlCatalogPort
from brain._indexes.rows import Settled
from brain._model import LOCAL_ONLY, Status, Visibility
from brain._settings import SETTINGS_FILE
from brain._vault.files import atomic_write, remove_file
from brain._vault.paths import inside

if TYPE_CHECKING:
    from brain._indexes.rows import IndexObject

INDEX_FILE = "index.json"
TOP_LEVEL_THRESHOLD = 5  # a node right under the partition gets an index at 5 memories
NESTED_THRESHOLD = 10  # a node below another gets its own index at 10
AGGREGATE_KEYWORDS = 20
SUB_NODE_KEYWORDS = 8
KEY_ENTITIES = 12

# node_id is derived from the node's place, so it never churns while the folder keeps its path.
_NODE_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "brain:node")


def threshold(node: str) -> int:
    return TOP_LEVEL_THRESHOLD if "/" not in node else NESTED_THRESHOLD


def node_id(partition: str, node: str) -> str:
    return str(uuid.uuid5(_NODE_NAMESPACE, f"{partition}/{node}"))


def index_path(partition: str, node: str) -> str:
    return f"{partition}/{node}/{INDEX_FILE}"


def note_stats(objects: Sequence[IndexObject]) -> NoteStats | None:
    """A note's contribution, from all its objects; None if it is not counted at all.

    Local-only notes are left out entirely (index files travel with git; they must not).
    Superseded versions are history, not memories. Private notes count, but lend no words.
    """
    note = next((o.row for o in objects if o.row.id == o.row.note_id), objects[0].row)
    local = note.path.startswith(LOCAL_ONLY + "/") or note.visibility == LOCAL_ONLY
    if local or note.status == Status.SUPERSEDED or not note.node:
        return None
    if note.visibility == Visibility.PRIVATE:
        return NoteStats(note.partition, note.node, note.created[:10], (), ())
    text = keywords.memory_text(o.text for o in objects)
    return NoteStats(
        note.partition,
        note.node,
        note.created[:10],
        tuple(keywords.terms(note.title, text)),
        tuple(keywords.entities(f"{note.title}\n{text}")),
    )


@dataclass
class NodeIndex:
    """Node statistics in the catalog database and the index.json files made from them."""

    root: Path
    catalog: SqlCatalogPort
    where: IndexFiles | None = None  # None: in the vault's folders (IndexFolders)
    files: IndexFiles = field(init=False)
    stats: NodeStats = field(init=False)
    last_settled: Settled = field(default_factory=Settled, init=False)
    _depth: int = field(default=0, init=False)
    _dirty: set[tuple[str, str]] = field(default_factory=set, init=False)
    # Inside a batch, each index file as first read: none is written before the batch ends.
    _batch_read: dict[str, dict[str, Any] | None] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.files = self.where or IndexFolders(self.root)
        self.stats = NodeStats(self.catalog)

    @property
    def stale(self) -> bool:
        return self.stats.stale

    # keeping in step ---------------------------------------------------------------
    def on_change(self, objects: Sequence[IndexObject], gone: Sequence[str]) -> None:
        """The `Caches` listener: a note's objects were (re)written, or ids were removed."""
        by_note: dict[str, list[IndexObject]] = {}
        for obj in objects:
            by_note.setdefault(obj.row.note_id, []).append(obj)
        with self.stats.transaction():
            for note_id, objs in by_note.items():
                self._dirty |= self.stats.put(note_id, note_stats(objs))
            for object_id in gone:
                if "#" not in object_id and object_id not in by_note:
                    self._dirty |= self.stats.put(object_id, None)
        if self._depth == 0:
            self.flush()

    def clear(self) -> None:
        self.stats.clear()
        self._dirty.clear()

    # batching ------------------------------------------------------------------
    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Regenerate touched index files once, at the end, rather than after every note."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._batch_read.clear()  # after an error too: the next batch reads afresh
        if self._depth == 0:
            self.flush()

    @contextlib.contextmanager
    def rebuilding(self, store: NotesPort) -> Iterator[None]:
        """Start the statistics from nothing; the body feeds every note (through the listener);
        then every index file is settled. Callers hold the vault lock."""
        self.clear()
        self._depth += 1
        try:
            with self.stats.tallying():
                yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._batch_read.clear()
        self.last_settled = self.settle(store.partitions())

    def resume(self, store: NotesPort) -> None:
        """On opening: statistics missing or from an older brain are rebuilt from the notes the
        catalog knows; if it knows none yet, the next catch-up feeds them note by note."""
        if self.catalog.note_count() == 0:
            self.clear()
        else:
            self.rebuild(store)

    def rebuild(self, store: NotesPort) -> Settled:
        """Recompute every statistic from the note files the catalog knows, then settle the files.

        Callers hold the vault lock.
        """
        from brain._indexes.objects import objects_of, text_hash

        with self.rebuilding(store), self.stats.transaction():
            for row in self.catalog.all_notes():
                try:
                    note = store.read(row.path)
                except (BrokenNote, FileNotFoundError):
                    continue
                self.on_change(objects_of(note, text_hash(note.body)), [])
        return self.last_settled

    # the files -------------------------------------------------------------------
    def flush(self) -> None:
        """Bring the index.json of every node touched since the last flush in step."""
        dirty, self._dirty = sorted(self._dirty), set()
        for partition, node in dirty:
            self.write(partition, node)

    def write(self, partition: str, node: str) -> str | None:
        """Write (or remove) one node's index.json; returns its path if the file changed."""
        rel = index_path(partition, node)
        if not self.files.owned(rel):
            return None
        doc = self.document(partition, node)
        current = self.files.current(rel)
        if doc is None:
            if current is None:
                return None
            self.files.drop(rel, partition)
            return rel
        data = render(doc)
        if current == data:
            return None
        self.files.put(rel, data)
        return rel

    def settle(self, partitions: Sequence[str]) -> Settled:
        """Write every index that should exist and remove every index.json that should not."""
        written, removed = [], []
        wanted = set()
        for partition in partitions:
            for node in self.indexed_nodes(partition):
                wanted.add(index_path(partition, node))
                if self.write(partition, node):
                    written.append(index_path(partition, node))
            for rel in self.files.listing(partition):
                if rel not in wanted:
                    self.files.drop(rel, partition)
                    removed.append(rel)
        self._dirty.clear()
        return Settled(tuple(written), tuple(removed))

    def indexed_nodes(self, partition: str) -> list[str]:
        """Nodes of a partition that have (or should have) an index.json."""
        return [c.node for c in self.stats.nodes(partition) if c.memories >= threshold(c.node)]

    def document(self, partition: str, node: str) -> dict[str, Any] | None:
        """The index of a node, or None if it holds too few memories for one."""
        count = self.stats.count(partition, node)
        if count is None or count.memories < threshold(node):
            return None
        top = self.stats.top
        sub_nodes = [
            {
                "name": child.node.rpartition("/")[2],
                "memory_count": child.memories,
                "keywords": top(partition, child.node, KEYWORD, SUB_NODE_KEYWORDS),
                "date_range": {"oldest": child.oldest, "newest": child.newest},
            }
            for child in self.stats.children(partition, node)
        ]
        doc: dict[str, Any] = {
            "node_id": node_id(partition, node),
            "node_name": node.rpartition("/")[2],
            "sub_nodes": sub_nodes,
            "aggregate_keywords": top(partition, node, KEYWORD, AGGREGATE_KEYWORDS),
            "key_entities": top(partition, node, ENTITY, KEY_ENTITIES),
            "total_memory_count": count.memories,
            "date_range": {"oldest": count.oldest, "newest": count.newest},
        }
        doc["summary"] = summary(doc)
        return doc

    def read(self, partition: str, node: str) -> dict[str, Any] | None:
        """A node's index.json as on disk (parsed once per version of the file). Inside a
        batch, as it was when first read in it: placing a bulk import's memories looked at
        every topic's file again for each (a path check and a stat each)."""
        rel = index_path(partition, node)
        if self._depth and rel in self._batch_read:
            return self._batch_read[rel]
        doc = self._read_file(rel)
        if self._depth:
            self._batch_read[rel] = doc
        return doc

    def _read_file(self, rel: str) -> dict[str, Any] | None:
        return self.files.load(rel)


class IndexFiles(Protocol):
    """Where the index.json files live: in the vault's folders (`IndexFolders`), or as rows
    of the hosted store (brain/_hosted/parts.py)."""

    def owned(self, rel: str) -> bool:
        """False for a path the index may not write (it leaves the vault)."""
        ...

    def current(self, rel: str) -> bytes | None: ...
    def put(self, rel: str, data: bytes) -> None: ...
    def drop(self, rel: str, partition: str) -> None: ...
    def listing(self, partition: str) -> Iterator[str]:
        """Every index.json inside a partition."""
        ...

    def load(self, rel: str) -> dict[str, Any] | None:
        """One index.json parsed (None if missing or not a JSON object)."""
        ...


@dataclass
class IndexFolders:
    """The index.json files in the vault's own folders."""

    root: Path
    _read_cache: dict[str, tuple[tuple[int, int], dict[str, Any]]] = field(
        default_factory=dict, init=False
    )

    def owned(self, rel: str) -> bool:
        """False for a path that leaves the vault (a folder replaced by a link out of it)."""
        try:
            inside(self.root, rel)
        except InvalidInput:
            return False
        return True

    def current(self, rel: str) -> bytes | None:
        try:
            return (self.root / rel).read_bytes()
        except FileNotFoundError:
            return None

    def put(self, rel: str, data: bytes) -> None:
        atomic_write(self.root / rel, data)

    def drop(self, rel: str, partition: str) -> None:
        remove_file(self.root / rel)
        _tidy((self.root / rel).parent, self.root / partition)

    def listing(self, partition: str) -> Iterator[str]:
        """Hidden folders and symlinks are not followed, nor another vault's folder (its own
        brain.yaml): its index files are its brain's."""
        for folder, dirs, files in os.walk(self.root / partition):
            if SETTINGS_FILE in files:
                dirs.clear()
                continue
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            if INDEX_FILE in files:
                yield Path(folder, INDEX_FILE).relative_to(self.root).as_posix()

    def load(self, rel: str) -> dict[str, Any] | None:
        """Parsed once per version of the file (its mtime and size)."""
        try:
            path = inside(self.root, rel)
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            cached = self._read_cache.get(rel)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            doc = json.loads(path.read_bytes())
        except (FileNotFoundError, ValueError, InvalidInput):
            return None
        if not isinstance(doc, dict):
            return None
        self._read_cache[rel] = (stamp, doc)
        return doc


def render(doc: dict[str, Any]) -> bytes:
    """Deterministic bytes: sorted keys, two-space indent, a trailing newline."""
    return (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def summary(doc: dict[str, Any]) -> str:
    """One or two sentences made from the counts and the metadata alone, never from note text."""
    total = doc["total_memory_count"]
    dates = doc["date_range"]
    span = (
        dates["oldest"]
        if dates["oldest"] == dates["newest"]
        else (f"{dates['oldest']} to {dates['newest']}")
    )
    text = f"{doc['node_name']} holds {_plural(total, 'memory', 'memories')} ({span})"
    subs = doc["sub_nodes"]
    if subs:
        inside_subs = sum(s["memory_count"] for s in subs)
        names = [s["name"] for s in subs[:5]] + ([f"{len(subs) - 5} more"] if len(subs) > 5 else [])
        text += (
            f", {inside_subs} of them in {_plural(len(subs), 'sub-node', 'sub-nodes')}: "
            f"{', '.join(names)}"
        )
    text += "."
    if doc["aggregate_keywords"]:
        text += f" Frequent words: {', '.join(doc['aggregate_keywords'][:5])}."
    if doc["key_entities"]:
        text += f" Names: {', '.join(doc['key_entities'][:3])}."
    return text


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _tidy(folder: Path, stop: Path) -> None:
    """Remove folders left empty by a removed index, up to (not including) the partition."""
    while folder != stop and stop in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
