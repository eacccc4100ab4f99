"""One tenant's work in PostgreSQL: each transaction entered as that tenant (row-level security)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from brain._hosted import replica as reads
from brain._hosted.pool import Pool, admin, private
from brain._hosted.roles import ROLE, proof, stored_key
from brain._hosted.schema import HostedError
from brain._hosted.writer import STAMP, TenantGone, Writer
from brain._vault.paths import check_segment

if TYPE_CHECKING:
    import psycopg

Statement = Callable[["psycopg.Connection[Any]"], "psycopg.Cursor[Any]"]


def _format(sql: str) -> str:
    """DB-API's qmark placeholders in psycopg's format style: `?` becomes `%s`, and a literal
    `%` (a LIKE pattern's) doubles. The SQL itself is PostgreSQL's as written: what it spells
    unlike SQLite goes through hosted/dialect.py by name, never rewritten here."""
    return sql.replace("%", "%%").replace("?", "%s")


def enter(
    conn: psycopg.Connection[Any],
    tenant: str,
    tenant_proof: str,
    *,
    local: bool,
    role: str | None = ROLE,
) -> None:
    """Make the transaction in progress (`local=True`) or the session (`local=False`) act as
    `tenant`: the tenant role, the name and its proof (brain/_hosted/roles.py), in one round
    trip. Transaction-local settings end with the transaction, so the connection carries no
    tenant once it is given back and a pooler in transaction mode may hand it to anyone next.
    `role=None` keeps the login's own role (the owner's commands)."""
    conn.execute(
        "SELECT set_config('role', %s, %s), set_config('brain.tenant', %s, %s), "
        "set_config('brain.proof', %s, %s)",
        (role or "none", local, tenant, local, tenant_proof, local),
    )


class Rows:
    """A statement's result, read whole: its connection may be lent to another call before
    the caller reads it."""

    def __init__(self, cursor: psycopg.Cursor[Any]) -> None:
        self.rowcount = cursor.rowcount
        self._rows = list(cursor.fetchall()) if cursor.description is not None else []
        self._next = 0

    def fetchone(self) -> Any:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Any]:
        rest, self._next = self._rows[self._next :], len(self._rows)
        return rest

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class TenantDatabase(Writer):
    """A tenant's statements, each in a transaction that first enters the tenant (`enter`), on
    a connection lent by the pool for that transaction only.

    Three ways a statement runs: inside `session()` (a server's tool call: one connection and
    one transaction for the whole call), inside `begin()`/`end()` (a writer's transaction;
    they nest, and the outermost pair is one transaction that commits when it ends, inside a
    session too), or alone (its own transaction, entered and committed in the same round trip).

    A read-only session may run on the pool's replica (hosted/replica.py): chosen at its first
    statement, if the replica has replayed the tenant's last write; a writer's transaction
    inside it, or a statement the replica refuses, moves the rest of the session to the primary.
    """

    def __init__(self, source: str | Pool, tenant: str, key: bytes | None = None) -> None:
        check_segment(tenant, "user")
        self.tenant = tenant
        self.pool = private(source)
        self._own_pool = self.pool is not source
        if key is None:  # the owner's commands: only the owner's login may read it
            with admin(self.pool) as conn:
                key = stored_key(conn)
        self._key = key
        self._proof = proof(key, tenant)
        self._conn: psycopg.Connection[Any] | None = None  # lent for a session or transaction
        self._on_replica = False  # `_conn` is the replica's
        self._reading: bool | None = None  # in a session: None, else whether it only reads
        self._lent_by_begin = False  # the outermost begin() took it: its end() gives it back
        self.depth = 0
        self._writer_init()
        self.stamp: Any = None  # the tenant's `created` once known (`known`): checked each call

    def known(self) -> bool:
        """Whether the database knows this tenant (its row in `tenants`, which it alone sees);
        from then on each call checks that the row is still that one (`STAMP`)."""
        row = self.execute("SELECT created FROM tenants WHERE name = ?", (self.tenant,)).fetchone()
        if row is not None:
            self.stamp = row[0]
        return row is not None

    @property
    def lent(self) -> psycopg.Connection[Any] | None:
        """The connection lent to this tenant now (in a session or a writer's transaction),
        entered as the tenant; None between them."""
        return self._conn

    @property
    def in_transaction(self) -> bool:
        return self.depth > 0

    # the transaction each connection is lent for -------------------------------------------
    def _start(
        self, conn: psycopg.Connection[Any], finish: str | None = None, *, check: bool = True
    ) -> None:
        """End the connection's transaction with `finish` (COMMIT or ROLLBACK), if given, and
        begin the next one as the tenant: one round trip (a pipeline). `check`: the tenant's
        row is still the one this Brain was opened on (`TenantGone` if not)."""
        with conn.pipeline():
            if finish is not None:
                self._finish(conn, finish)
            stamp = self._begin(conn, check=check)
        self._same(stamp)

    def _finish(self, conn: psycopg.Connection[Any], finish: str) -> None:
        """COMMIT or ROLLBACK; a commit on the primary counts a write for the replicas
        (`replica.BUMP`: nothing, unless the transaction wrote), in the same round trip."""
        if finish == "COMMIT" and not self._on_replica:
            conn.execute(reads.BUMP)
        conn.execute(finish)

    def _begin(
        self, conn: psycopg.Connection[Any], *, check: bool = True
    ) -> psycopg.Cursor[Any] | None:
        """BEGIN as the tenant (in the caller's pipeline); with `check` and the tenant known,
        also the tenant's row, for `_same` once the pipeline has run: one statement more in
        the same round trip, never a round trip of its own."""
        conn.execute("BEGIN")
        enter(conn, self.tenant, self._proof, local=True)
        # Approximate (HNSW) scans keep going until k rows pass the tenant's policy.
        conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        self.pool.time_limit(conn)
        if not check or self.stamp is None:
            return None
        return conn.execute(STAMP, (self.tenant,))

    def _same(self, stamp: psycopg.Cursor[Any] | None) -> None:
        """Refuse to go on if the tenant's row is gone or was made again since `known`: her
        brain was deleted by an administrator, and what is there (nothing, or a new brain
        made from the template) is not what this Brain holds in memory."""
        if stamp is None:
            return
        row = stamp.fetchone()
        if row is None or row[0] != self.stamp:
            raise TenantGone(self.tenant)

    def _take(self) -> psycopg.Connection[Any]:
        """A lent connection in a new tenant transaction. A connection that died while idle
        (PostgreSQL restarted) fails this first round trip, before anything is written, so
        one more try on a new connection is safe, for a write too."""
        import psycopg

        for attempt in (1, 2):
            conn = self.pool.take()
            try:
                self._start(conn)
                return conn
            except TenantGone:
                self.pool.give(conn)
                raise
            except psycopg.OperationalError:
                lost = conn.broken or conn.closed
                self.pool.give(conn)
                if not lost or attempt == 2:
                    raise
                self.pool.drop_idle()
        raise AssertionError("unreachable")

    def _give(self, conn: psycopg.Connection[Any], *, commit: bool) -> None:
        from psycopg.pq import TransactionStatus

        lender = self.pool.replica if self._on_replica else self.pool
        assert lender is not None
        try:
            if not conn.broken and not conn.closed:
                status = conn.info.transaction_status
                if status == TransactionStatus.INTRANS:
                    with conn.pipeline():
                        self._finish(conn, "COMMIT" if commit else "ROLLBACK")
                elif status == TransactionStatus.INERROR:
                    conn.execute("ROLLBACK")
        finally:
            self._on_replica = False
            lender.give(conn)

    @contextlib.contextmanager
    def session(self, *, read_only: bool = False) -> Iterator[None]:
        """One connection and one transaction for a unit of work (a server's tool call): the
        tenant entered once and committed once, not around each statement. A writer's
        transaction inside commits when it ends, and the session goes on in a new one.
        `read_only` (a tool that changes nothing): the connection is taken at the first
        statement, from the replica if it may serve (`_reading`); a call that makes none
        (ping, tools/list) takes none."""
        if self._reading is not None or self._conn is not None:
            yield
            return
        if not read_only:
            self._conn = self._take()
        self._reading = read_only  # after the take: a take that failed leaves no session
        try:
            yield
        finally:
            conn, self._conn, self._reading = self._conn, None, None
            if conn is not None:
                self._give(conn, commit=True)  # as each statement alone would have committed

    def _for_reading(self) -> psycopg.Connection[Any]:
        """A read-only session's connection: the replica's if it has replayed this tenant's
        last write (the tenant's count of writes there has reached the primary's: one small
        read on the primary, and one in the replica's first round trip), else the primary's."""
        import psycopg

        replica = self.pool.replica
        if replica is None or not replica.up:
            return self._take()
        want = reads.written(self._primary_mark())
        try:
            conn = replica.take()
        except HostedError as exc:  # refused, or every connection busy
            replica.failed(exc)
            return self._take()
        self._on_replica = True
        try:
            with conn.pipeline():
                stamp = self._begin(conn)
                cursor = conn.execute(reads.READ)
            have = reads.written(cursor.fetchone())
            # A replica that has not replayed a deletion still shows the old brain's rows
            # (and counts): the primary, which checks the tenant again, says what is there.
            self._same(stamp)
        except TenantGone:
            self._give(conn, commit=False)
            replica.counted(reads.BEHIND)
            return self._take()
        except psycopg.Error as exc:
            self._give(conn, commit=False)
            replica.failed(exc)
            return self._take()
        if have >= want:
            replica.counted(reads.SERVED)
            return conn
        self._give(conn, commit=False)
        replica.counted(reads.BEHIND)
        return self._take()

    def _primary_mark(self) -> Any:
        """The tenant's `write_marks` row on the primary, in one round trip; made once more on
        a new connection if the first was found dead (a read: nothing to lose)."""
        import psycopg

        for attempt in (1, 2):
            conn = self.pool.take()
            try:
                with conn.pipeline():
                    stamp = self._begin(conn)
                    cursor = conn.execute(reads.READ)
                    conn.execute("COMMIT")
                self._same(stamp)
                return cursor.fetchone()
            except psycopg.OperationalError:
                if not (conn.broken or conn.closed) or attempt == 2:
                    raise
                self.pool.drop_idle()
            finally:
                self.pool.give(conn)
        raise AssertionError("unreachable")

    def _to_primary(self) -> psycopg.Connection[Any]:
        """The rest of a read-only session on the primary: it writes, or the replica failed."""
        if self._conn is not None and self._on_replica:
            conn, self._conn = self._conn, None
            broken = conn.broken
            self._give(conn, commit=False)
            if broken and self.pool.replica is not None:
                self.pool.replica.failed(HostedError("the replica's connection broke"))
        self._reading = False
        if self._conn is None:
            self._conn = self._take()
        return self._conn

    # statements -----------------------------------------------------------------------------
    def _run(self, statement: Statement) -> Rows:
        import psycopg
        from psycopg.pq import TransactionStatus

        self._lock_again()  # a bulk block's batch was committed: the writer lock first
        conn = self._conn
        if conn is None:
            if self._reading is None:
                return self._alone(statement)
            conn = self._conn = self._for_reading() if self._reading else self._take()
        if conn.info.transaction_status == TransactionStatus.IDLE:  # a commit failed before
            if self.depth:
                raise HostedError("the database ended a transaction under way", "try again")
            self._start(conn)  # never a statement outside a tenant's transaction
        try:
            return Rows(statement(conn))
        except psycopg.Error:
            if self._on_replica:  # a recovery conflict, a write, a replica gone: the primary
                self._to_primary()
                return self._run(statement)
            if self.depth == 0 and not conn.broken:
                # Outside a writer's transaction each statement stood alone, as it does in
                # SQLite: the session goes on in a new transaction.
                with contextlib.suppress(psycopg.Error):
                    self._start(conn, finish="ROLLBACK", check=False)
            raise

    def _alone(self, statement: Statement) -> Rows:
        """A statement in a transaction of its own: entered, run and committed in one round
        trip (a pipeline)."""
        conn = self.pool.take()
        try:
            with conn.pipeline():
                self._begin(conn, check=False)  # a script's statement alone: unchecked
                cursor = statement(conn)
                self._finish(conn, "COMMIT")
            return Rows(cursor)
        finally:
            self.pool.give(conn)  # rolled back there if the statement failed

    def execute(self, sql: str, parameters: Any = (), /) -> Rows:
        return self._run(lambda conn: conn.execute(_format(sql), parameters))

    def value(self, sql: str, parameters: Any = (), /) -> Any:
        """The first column of the first row (a count, a flag), None if there is no row."""
        row = self.execute(sql, parameters).fetchone()
        return None if row is None else row[0]

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> None:
        rows = list(parameters)
        if rows:

            def many(conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
                cursor = conn.cursor()
                cursor.executemany(_format(sql), rows)
                return cursor

            self._run(many)

    def executescript(self, script: str, /) -> None:
        """The catalog's own CREATE statements: the schema is `brain hosted init`'s instead."""

    # a writer's transaction -------------------------------------------------------------------
    def begin(self) -> None:
        if self.depth == 0:
            if self._reading is not None and (self._on_replica or self._conn is None):
                self._to_primary()  # a session that writes: on the primary from here on
            elif self._conn is None:
                self._conn, self._lent_by_begin = self._take(), True
            else:  # in a session: what came before commits, as it would have alone
                self._start(self._conn, finish="COMMIT")
        self.depth += 1

    def end(self, *, ok: bool) -> None:
        """The outermost end commits or rolls back; an error inside reaches it and undoes all
        (but what a failed bulk block finished first: `keeping`)."""
        import psycopg

        self.depth -= 1
        if self.depth:
            return
        commit, self._salvage = ok or self._salvage, False
        conn = self._conn
        assert conn is not None
        try:
            if self._lent_by_begin:
                self._conn, self._lent_by_begin = None, False
                self._give(conn, commit=commit)
            elif not conn.broken:  # the call goes on: its next begin() checks the tenant
                self._start(conn, finish="COMMIT" if commit else "ROLLBACK", check=False)
        except psycopg.Error:
            if ok:
                raise  # the commit failed: the caller must know
            # else the error that ended the block says more than this one

    @contextlib.contextmanager
    def apart(self) -> Iterator[TenantDatabase]:
        """The tenant on another connection of the pool, in one transaction of its own for
        the length of the block."""
        other = TenantDatabase(self.pool, self.tenant, self._key)
        with other.session():
            yield other

    def alive(self) -> bool:
        """Whether this tenant can reach its database: it holds no connection between calls,
        and each call's first round trip replaces a dead one before anything is written."""
        return not self.pool.closed

    def close(self) -> None:
        if self._own_pool:
            self.pool.close()


def known_tenant(source: str | Pool, tenant: str, key: bytes | None = None) -> bool:
    """Whether the database knows this tenant (asked as the tenant: no login lists them)."""
    db = TenantDatabase(source, tenant, key)
    try:
        return db.known()
    finally:
        db.close()
