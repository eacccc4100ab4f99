"""The operator's view of a hosted database: erase one user's brain, and its state at a glance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain._hosted.roles import proof, stored_key
from brain._hosted.schema import TENANT_TABLES, connect, schema_state
from brain._hosted.sql import enter
from brain._hosted.tokens import UnknownUser, check_name

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]


@dataclass(frozen=True)
class Erased:
    user: str
    rows: int  # every row of hers, in every table, tokens included


def delete_user(dsn: str, name: str) -> Erased:
    """Erase every row of a user, her tokens with them, in one transaction; her next request
    at any server is refused (401). Other users' rows are untouched."""
    check_name(name)
    with connect(dsn, autocommit=False) as conn:
        # Her writer lock first: a write of hers in flight at a server ends before this begins.
        conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('brain:' || %s, 0))", (name,))
        # Row-level security sees only the tenant the session proves (a login that is not a
        # superuser is held to it too): enter hers, for this transaction, as this login.
        if _exists(conn, "brain_tenant_key"):
            enter(conn, name, proof(stored_key(conn), name), local=True, role=None)
        rows = 0
        for table in (*_tables_with_tenant(conn), "brain_tokens"):
            if _exists(conn, table):
                done = conn.execute(f"DELETE FROM {table} WHERE tenant = %s", (name,))
                rows += max(done.rowcount, 0)
        if _exists(conn, "tenants"):
            rows += max(conn.execute("DELETE FROM tenants WHERE name = %s", (name,)).rowcount, 0)
        if rows == 0:
            raise UnknownUser(f"no user {name!r}", "`brain hosted user list` shows the users")
        conn.commit()
    return Erased(name, rows)


def _tables_with_tenant(conn: Conn) -> list[str]:
    """Every table with a `tenant` column but the tokens' (TENANT_TABLES, and any table a
    later migration adds: a user's rows are found by the column, not by a list kept apart)."""
    found = conn.execute(
        "SELECT DISTINCT table_name FROM information_schema.columns WHERE table_schema = "
        "current_schema() AND column_name = 'tenant' AND table_name <> 'brain_tokens' "
        "ORDER BY 1"
    ).fetchall()
    return [str(r[0]) for r in found]


def _exists(conn: Conn, table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()
    return row is not None and row[0] is not None


@dataclass(frozen=True)
class Status:
    schema: int | None  # the brains' schema version (None: `brain hosted init` not run)
    serves_from: int | None  # the oldest brain schema version that still runs on it
    tenants: int
    users_with_tokens: int
    rows: dict[str, int]  # by table
    database_bytes: int

    def to_json(self) -> dict[str, object]:
        return self.__dict__.copy()


def status(dsn: str) -> Status:
    """The schema version, how many tenants and users, rows by table, the database's size."""
    with connect(dsn) as conn:
        schema = serves_from = None
        if _exists(conn, "brain_migrations"):  # what it is, even for another brain version
            schema, serves_from = schema_state(conn)
        tenants = _count(conn, "SELECT count(*) FROM tenants") if _exists(conn, "tenants") else 0
        users = 0
        if _exists(conn, "brain_tokens"):
            users = _count(
                conn, "SELECT count(DISTINCT tenant) FROM brain_tokens WHERE revoked IS NULL"
            )
        rows = {
            t: _count(conn, f"SELECT count(*) FROM {t}") for t in TENANT_TABLES if _exists(conn, t)
        }
        size = _count(conn, "SELECT pg_database_size(current_database())")
    return Status(schema, serves_from, tenants, users, rows, size)


def _count(conn: Conn, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0]) if row else 0
