"""The catalog: a SQLite cache of every file's fingerprint and every object's metadata.

It answers "which id lives where" and "what changed on disk" without reading notes.
It is rebuilt from the files by `brain reindex`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from brain._indexes.held import Holding
from brain._indexes.queries import FILE_COLUMNS, Database
from brain._indexes.rows import Brief, FileRow, ObjectRow, RelationRow
from brain._vault.files import owner_only

__all__ = ["SCHEMA_VERSION", "Brief", "Catalog", "FileRow", "ObjectRow", "RelationRow"]

SCHEMA_VERSION = 3  # 3: objects.updated
REBUILDING = "rebuilding"  # info key: a rebuild from the files began and has not ended
UNREADABLE = "unreadable"  # the REBUILDING mark of a catalog made anew over a damaged one
MARKS = {"new": "the catalog is new", UNREADABLE: "the catalog could not be read"}  # doctor's
REBUILT = "rebuilt"  # info key: when and why the caches last rebuilt themselves (doctor)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, note_id TEXT, hash TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, error TEXT, inode INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS folders (
    path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS objects (
    id TEXT PRIMARY KEY, note_id TEXT NOT NULL, path TEXT NOT NULL,
    partition TEXT NOT NULL, node TEXT NOT NULL, title TEXT NOT NULL, norm_title TEXT NOT NULL,
    kind TEXT NOT NULL, status TEXT NOT NULL, visibility TEXT NOT NULL,
    created TEXT NOT NULL, touched TEXT NOT NULL, parent TEXT, supersedes TEXT,
    defining TEXT, tags TEXT NOT NULL, source TEXT NOT NULL, heading_path TEXT NOT NULL,
    text_hash TEXT NOT NULL, updated TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS text_queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, doc TEXT
);
CREATE TABLE IF NOT EXISTS vector_queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, doc TEXT
);
CREATE INDEX IF NOT EXISTS objects_note ON objects(note_id);
CREATE INDEX IF NOT EXISTS objects_folder ON objects(partition, node, norm_title);
CREATE INDEX IF NOT EXISTS objects_parent ON objects(parent);
CREATE INDEX IF NOT EXISTS objects_supersedes ON objects(supersedes);
CREATE INDEX IF NOT EXISTS objects_status ON objects(status);
CREATE INDEX IF NOT EXISTS objects_order ON objects(partition, node, id, status, visibility, kind);
CREATE INDEX IF NOT EXISTS objects_created ON objects(partition, created);
-- Every change to an object, in commit order, whoever made it: a process that holds the briefs
-- in memory (Catalog.hold_briefs) reads what changed since it last looked.
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL);
CREATE TRIGGER IF NOT EXISTS objects_added AFTER INSERT ON objects
BEGIN INSERT INTO changes (id) VALUES (new.id); END;
CREATE TRIGGER IF NOT EXISTS objects_changed AFTER UPDATE ON objects
BEGIN INSERT INTO changes (id) VALUES (old.id); INSERT INTO changes (id) VALUES (new.id); END;
CREATE TRIGGER IF NOT EXISTS objects_removed AFTER DELETE ON objects
BEGIN INSERT INTO changes (id) VALUES (old.id); END;
CREATE TABLE IF NOT EXISTS relations (
    source TEXT NOT NULL, type TEXT NOT NULL, target TEXT NOT NULL, weight REAL
);
CREATE INDEX IF NOT EXISTS relations_source ON relations(source);
CREATE INDEX IF NOT EXISTS relations_target ON relations(target);
"""


# Reads of this much of the database are plain memory reads of the file, mapped, instead of a
# read call per page: SQLite's own page cache holds 2 MB, and a recall at 100k memories reads
# rows from all over its ~180 MB (docs/lab/latency.md, "The catalog mapped"). The pages are the
# file's, in the system's page cache either way, so mapping adds no memory, but the process's
# RSS counts each page it touched: at 1M memories (a 1.4 GB catalog) a daemon that mapped it
# all showed ~1 GB more after its first walk, so the map stops here.
MAPPED_BYTES = 256 << 20
# The change log keeps this many changes when the catalog is compacted: a process that held the
# briefs and missed more reads them whole.
CHANGES_KEPT = 20_000
BUSY_TIMEOUT = 60.0  # seconds a statement waits for another process's lock
# Inside `Catalog.batched()`: writes are committed together at most this often. Two commits a
# write were a fifth of bulk ingest's writer time (docs/lab/ingest.md).
BATCH_SECONDS = 0.5


