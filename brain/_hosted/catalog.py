"""The catalog in PostgreSQL: the shared named reads, and PostgreSQL's own writes, per tenant."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from brain._hosted.dialect import POSTGRESQL
from brain._hosted.sql import TenantDatabase
from brain._indexes.catalog import SCHEMA_VERSION
from brain._indexes.dialect import OBJECT_COLUMNS
from brain._indexes.queries import BRIEF_COLUMNS, Queries
from brain._indexes.rows import FileRow, ObjectRow

_OBJECT_KEYS = [c.strip() for c in OBJECT_COLUMNS.split(",")]


class PgCatalog(Queries):
    """The catalog (ports.CatalogPort) as one tenant's rows. Its named reads are the ones
    both databases share (indexes/queries.py), spelled for PostgreSQL where they differ
    (hosted/dialect.py); its writes are PostgreSQL's, here. No queue, no folder, no briefs
    held in memory: the text and vectors are written with the rows, nobody edits rows by
    hand, and every read asks the database, which every server writes."""

    dialect = POSTGRESQL

    def __init__(self, db: TenantDatabase) -> None:
        self.db = self.tenant_db = db
        # A bulk block hooks its note group here (Context.bulk); rows and files share one
        # database and commit together, so nothing need come first.
        self.before_commit: list[Callable[[], None]] = []

    @property
    def stale(self) -> bool:
        return False  # the schema is the database's, versioned by `brain hosted init`

    def close(self) -> None:
        """The connection belongs to the tenant's storage, which closes it."""

    @contextmanager
    def transaction(self) -> Iterator[TenantDatabase]:
        self.tenant_db.begin()
        ok = False
        try:
            yield self.tenant_db
            ok = True
        finally:
            self.tenant_db.end(ok=ok)

    @contextmanager
    def batched(self) -> Iterator[None]:
        """A bulk block: its writer's transaction holds every write, each a savepoint, and
        an error keeps the writes finished before it, as files do (TenantDatabase.keeping)."""
        with self.tenant_db.keeping():
            yield

    # briefs: read from the database each time ----------------------------------------
    def held(self) -> None:
        return None

    def hold_briefs(self, *, apart: bool = False) -> None:
        """Nothing to hold: another server's write must show at once."""

    def every_brief_row(self) -> Iterator[tuple[object, ...]]:
        yield from self.db.execute(f"SELECT {BRIEF_COLUMNS} FROM objects")

    # info and files ----------------------------------------------------------------------
    def set_info(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO info (key, value) VALUES (?, ?) "
            "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def drop_info(self, key: str) -> None:
        self.db.execute("DELETE FROM info WHERE key = ?", (key,))

    def put_file(self, row: FileRow) -> None:
        self.db.execute(
            "INSERT INTO files (path, note_id, hash, mtime_ns, size, error) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, path) DO UPDATE SET "
            "note_id = excluded.note_id, hash = excluded.hash, mtime_ns = excluded.mtime_ns, "
            "size = excluded.size, error = excluded.error",
            (row.path, row.note_id, row.hash, row.mtime_ns, row.size, row.error),
        )

    def drop_file(self, path: str) -> None:
        self.db.execute("DELETE FROM files WHERE path = ?", (path,))

    # Rows have no folders and no inodes: a catch-up of hand edits never runs here.
    def folders(self) -> dict[str, tuple[int, int]]:
        return {}

    def put_folders(self, stamps: Iterable[tuple[str, int, int]], *, whole: bool) -> None:
        """No folders."""

    def drop_folders(self, folder: str) -> None:
        """No folders."""

    def fill_inodes(self, stamps: Iterable[tuple[int, str, int, int]]) -> None:
        """No inodes."""

    # objects and relations -------------------------------------------------------------
    def put_objects(self, rows: Iterable[ObjectRow]) -> None:
        update = ", ".join(f"{c} = excluded.{c}" for c in _OBJECT_KEYS if c != "id")
        self.db.executemany(
            f"INSERT INTO objects ({OBJECT_COLUMNS}) VALUES ({','.join('?' * len(_OBJECT_KEYS))}) "
            f"ON CONFLICT (tenant, id) DO UPDATE SET {update}",
            [row.values() for row in rows],
        )

    def drop_note(self, note_id: str) -> list[str]:
        """Remove a note's objects and its relations; returns the objects' ids."""
        rows = self.db.execute("DELETE FROM objects WHERE note_id = ? RETURNING id", (note_id,))
        ids = [str(r[0]) for r in rows]
        self.db.execute("DELETE FROM relations WHERE source = ?", (note_id,))
        return ids

    def put_relations(self, source: str, edges: Iterable[tuple[str, str, float | None]]) -> None:
        """A note's outgoing relations as (type, target, weight); replaces what was there."""
        self.db.execute("DELETE FROM relations WHERE source = ?", (source,))
        self.db.executemany(
            "INSERT INTO relations (source, type, target, weight) VALUES (?, ?, ?, ?)",
            [(source, *edge) for edge in edges],
        )

    def id_owners(self) -> dict[str, str]:
        return {
            str(oid): str(path)
            for oid, path in self.db.execute("SELECT id, path FROM objects WHERE id = note_id")
        }

    def clear(self) -> None:
        for table in ("objects", "files", "relations", "texts", "vectors", "sparse_terms"):
            self.db.execute(f"DELETE FROM {table}")
        self.set_info("schema", str(SCHEMA_VERSION))

    # Full text and vectors are columns written with the catalog: nothing waits in a queue.
    def enqueue(
        self, queue: str, upserts: Iterable[tuple[str, str]], deletes: Iterable[str]
    ) -> None:
        raise AssertionError("a hosted catalog has no queues")

    def queued(self, queue: str) -> list[tuple[int, str, str | None]]:
        return []

    def pending(self, queue: str) -> int:
        return 0

    def dequeue(self, queue: str, upto: int) -> None:
        """Nothing is queued."""

    def compact(self) -> None:
        """PostgreSQL's autovacuum reclaims deleted rows; a tenant's role may not VACUUM."""
