"""One tenant's connection to PostgreSQL, run as that tenant (row-level security)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from brain.hosted.roles import ROLE, proof, stored_key
from brain.hosted.schema import check_schema, connect
from brain.vault.paths import check_segment

if TYPE_CHECKING:
    import psycopg


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
    """Make the session (`local=False`) or the transaction in progress (`local=True`) act as
    `tenant`: the tenant role, the name and its proof (brain/hosted/roles.py), in one round
    trip. `role=None` keeps the login's own role (the owner's commands)."""
    conn.execute(
        "SELECT set_config('role', %s, %s), set_config('brain.tenant', %s, %s), "
        "set_config('brain.proof', %s, %s)",
        (role or "none", local, tenant, local, tenant_proof, local),
    )


class TenantDatabase:
    """A connection that runs as the tenant role with `brain.tenant` and its proof set, so
    row-level security confines every statement to that tenant. Outside a transaction each
    statement commits on its own; `begin()`/`end()` nest, and the outermost pair is one
    transaction.

    `key` is the tenants' key (the server's key file); without it, it is read from the
    database, which only the owner's login may do (the administrator's commands)."""

    def __init__(self, dsn: str, tenant: str, key: bytes | None = None) -> None:
        check_segment(tenant, "user")
        self.tenant = tenant
        self.conn: psycopg.Connection[Any] = connect(dsn)
        try:
            check_schema(self.conn)
            key = stored_key(self.conn) if key is None else key
            enter(self.conn, tenant, proof(key, tenant), local=False)
            # Approximate (HNSW) scans keep going until k rows pass the tenant's policy.
            self.conn.execute("SET hnsw.iterative_scan = strict_order")
        except BaseException:
            self.conn.close()
            raise
        self.depth = 0

    def known(self) -> bool:
        """Whether the database knows this tenant (its row in `tenants`, which it alone sees)."""
        return self.value("SELECT 1 FROM tenants WHERE name = ?", (self.tenant,)) is not None

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


def known_tenant(dsn: str, tenant: str, key: bytes | None = None) -> bool:
    """Whether the database knows this tenant (asked as the tenant: no login lists them)."""
    db = TenantDatabase(dsn, tenant, key)
    try:
        return db.known()
    finally:
        db.close()