def _use_wal(db: sqlite3.Connection) -> None:
    """Put the database in WAL mode (kept in the file once set). Two processes opening a new
    catalog at once can meet here while the other creates it: this switch may answer "locked"
    at once instead of waiting, so it is tried again until the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _connect(path: Path) -> sqlite3.Connection:
    # A hosted server hands a Brain from one worker thread to another, one call at a time
    # (brain/_hosted/serving.py): the connection is never used by two threads at once.
    db = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
    try:
        _use_wal(db)
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA mmap_size={MAPPED_BYTES}")
        # LIKE tells case as PostgreSQL's does (where.BELOW): 'knowledge/%' is not the
        # sub-nodes of Knowledge, which `node=?` beside it never matched either.
        db.execute("PRAGMA case_sensitive_like=ON")
        db.executescript(_SCHEMA)
        if "inode" not in {r[1] for r in db.execute("PRAGMA table_info(files)")}:
            # A catalog of before inodes were kept: 0 is "unknown" and matches any inode.
            _add_column(db, "files", "inode INTEGER NOT NULL DEFAULT 0")
        if "updated" not in {r[1] for r in db.execute("PRAGMA table_info(objects)")}:
            # Schema 2's objects: the column comes last, where the rows' values put it, and
            # the stale schema mark has every row written again by the rebuild that follows.
            _add_column(db, "objects", "updated TEXT NOT NULL DEFAULT ''")
        db.execute("SELECT count(*) FROM info").fetchone()  # read at every open: readable?
    except BaseException:
        db.close()
        raise
    return db


def _add_column(db: sqlite3.Connection, table: str, column: str) -> None:
    """Add a column an older brain's catalog lacks; another process opening it at the same
    moment may have added it first."""
    try:
        db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    except sqlite3.OperationalError as error:
        if "duplicate column" not in str(error):
            raise


def _afresh(path: Path, damaged: int | None) -> sqlite3.Connection:
    """Start over a catalog that cannot be read (overwritten, a damaged page): it is a cache,
    rebuilt from the files. `damaged`: the inode of the file found so. One process at a time,
    and one made anew by another process meanwhile is kept."""
    fd = os.open(path.with_name(f"{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _inode(path) == damaged:
            for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
                path.with_name(name).unlink(missing_ok=True)
        return _connect(path)
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


class Catalog(Holding):
    """SQLite in WAL mode: readers never block the one writer. A long-lived process may hold
    its briefs in memory (`hold_briefs`, indexes/held.py)."""

    batch_since: float | None = None  # inside `batched()`: when its transaction began
    depth = 0  # savepoints open inside the outer transaction

    def __init__(self, path: Path) -> None:
        self.path = path
        # Run before each commit (a bulk block's notes put in place first: a row committed
        # names a file that is there).
        self.before_commit: list[Callable[[], None]] = []
        with owner_only():  # the database, its -wal and -shm are born here
            path.parent.mkdir(parents=True, exist_ok=True)
            found = _inode(path)
            mark = "new"
            try:
                self.db = _connect(path)
            except sqlite3.DatabaseError as error:
                if isinstance(error, sqlite3.OperationalError):
                    raise  # locked, no room, no permission: not this file's fault
                self.db, mark = _afresh(path, found), UNREADABLE
            self.inode = _inode(path)
        self._stamp(mark)

    def _stamp(self, mark: str) -> None:
        if self.info("schema") is None:  # no write lock on every open: only for a new one
            with self.transaction():
                if self.info("schema") is None:  # made just now: a rebuild must fill it
                    self.set_info("schema", str(SCHEMA_VERSION))
                    self.set_info(REBUILDING, mark)

    def renew(self) -> None:
        """Start over, empty and marked for a rebuild, when a page cannot be read."""
        self.db.close()
        with owner_only():
            self.db = _afresh(self.path, self.inode)
        self.inode = _inode(self.path)
        self._stamp(UNREADABLE)

    @property
    def stale(self) -> bool:
        """Built for another schema (read each time: another process may have rebuilt it)."""
        return self.info("schema") != str(SCHEMA_VERSION)

    def _apart(self) -> Catalog:
        return Catalog(self.path)

    def set_info(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO info VALUES (?, ?)", (key, value))

    def drop_info(self, key: str) -> None:
        self.db.execute("DELETE FROM info WHERE key=?", (key,))

    def transaction(self) -> _Tx:
        """`with catalog.transaction():` groups writes into one commit."""
        return _Tx(self)

    @contextlib.contextmanager
    def batched(self) -> Iterator[None]:
        """Many writes in a row (bulk ingest): one commit every BATCH_SECONDS, not one or two
        per write. Each write's transaction is a savepoint inside, so a write that fails
        undoes itself alone; other processes see the writes a batch at a time. A crash loses
        at most the last batch's rows, which catch-up puts back from the files."""
        if self.batch_since is not None or self.db.in_transaction:
            yield  # inside one already: it commits
            return
        self.db.execute("BEGIN IMMEDIATE")
        self.batch_since = time.monotonic()
        try:
            yield
        finally:  # after an error too: the writes that succeeded are whole, so kept
            self.batch_since = None
            if self.db.in_transaction:
                try:
                    self.commit()
                except sqlite3.Error:
                    self.rollback()  # catch-up puts back what the files hold
                    raise

    def part_done(self) -> None:
        """A write inside `batched()` ended: commit if the batch has been open long enough."""
        if self.batch_since is None or time.monotonic() - self.batch_since < BATCH_SECONDS:
            return
        self.commit()
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:  # the write is committed: never fail it now
            self.batch_since = None  # the block's later writes commit one by one
            return
        self.batch_since = time.monotonic()

    def commit(self) -> None:
        """COMMIT the open transaction, after what must come first (`before_commit`). If that
        fails, the transaction is rolled back: no row names a file that is not there (rows
        of files already in place come back with the next catch-up)."""
        try:
            for first in self.before_commit:
                first()
        except BaseException:
            self.rollback()
            raise
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        """Undo the open transaction, if SQLite has not already: a full disk (SQLITE_FULL)
        rolls it back itself, and a second ROLLBACK would hide that error behind its own."""
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    def put_file(self, row: FileRow) -> None:
        self.db.execute(
            f"INSERT OR REPLACE INTO files ({FILE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (row.path, row.note_id, row.hash, row.mtime_ns, row.size, row.error, row.inode),
        )

    def fill_inodes(self, stamps: Iterable[tuple[int, str, int, int]]) -> None:
        """(inode, path, mtime_ns, size): the inode of rows known without one, where the row
        still has that size and mtime (a writer may have changed it since)."""
        with self.transaction():
            self.db.executemany(
                "UPDATE files SET inode = ? WHERE path = ? AND inode = 0 AND mtime_ns = ? "
                "AND size = ?",
                stamps,
            )

    # The folders of the last full walk, each with its (mtime, inode): a file created, deleted
    # or renamed into place changes its folder's mtime, so an unchanged folder needs no listing.
    def folders(self) -> dict[str, tuple[int, int]]:
        return {r[0]: (r[1], r[2]) for r in self.db.execute("SELECT * FROM folders")}

    def put_folders(self, stamps: Iterable[tuple[str, int, int]], *, whole: bool) -> None:
        """Record folders' (path, mtime_ns, inode); `whole`: these are all of them."""
        with self.transaction():
            if whole:
                self.db.execute("DELETE FROM folders")
            self.db.executemany("INSERT OR REPLACE INTO folders VALUES (?, ?, ?)", stamps)

    def drop_folders(self, folder: str) -> None:
        """Forget a folder and every folder below it (gone from disk)."""
        self.db.execute(
            "DELETE FROM folders WHERE path = ? OR (path > ? AND path < ?)",
            (folder, f"{folder}/", f"{folder}/\U0010ffff"),
        )

    def drop_file(self, path: str) -> None:
        self.db.execute("DELETE FROM files WHERE path=?", (path,))

    # objects
    def put_objects(self, rows: Iterable[ObjectRow]) -> None:
        self.db.executemany(
            f"INSERT OR REPLACE INTO objects VALUES ({','.join('?' * 20)})",
            [row.values() for row in rows],
        )

    def drop_note(self, note_id: str) -> list[str]:
        """Remove a note's objects; returns their ids so other caches can drop them too."""
        ids = [r[0] for r in self.db.execute("SELECT id FROM objects WHERE note_id=?", (note_id,))]
        self.db.execute("DELETE FROM objects WHERE note_id=?", (note_id,))
        self.db.execute("DELETE FROM relations WHERE source=?", (note_id,))
        return ids

    def put_relations(self, source: str, edges: Iterable[tuple[str, str, float | None]]) -> None:
        """A note's outgoing relations as (type, target, weight); replaces what was there."""
        self.db.execute("DELETE FROM relations WHERE source=?", (source,))
        self.db.executemany(
            "INSERT INTO relations VALUES (?, ?, ?, ?)", [(source, *edge) for edge in edges]
        )

    def id_owners(self) -> dict[str, str]:
        """Each note id and the file that holds it (empty if the catalog cannot say)."""
        try:
            return dict(self.db.execute("SELECT id, path FROM objects WHERE id=note_id"))
        except sqlite3.Error:
            return {}

    def clear(self) -> None:
        self.db.execute("DELETE FROM objects")
        self.db.execute("DELETE FROM changes")  # each held copy is read whole again
        self.db.execute("DELETE FROM files")
        self.db.execute("DELETE FROM folders")
        self.db.execute("DELETE FROM text_queue")
        self.db.execute("DELETE FROM vector_queue")
        self.db.execute("DELETE FROM relations")
        # A rebuild from the files brings an older schema up to date. Until it is done, the
        # mark says so to every process (and to the next open, after a kill -9).
        self.set_info("schema", str(SCHEMA_VERSION))
        self.set_info(REBUILDING, "1")

    # Queues of changes waiting for a batched commit to the full-text or vector index.
    QUEUES = ("text_queue", "vector_queue")

    def enqueue(
        self, queue: str, upserts: Iterable[tuple[str, str]], deletes: Iterable[str]
    ) -> None:
        """Queue (id, JSON document) upserts and id deletes, deletes first."""
        assert queue in self.QUEUES
        self.db.executemany(
            f"INSERT INTO {queue} (id, doc) VALUES (?, NULL)", [(d,) for d in deletes]
        )
        self.db.executemany(f"INSERT INTO {queue} (id, doc) VALUES (?, ?)", list(upserts))

    def queued(self, queue: str) -> list[tuple[int, str, str | None]]:
        assert queue in self.QUEUES
        return list(self.db.execute(f"SELECT seq, id, doc FROM {queue} ORDER BY seq"))

    def pending(self, queue: str) -> int:
        assert queue in self.QUEUES
        return int(self.db.execute(f"SELECT count(*) FROM {queue}").fetchone()[0])

    def dequeue(self, queue: str, upto: int) -> None:
        assert queue in self.QUEUES
        self.db.execute(f"DELETE FROM {queue} WHERE seq <= ?", (upto,))

    def compact(self) -> None:
        """Rewrite the database so deleted rows leave the disk (free pages and the WAL too);
        the change log keeps its last CHANGES_KEPT."""
        with self.transaction():
            self.db.execute(
                "DELETE FROM changes WHERE seq <= "
                "(SELECT seq FROM sqlite_sequence WHERE name='changes') - ?",
                (CHANGES_KEPT,),
            )
            # A removed object's id in the log would outlive its forgetting: the log goes up
            # to its last removal (a process holding older briefs reads them whole).
            self.db.execute(
                "DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes "
                "WHERE id NOT IN (SELECT id FROM objects))"
            )
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class _Tx:
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on an error). Inside an open transaction, a savepoint:
    an error undoes this part alone, and what the outer one holds commits with it (or not)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.outer = False

    def __enter__(self) -> Database:
        db = self.catalog.db
        self.outer = not db.in_transaction
        if self.outer:
            db.execute("BEGIN IMMEDIATE")
        else:
            db.execute("SAVEPOINT part")
            self.catalog.depth += 1
        return db

    def __exit__(self, kind: object, *_: object) -> None:
        db = self.catalog.db
        if self.outer:
            if kind is not None:
                self.catalog.rollback()
                return
            self.catalog.commit()
            return
        self.catalog.depth -= 1
        if not db.in_transaction:  # an error already ended the whole transaction
            return
        if kind is not None:
            db.execute("ROLLBACK TO part")
        db.execute("RELEASE part")
        if self.catalog.depth == 0:
            self.catalog.part_done()
