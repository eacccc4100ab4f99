"""A tenant's writer in PostgreSQL: the writer lock, her row checked under it, and bulk blocks
committed a batch at a time (the part of TenantDatabase that writes many things in a row)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from brain._errors import VaultBusy
from brain._hosted.schema import HostedError

if TYPE_CHECKING:
    import psycopg

# The tenant's row, asked in the first round trip of each call and under the writer lock: its
# `created` tells the brain opened here from one made after an administrator deleted the user
# and added her again (`brain hosted user delete`, then a first call through any server).
STAMP = "SELECT created FROM tenants WHERE name = %s"
LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('brain:' || %s, 0))"
# A bulk block commits its writes together at most this often, as the files catalog's batches
# (indexes/catalog.py): a connection lost inside the block loses the unfinished batch only.
BATCH_SECONDS = 0.5


class TenantGone(HostedError):
    """The tenant this Brain was opened on is no more: deleted (and perhaps added again)."""

    def __init__(self, tenant: str) -> None:
        super().__init__(
            f"user {tenant!r} was deleted since this brain was opened",
            "open it again (a new brain, if she was added again)",
        )


class BulkInterrupted(HostedError):
    """The connection was lost inside a bulk block: what its committed batches kept, and what
    was lost with the unfinished one."""


def _lost(exc: BaseException, conn: psycopg.Connection[Any] | None) -> bool:
    """Whether the block ended because its connection is gone (PostgreSQL restarted, the
    backend killed, the network down): a psycopg error, or one caused by it, on a dead one."""
    import psycopg

    if conn is not None and not conn.broken and not conn.closed:
        return False
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None or isinstance(seen, psycopg.OperationalError | psycopg.InterfaceError):
            return seen is not None
        seen = seen.__cause__ or seen.__context__
    return False


class Writer:
    """TenantDatabase's writes under the tenant's writer lock (a mixin: the state is the
    database's). Inside a bulk block (`keeping`) each write is a savepoint, and the writer's
    transaction is committed every BATCH_SECONDS at the end of a write: the lock goes with
    the commit and is taken again before the next statement, so another process's write may
    come between two batches, never inside a write."""

    tenant: str
    depth: int
    stamp: Any
    _conn: psycopg.Connection[Any] | None

    if TYPE_CHECKING:

        def _start(
            self, conn: psycopg.Connection[Any], finish: str | None = None, *, check: bool = True
        ) -> None: ...

        def _same(self, stamp: psycopg.Cursor[Any] | None) -> None: ...

    def _writer_init(self) -> None:
        self._keeping = 0  # inside bulk blocks (`keeping`)
        self._salvage = False  # a bulk block failed: its finished writes commit all the same
        self._writing = 0  # inside a bulk block's write (`write`), nested
        self._since: float | None = None  # when the bulk block's open batch began
        self._kept = self._done = 0  # the block's writes committed; finished since
        self._committing = False  # a batch's COMMIT is under way
        self._relock = False  # a batch was committed: the lock is taken again before more
        self._lock_timeout = 60.0

    def lock_writer(self, timeout: float) -> None:
        """The tenant's writer lock until this writer's transaction ends, waiting at most
        `timeout` s for another writer's. (Its BEGIN checked her row: `_same`.)"""
        import psycopg

        assert self._conn is not None and self.depth, "the lock needs a writer's transaction"
        self._lock_timeout = timeout
        # Two round trips, not a pipeline: a connection lost while the lock waits then says
        # why (psycopg reads the server's last words outside a pipeline only).
        self._conn.execute(f"SET LOCAL lock_timeout = '{int(timeout * 1000)}ms'")
        try:
            self._conn.execute(LOCK, (self.tenant,))
        except psycopg.errors.LockNotAvailable:
            raise VaultBusy(
                f"another brain process has held the writer lock of user {self.tenant!r} "
                f"for {timeout:.0f} s",
                "try again; `SELECT * FROM pg_locks WHERE locktype = 'advisory'` shows who",
            ) from None

    def _lock_again(self) -> None:
        """After a batch's commit, before the next statement: the writer lock once more, and
        her row checked under it (an administrator may have deleted her between batches)."""
        if not self._relock or self._writing or not self.depth:
            return
        self._relock = False
        try:
            self.lock_writer(self._lock_timeout)
            if self.stamp is not None and self._conn is not None:
                self._same(self._conn.execute(STAMP, (self.tenant,)))
        except BaseException:
            self._relock = True  # the next statement tries again
            raise

    @contextlib.contextmanager
    def keeping(self) -> Iterator[None]:
        """A bulk block (PgCatalog.batched) inside a writer's transaction: each write in it is
        a savepoint (`write`), a batch of writes is committed every BATCH_SECONDS, and if the
        block ends in an error the writes it finished are committed all the same, as each is
        already on disk in a files vault. A connection lost inside it raises BulkInterrupted,
        which says how many of the block's writes were kept."""
        from psycopg.pq import TransactionStatus

        outermost = self._keeping == 0
        if outermost:
            self._since, self._kept, self._done, self._committing = time.monotonic(), 0, 0, False
        self._keeping += 1
        try:
            yield
        except BaseException as exc:
            conn = self._conn
            if (
                self.depth
                and conn is not None
                and not conn.broken
                and conn.info.transaction_status == TransactionStatus.INTRANS
            ):
                self._salvage = True
            elif outermost and _lost(exc, conn):
                raise self._interrupted() from exc
            raise
        finally:
            self._keeping -= 1
            if outermost:
                self._since, self._relock = None, False

    def _interrupted(self) -> BulkInterrupted:
        kept, since = self._kept, self._done
        where = f"the database connection was lost inside a bulk block of user {self.tenant!r}"
        if self._committing:
            return BulkInterrupted(
                f"{where}: its first {kept} writes are kept; the {since} after them were being "
                "committed and may or may not have been",
                f"see which of writes {kept + 1}-{kept + since} are there (`list`), then write "
                "the rest again",
            )
        if kept == 0:
            return BulkInterrupted(
                f"{where} before its first batch was committed: none of its writes is kept "
                f"(the {since} finished and the one under way)",
                "write the block again",
            )
        return BulkInterrupted(
            f"{where}: its first {kept} writes are kept; the {since} after them (and the one "
            "under way) were not",
            f"write again from write {kept + 1} of the block on",
        )

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        """One write inside a bulk block: a savepoint, so a write that fails undoes itself
        alone (elsewhere the writer's transaction is the unit, and this does nothing); at its
        end the batch is committed if it has been open BATCH_SECONDS."""
        import psycopg

        conn = self._conn
        if not self._keeping or not self.depth or conn is None:
            yield
            return
        self._lock_again()  # before the savepoint: a lock taken inside one ends with it
        self._writing += 1
        conn.execute("SAVEPOINT brain_write")
        try:
            yield
        except BaseException:
            if not conn.broken:
                with contextlib.suppress(psycopg.Error):
                    conn.execute("ROLLBACK TO SAVEPOINT brain_write")
                    conn.execute("RELEASE SAVEPOINT brain_write")
            raise
        finally:
            self._writing -= 1
        conn.execute("RELEASE SAVEPOINT brain_write")
        if not self._writing:
            self._done += 1
            self._commit_batch(conn)

    def _commit_batch(self, conn: psycopg.Connection[Any]) -> None:
        """Commit the block's writes so far and begin the next batch, in one round trip, if
        the batch has been open long enough (only the writer's own transaction: depth 1)."""
        since = self._since
        if self.depth != 1 or since is None or time.monotonic() - since < BATCH_SECONDS:
            return
        self._committing = True
        self._start(conn, finish="COMMIT", check=False)  # the lock is retaken lazily
        self._committing = False
        self._kept, self._done = self._kept + self._done, 0
        self._since, self._relock = time.monotonic(), True
