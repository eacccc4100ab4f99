"""The rest of a tenant's vault in PostgreSQL: the writer lock, the journal, the index files."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from brain._hosted.sql import TenantDatabase
from brain._hosted.store import PgStore
from brain._indexes.nodeindex import INDEX_FILE
from brain._vault.journal import KEEP_DAYS, Event


class PgLock:
    """One writer per tenant across every process and machine: the outermost hold is one
    transaction that first takes the tenant's advisory lock (transaction-scoped, so a pooler
    may lend the connection to anyone once it ends), and everything written under it commits
    together or not at all (a killed process loses only what was not acknowledged).
    Re-entrant within one process, as the files vault's lock is (ports.LockPort); inside a
    bulk block each inner hold is one write, undone alone if it fails, and the block commits
    a batch of writes at a time, taking the lock again for the next (hosted/writer.py)."""

    def __init__(self, db: TenantDatabase, timeout: float = 60.0) -> None:
        self.db = db
        self.timeout = timeout
        self._depth = 0

    @property
    def held(self) -> bool:
        return self._depth > 0

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        if self._depth:
            self._depth += 1
            try:
                with self.db.write():
                    yield
            finally:
                self._depth -= 1
            return
        self.db.begin()
        try:
            self.db.lock_writer(self.timeout)
        except BaseException:
            self.db.end(ok=False)
            raise
        self._depth = 1
        ok = False
        try:
            yield
            ok = True
        finally:
            self._depth = 0
            self.db.end(ok=ok)

    @contextlib.contextmanager
    def turn(self, name: str, waiting: Callable[[], None] | None = None) -> Iterator[None]:
        """One process at a time for this tenant's long job (`sleep`), on any server: a
        transaction-scoped advisory lock in a transaction of its own, held open on a
        connection of its own for the length of the job. A pooler in transaction mode keeps
        that connection the job's until the transaction ends; a killed process's transaction
        ends with its connection, and its turn with it, at once (a lease row would need a
        clock, a renewal and an expiry to wait out). The cost is one connection a running job."""
        key = (f"brain-{name}:{self.db.tenant}",)
        with self.db.apart() as own:
            if not own.value("SELECT pg_try_advisory_xact_lock(hashtextextended(?, 0))", key):
                if waiting is not None:
                    waiting()
                own.execute("SET LOCAL statement_timeout = 0")  # the other job's length
                own.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", key)
            yield


class PgJournal:
    """The journal as rows: appended under the writer lock, trimmed by sleep (ports.JournalPort)."""

    def __init__(self, db: TenantDatabase) -> None:
        self.db = db

    def append(self, event: Event) -> None:
        self.db.execute(
            "INSERT INTO journal (at, kind, id, title, partition, visibility, detail) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                event.at,
                event.kind,
                event.id,
                event.title,
                event.partition,
                event.visibility,
                event.detail,
            ),
        )  # the event's fields in their order

    def events(self) -> Iterator[Event]:
        rows = self.db.execute(
            "SELECT at, kind, id, title, partition, visibility, detail FROM journal ORDER BY seq"
        ).fetchall()
        for row in rows:
            yield Event(*(str(v) for v in row))

    def on(self, day: str) -> list[Event]:
        """The events of one day (`YYYY-MM-DD`), in order."""
        rows = self.db.execute(
            "SELECT at, kind, id, title, partition, visibility, detail FROM journal "
            "WHERE substr(at, 1, 10) = ? ORDER BY seq",
            (day,),
        ).fetchall()
        return [Event(*(str(v) for v in row)) for row in rows]

    def forget(self, note_id: str) -> None:
        self.db.execute("DELETE FROM journal WHERE id = ? OR detail = ?", (note_id, note_id))

    def drop(self, events: Sequence[Event]) -> None:
        for e in events:  # the last entry equal to each
            self.db.execute(
                "DELETE FROM journal WHERE seq = (SELECT max(seq) FROM journal WHERE at = ? "
                "AND kind = ? AND id = ? AND title = ? AND partition = ? AND visibility = ? "
                "AND detail = ?)",
                (e.at, e.kind, e.id, e.title, e.partition, e.visibility, e.detail),
            )

    def trim(self, now: datetime) -> int:
        horizon = (now - timedelta(days=KEEP_DAYS)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        cursor = self.db.execute("DELETE FROM journal WHERE at < ?", (horizon,))
        return int(cursor.rowcount or 0)


class IndexRows:
    """index.json files kept as rows of the store (nodeindex.IndexFiles), made from the same
    statistics as the files vault's."""

    def __init__(self, store: PgStore) -> None:
        self.store = store

    def owned(self, rel: str) -> bool:
        return True  # a row has no link to follow out of the vault

    def current(self, rel: str) -> bytes | None:
        return self.store.read_bytes(rel) if self.store.exists(rel) else None

    def put(self, rel: str, data: bytes) -> None:
        self.store.write_bytes(rel, data)

    def drop(self, rel: str, partition: str) -> None:
        self.store.delete(rel)

    def listing(self, partition: str) -> Iterator[str]:
        rows = self.store.db.execute(
            "SELECT path FROM vault_files WHERE path >= ? AND path < ? AND path LIKE ?",
            (partition + "/", partition + "0", "%/" + INDEX_FILE),
        )
        return iter([str(r[0]) for r in rows])

    def load(self, rel: str) -> dict[str, Any] | None:
        try:
            doc = json.loads(self.store.read_bytes(rel))
        except (FileNotFoundError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None
