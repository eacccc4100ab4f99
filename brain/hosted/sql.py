"""One tenant's connection to PostgreSQL, run as that tenant (row-level security)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from brain.hosted.schema import ROLE, HostedError, check_schema, connect
from brain.vault.paths import check_segment

if TYPE_CHECKING:
    import psycopg


def _format(sql: str) -> str:
    """DB-API's qmark placeholders in psycopg's format style: `?` becomes `%s`, and a literal
    `%` (a LIKE pattern's) doubles. The SQL itself is PostgreSQL's as written: what it spells
    unlike SQLite goes through hosted/dialect.py by name, never rewritten here."""
    return sql.replace("%", "%%").replace("?", "%s")


class TenantDatabase:
    """A connection that runs as the tenant role with `brain.tenant` set, so row-level security
    confines every statement to that tenant. Outside a transaction each statement commits on
    its own; `begin()`/`end()` nest, and the outermost pair is one transaction."""

    def __init__(self, dsn: str, tenant: str) -> None:
        check_segment(tenant, "user")
        self.tenant = tenant
        self.conn: psycopg.Connection[Any] = connect(dsn)
        check_schema(self.conn)
        self.conn.execute(f"SET ROLE {ROLE}")
        self.conn.execute("SELECT set_config('brain.tenant', %s, false)", (tenant,))
        # Approximate (HNSW) scans keep going until k rows pass the tenant's policy.
        self.conn.execute("SET hnsw.iterative_scan = strict_order")
        self.depth = 0

    @property
    def in_transaction(self) -> bool:
        return self.depth > 0

    def execute(self, sql: str, parameters: Any = (), /) -> psycopg.Cursor[Any]:
        return self.conn.execute(_format(sql), parameters)

    def value(self, sql: str, parameters: Any = (), /) -> Any:
        """The first column of the first row (a count, a flag), None if there is no row."""
        row = self.execute(sql, parameters).fetchone()
        return None if row is None else row[0]

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> None:
        rows = list(parameters)
        if rows:
            with self.conn.cursor() as cursor:
                cursor.executemany(_format(sql), rows)

    def executescript(self, script: str, /) -> None:
        """The catalog's own CREATE statements: the schema is `brain hosted init`'s instead."""

    def begin(self) -> None:
        if self.depth == 0:
            self.conn.execute("BEGIN")
        self.depth += 1

    def end(self, *, ok: bool) -> None:
        """The outermost end commits or rolls back; an error inside reaches it and undoes all."""
        self.depth -= 1
        if self.depth == 0:
            self.conn.execute("COMMIT" if ok else "ROLLBACK")

    def alive(self) -> bool:
        """Whether the connection still answers (one round trip); False once it broke, e.g.
        when PostgreSQL restarted while the connection was idle."""
        import psycopg

        if self.conn.closed or self.conn.broken:
            return False
        if self.depth:
            return True  # in a transaction: it answered a moment ago
        try:
            self.conn.execute("SELECT 1")
        except psycopg.Error:
            return False
        return True

    def close(self) -> None:
        self.conn.close()


def known_tenant(conn: psycopg.Connection[Any], tenant: str) -> bool:
    return conn.execute("SELECT 1 FROM tenants WHERE name = %s", (tenant,)).fetchone() is not None


def require_tenant(dsn: str, tenant: str) -> None:
    """Refuse a user the database does not know (`brain hosted push` makes one)."""
    with connect(dsn) as conn:
        check_schema(conn)
        if not known_tenant(conn, tenant):
            raise HostedError(f"no user {tenant!r} in the database", "push a vault for it first")
