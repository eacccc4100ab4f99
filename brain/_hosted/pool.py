"""A server's bounded pool of PostgreSQL connections, lent per transaction to any tenant."""

from __future__ import annotations

import contextlib
import logging
import select
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from brain._hosted.schema import HostedError, connect

if TYPE_CHECKING:
    import psycopg

WAIT = 10.0  # seconds a call waits for a free connection before it is told the server is busy
REST = 5.0  # seconds a replica is left alone after it failed, before it is tried again
log = logging.getLogger("brain.serve")


class PoolBusy(HostedError):
    """Every connection of the pool stayed lent for the whole wait."""


class Pool:
    """At most `size` connections to `dsn`, made as needed and kept for the next borrower.

    A connection carries no tenant between loans: each transaction on it says which tenant it
    runs as (hosted/sql.py `enter`), so one connection serves every tenant in turn, and a
    pooler in transaction mode (pgbouncer) may stand between. psycopg's automatic prepared
    statements are off unless `prepared`: pgbouncer 1.18 (Debian 12's) hands a transaction to
    whichever server connection is free, where a statement prepared on another one does not
    exist. Straight to PostgreSQL (or pgbouncer ≥ 1.21 with `max_prepared_statements`) they
    save the planning of a recall's repeated statements: about half its database CPU.

    `statement_timeout` (seconds) is set in each tenant transaction (a DSN's `options` would
    do it once per connection, but pgbouncer refuses that startup parameter).

    `replica`: where read-only tool calls may read instead (`--db-read`, hosted/replica.py).
    """

    def __init__(
        self,
        dsn: str,
        size: int,
        *,
        wait: float = WAIT,
        statement_timeout: float | None = None,
        prepared: bool = False,
    ) -> None:
        if size < 1:
            raise ValueError("a pool holds at least one connection")
        self.dsn, self.size, self.wait = dsn, size, wait
        self.statement_timeout = statement_timeout
        self.prepared = prepared
        self._idle: list[psycopg.Connection[Any]] = []
        self._made = 0  # connections open now, idle or lent
        self._ready = threading.Condition()
        self.closed = False
        self.replica: Replica | None = None

    def time_limit(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's statement timeout for the transaction in progress on `conn` (transaction
        -local, so nothing of it stays on the connection)."""
        if self.statement_timeout is not None:
            ms = f"{int(self.statement_timeout * 1000)}ms"
            conn.execute("SELECT set_config('statement_timeout', %s, true)", (ms,))

    @property
    def held(self) -> int:
        """Connections open now (idle or lent)."""
        return self._made

    @property
    def lent(self) -> int:
        return self._made - len(self._idle)

    def take(self) -> psycopg.Connection[Any]:
        """A connection of the pool (autocommit, no transaction open), waiting up to `wait`
        seconds for one to come back; PoolBusy after that."""
        deadline = time.monotonic() + self.wait
        with self._ready:
            while True:
                if self.closed:
                    raise HostedError("the server is stopping", "try again on another server")
                while self._idle:
                    conn = self._idle.pop()  # the most recently used: warm, least likely dead
                    if not _hung_up(conn):
                        return conn
                    self._made -= 1
                    _close(conn)
                if self._made < self.size:
                    self._made += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not self._ready.wait(left):
                    raise PoolBusy(
                        f"all {self.size} database connections of this server stayed busy "
                        f"for {self.wait:.0f} s",
                        "try again in a few seconds; the operator may raise --max-connections",
                    )
        try:
            conn = connect(self.dsn)
        except BaseException:
            self._forget()
            raise
        if not self.prepared:
            conn.prepare_threshold = None
        return conn

    def give(self, conn: psycopg.Connection[Any]) -> None:
        """Take back a lent connection; one that broke or was left in a transaction is closed."""
        from psycopg.pq import TransactionStatus

        usable = not conn.closed and not conn.broken
        if usable and conn.info.transaction_status != TransactionStatus.IDLE:
            try:
                conn.execute("ROLLBACK")
            except Exception:
                usable = False
        if not usable or self.closed:
            _close(conn)
            self._forget()
            return
        with self._ready:
            self._idle.append(conn)
            self._ready.notify()

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection lent for the block (autocommit: each statement its own transaction)."""
        conn = self.take()
        try:
            yield conn
        finally:
            self.give(conn)

    def drop_idle(self) -> None:
        """Close every idle connection: one was found dead (PostgreSQL restarted, say), so the
        others made before it likely are too; the next borrowers connect afresh."""
        with self._ready:
            idle, self._idle = self._idle, []
            self._made -= len(idle)
            self._ready.notify_all()
        for conn in idle:
            _close(conn)

    def close(self) -> None:
        """Close the idle connections now and each lent one when it comes back."""
        self.closed = True
        self.drop_idle()
        if self.replica is not None:
            self.replica.close()

    def _forget(self) -> None:
        with self._ready:
            self._made -= 1
            self._ready.notify()


class Replica(Pool):
    """The pool of a server's connections to a streaming replica of its database.

    Bounded apart from the primary's pool, by the same `--max-connections`: each is a
    PostgreSQL of its own, with its own `max_connections` (or pooler) to fit. After a failure
    (refused, broken, busy) reads go to the primary for `rest` seconds before the replica is
    tried again, so a replica that is down costs a connection attempt every `rest` seconds,
    not one every read. `counted` hears where each read went (the server's metrics).
    """

    def __init__(
        self,
        dsn: str,
        size: int,
        *,
        wait: float = WAIT,
        statement_timeout: float | None = None,
        prepared: bool = False,
        rest: float = REST,
    ) -> None:
        super().__init__(
            dsn, size, wait=wait, statement_timeout=statement_timeout, prepared=prepared
        )
        self.rest = rest
        self.counted: Callable[[str], None] = lambda _where: None
        self._down_until = 0.0
        self._guard = threading.Lock()

    @property
    def up(self) -> bool:
        """Whether reads should try the replica now (not resting after a failure)."""
        return not self.closed and time.monotonic() >= self._down_until

    def failed(self, exc: BaseException) -> None:
        """The replica failed a read: rest it, and read the primary meanwhile."""
        with self._guard:
            first = time.monotonic() >= self._down_until
            self._down_until = time.monotonic() + self.rest
        if first:  # once per rest, not once per read
            log.warning("the read replica failed: reading the primary for a while", exc_info=exc)
        self.drop_idle()
        self.counted("down")


def _hung_up(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server spoke first on an idle connection: nothing is owed to it, so what
    came is its goodbye (a shutdown's FATAL, or the socket closed by a restart). No round trip."""
    if conn.closed or conn.broken:
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _close(conn: psycopg.Connection[Any]) -> None:
    with contextlib.suppress(Exception):
        conn.close()


def private(source: str | Pool) -> Pool:
    """The pool to use for `source`: itself, or a small one of this DSN's own (a command or a
    script: the tenant's work and one long job's turn, hosted/parts.py `PgLock.turn`)."""
    return source if isinstance(source, Pool) else Pool(source, 2)


@contextlib.contextmanager
def admin(source: str | Pool) -> Iterator[psycopg.Connection[Any]]:
    """A connection as the server's own login role, not a tenant (the users, the schema):
    lent by the pool, or made for the block from a DSN."""
    if isinstance(source, Pool):
        with source.connection() as conn:
            yield conn
        return
    with connect(source) as conn:
        yield conn
