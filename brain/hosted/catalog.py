"""The catalog in PostgreSQL: the same named reads and writes, on one tenant's rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from brain.hosted.dialect import POSTGRESQL
from brain.hosted.sql import TenantDatabase
from brain.indexes.catalog import SCHEMA_VERSION, Catalog, FileRow, ObjectRow
from brain.indexes.dialect import OBJECT_COLUMNS as _COLUMNS


class PgCatalog(Catalog):
    """`Catalog` over a tenant's connection: its named reads are shared, with PostgreSQL's
    spelling of what differs (hosted/dialect.py); its writes are PostgreSQL's own, here."""

    dialect = POSTGRESQL

    def __init__(self, db: TenantDatabase) -> None:
        self.db = db
        self.tenant_db = db
        # A bulk block hooks its note group here (Context.bulk); rows and files share one
        # database, and each write commits its own transaction, so nothing need come first.
        self.before_commit: list[Callable[[], None]] = []

    @property
    def stale(self) -> bool:
        return False  # the schema is the database's, versioned by `brain hosted init`

    def close(self) -> None:
        """The connection belongs to the tenant's storage, which closes it."""

    @contextmanager
    def transaction(self) -> Iterator[TenantDatabase]:  # type: ignore[override]
        self.tenant_db.begin()
        ok = False
        try:
            yield self.tenant_db
            ok = True
        finally:
            self.tenant_db.end(ok=ok)

    @contextmanager
    def batched(self) -> Iterator[None]:
        yield  # each write stays a transaction of its own: other instances see it at once

    def set_info(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO info (key, value) VALUES (?, ?) "
            "ON CONFLICT (tenant, key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def put_file(self, row: FileRow) -> None:
        self.db.execute(
            "INSERT INTO files (path, note_id, hash, mtime_ns, size, error) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, path) DO UPDATE SET "
            "note_id = excluded.note_id, hash = excluded.hash, mtime_ns = excluded.mtime_ns, "
            "size = excluded.size, error = excluded.error",
            (row.path, row.note_id, row.hash, row.mtime_ns, row.size, row.error),
        )

    def put_objects(self, rows: Iterable[ObjectRow]) -> None:
        columns = [c.strip() for c in _COLUMNS.split(",")]
        update = ", ".join(f"{c} = excluded.{c}" for c in columns if c != "id")
        self.db.executemany(
            f"INSERT INTO objects ({_COLUMNS}) VALUES ({','.join('?' * len(columns))}) "
            f"ON CONFLICT (tenant, id) DO UPDATE SET {update}",
            [row.values() for row in rows],
        )

    def id_owners(self) -> dict[str, str]:
        return {
            str(oid): str(path)
            for oid, path in self.db.execute("SELECT id, path FROM objects WHERE id=note_id")
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
