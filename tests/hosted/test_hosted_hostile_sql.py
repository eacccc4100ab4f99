"""Isolation held by the database: hostile SQL run on a tenant's own connection, logged in as
the server's role, reads and changes nothing of another tenant; the same statements on that
tenant's connection do find his rows, so the probes can fail."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from brain._clock import FixedClock
from brain._hosted.admin import delete_user
from brain._hosted.pool import Pool
from brain._hosted.roles import ROLE, SERVER_ROLE, TenantKeyError, proof
from brain._hosted.schema import TENANT_TABLES, connect
from brain._hosted.sql import TenantDatabase
from brain._hosted.tenants import PgTenants
from tests.conftest import ServerLogin, pushed

Conn = psycopg.Connection[Any]


@dataclass
class Pair:
    alice: str
    bob: str
    secret: str  # a word only in Bob's note


@pytest.fixture
def pair(hosted_dsn: str, vault: Path, clock: FixedClock) -> Iterator[Pair]:
    tag = uuid.uuid4().hex[:10]
    alice, bob = f"alice{tag}", f"bob{tag}"
    secret = f"quince{tag}"
    pushed(hosted_dsn, vault, clock, alice).close()
    brain = pushed(hosted_dsn, vault, clock, bob)
    brain.remember(f"Bob's {secret} jam recipe.", title=f"Bob {secret}")
    brain.close()
    yield Pair(alice, bob, secret)
    for name in (alice, bob):  # the database is the session's: other tests sleep every user
        delete_user(hosted_dsn, name)


@contextlib.contextmanager
def connection(login: ServerLogin, tenant: str) -> Iterator[Conn]:
    """A tenant's connection as a server's tool call has it (brain/_hosted/sql.py): lent by
    the pool, in a transaction that entered the tenant."""
    db = TenantDatabase(login.dsn, tenant, login.key)
    try:
        with db.session():
            assert db.lent is not None
            yield db.lent
    finally:
        db.close()


def run(conn: Conn, sql: str, params: Any = None) -> Exception | None:
    """One hostile statement; what it raised, if anything (the connection stays usable)."""
    try:
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS:
            with conn.transaction():  # a savepoint: a refusal leaves the transaction going
                conn.execute(sql, params)
        else:
            conn.execute(sql, params)
    except psycopg.Error as exc:
        return exc
    return None


def relations(conn: Conn) -> list[str]:
    """Every table, view and sequence of the schema, as the login's catalog lists them."""
    found = conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relkind IN ('r', 'p', 'v', 'm', 'S') ORDER BY 1"
    ).fetchall()
    return [str(r[0]) for r in found]


def seen(conn: Conn, pair: Pair, tables: list[str]) -> set[str]:
    """The tables in which this connection finds any trace of Bob: his name, his word, or
    his word's bytes (a file's body is bytea)."""
    traces = (pair.bob, pair.secret, pair.secret.encode().hex())
    where = set()
    for table in tables:
        rows = _rows(conn, f'SELECT t::text FROM "{table}" t')
        if any(trace in row for row in rows for trace in traces):
            where.add(table)
    # A function the session made itself, if it did: it runs as the session's login.
    if any(row != "0" for row in _rows(conn, f"SELECT pg_temp.peek('{pair.bob}')")):
        where.add("pg_temp.peek")
    return where


def _rows(conn: Conn, sql: str) -> list[str]:
    try:
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS:
            with conn.transaction():
                return [str(r[0]) for r in conn.execute(sql).fetchall()]
        return [str(r[0]) for r in conn.execute(sql).fetchall()]
    except psycopg.Error:
        return []


def snapshot(owner: Conn, tenant: str) -> dict[str, list[str]]:
    """Every row of a tenant, as the owner sees them."""
    rows = {
        t: [
            str(r[0])
            for r in owner.execute(
                f"SELECT t::text FROM {t} t WHERE tenant = %s ORDER BY 1", (tenant,)
            )
        ]
        for t in TENANT_TABLES
    }
    rows["tenants"] = [
        str(r[0]) for r in owner.execute("SELECT t::text FROM tenants t WHERE name = %s", (tenant,))
    ]
    return rows


# Statements that leave the session's own proof alone: Bob's connection still finds him after
# them, Alice's still must not.
KEEPING = {
    "nothing": [],
    "RESET ROLE": ["RESET ROLE"],
    "SET ROLE NONE": ["SET ROLE NONE"],
    "name bob for the session": ["SELECT set_config('brain.tenant', %(bob)s, false)"],
    "name bob for the transaction": ["BEGIN", "SELECT set_config('brain.tenant', %(bob)s, true)"],
    "reset role, then name bob": [
        "RESET ROLE",
        "SELECT set_config('brain.tenant', %(bob)s, false)",
    ],
    "a security-definer function of the session's own": [
        "CREATE FUNCTION pg_temp.peek(t text) RETURNS bigint LANGUAGE sql SECURITY DEFINER "
        "AS $$ SELECT count(*) FROM public.objects WHERE tenant = t $$",
    ],
    "each refused escalation": [
        "SET ROLE postgres",
        "SET SESSION AUTHORIZATION postgres",
        "SELECT set_config('role', 'postgres', false)",
        "SET ROLE pg_read_all_data",
        "ALTER TABLE objects DISABLE ROW LEVEL SECURITY",
        "ALTER TABLE objects NO FORCE ROW LEVEL SECURITY",
        "DROP POLICY by_tenant ON objects",
        f"ALTER ROLE {SERVER_ROLE} BYPASSRLS",
        f"GRANT pg_read_all_data TO {SERVER_ROLE}",
        "CREATE FUNCTION public.brain_tenant_peek() RETURNS text LANGUAGE sql "
        "SECURITY DEFINER AS $$ SELECT 'x' $$",
        "CREATE OR REPLACE FUNCTION public.brain_tenant() RETURNS text LANGUAGE sql "
        "AS $$ SELECT %(bob)s::text $$",
    ],
}

# Statements that replace the session's proof: Alice's connection must find no one after them.
FORGING = {
    "bob with alice's proof": ["SELECT set_config('brain.tenant', %(bob)s, false)"],
    "bob with a proof under a guessed key": [
        "SELECT set_config('brain.tenant', %(bob)s, false)",
        "SELECT set_config('brain.proof', %(guessed)s, false)",
    ],
    "bob with the hash of his name": [
        "SELECT set_config('brain.tenant', %(bob)s, false)",
        "SELECT set_config('brain.proof', encode(sha256(convert_to(%(bob)s, 'UTF8')), 'hex'), "
        "false)",
    ],
    "bob with no proof": [
        "RESET ROLE",
        "SELECT set_config('brain.tenant', %(bob)s, false)",
        "RESET brain.proof",
    ],
}

# Each must be refused outright, whatever else the session did.
REFUSED = [
    "SET ROLE postgres",
    "SET SESSION AUTHORIZATION postgres",
    "SELECT set_config('role', 'postgres', false)",
    "SELECT pg_read_file('postgresql.conf')",
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT pg_ls_dir('.')",
    "COPY objects TO PROGRAM 'cat > /dev/null'",
    "COPY (SELECT 1) TO '/tmp/brain-hostile'",
    "CREATE FUNCTION public.f() RETURNS int LANGUAGE sql SECURITY DEFINER AS $$ SELECT 1 $$",
    "ALTER TABLE objects DISABLE ROW LEVEL SECURITY",
    "ALTER TABLE objects OWNER TO brain_server",
    "DROP POLICY by_tenant ON objects",
    "TRUNCATE objects",
    "SELECT key FROM brain_tenant_key",
    "SELECT * FROM brain_tokens",
    "SELECT brain_tenant(%(bob)s)",
    "CREATE TABLE public.mine (x int)",
    f"ALTER ROLE {SERVER_ROLE} SUPERUSER",
    "CREATE ROLE hostile",
]

WRITES = [
    "UPDATE objects SET title = 'pwned' WHERE tenant = %(bob)s",
    "DELETE FROM texts WHERE tenant = %(bob)s",
    "DELETE FROM vault_files WHERE tenant <> current_setting('brain.tenant')",
    "INSERT INTO info (key, value, tenant) VALUES ('pwned', 'x', %(bob)s)",
    "UPDATE info SET tenant = %(bob)s",
    "INSERT INTO tenants (name) VALUES ('hostile')",
    "UPDATE brain_tenant_key SET key = '\\x00'",
]


def _values(pair: Pair, key: bytes) -> dict[str, str]:
    guessed = hmac.new(b"\0" * 32, pair.bob.encode(), hashlib.sha256).hexdigest()
    return {"bob": pair.bob, "guessed": guessed, "alice": pair.alice}


def _apply(conn: Conn, statements: list[str], values: dict[str, str]) -> None:
    for sql in statements:
        run(conn, sql, values if "%(" in sql else None)


def test_hostile_sql_on_a_tenants_connection_reads_and_changes_nothing_of_another(
    pair: Pair, hosted_dsn: str, server_login: ServerLogin
) -> None:
    values = _values(pair, server_login.key)
    with connect(hosted_dsn) as owner:
        before = snapshot(owner, pair.bob)
    assert before["objects"] and before["tenants"]
    with connection(server_login, pair.alice) as probe:
        tables = relations(probe)
    assert {"objects", "vault_files", "tenants", "brain_tokens", "brain_tenant_key"} <= set(tables)
    for name, statements in {**KEEPING, **FORGING}.items():
        with connection(server_login, pair.alice) as alice:
            assert alice.execute("SELECT session_user").fetchone() == (SERVER_ROLE,)
            _apply(alice, statements, values)
            assert seen(alice, pair, tables) == set(), name
            for sql in WRITES:
                run(alice, sql, values if "%(" in sql else None)
        if name in KEEPING:  # the probes can fail: Bob's own connection finds him
            with connection(server_login, pair.bob) as bob:
                _apply(bob, statements, values)
                found = seen(bob, pair, tables)
                assert {"objects", "texts", "vault_files", "tenants", "write_marks"} <= found, name
    with connect(hosted_dsn) as owner:
        assert snapshot(owner, pair.bob) == before
        assert not owner.execute("SELECT 1 FROM tenants WHERE name = 'hostile'").fetchone()


def test_each_escalation_is_refused_and_only_a_real_proof_opens_a_tenant(
    pair: Pair, server_login: ServerLogin
) -> None:
    values = _values(pair, server_login.key)
    with connection(server_login, pair.alice) as alice:
        for sql in REFUSED:
            failed = run(alice, sql, values if "%(" in sql else None)
            assert isinstance(
                failed, (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFunction)
            ), sql
        tables = relations(alice)
        # The lookup of tokens (the login's, not the tenant role's) answers for one hash at
        # a time: a guess finds no one.
        alice.execute("RESET ROLE")
        assert alice.execute("SELECT brain_token_tenant('\\x00')").fetchone() == (None,)
        assert seen(alice, pair, tables) == set()
        # What opens Bob is his proof, which only the key makes: set by hand here, it does.
        alice.execute(
            "SELECT set_config('brain.tenant', %s, false), set_config('brain.proof', %s, false)",
            (pair.bob, proof(server_login.key, pair.bob)),
        )
        assert {"objects", "texts", "tenants"} <= seen(alice, pair, tables)


def test_the_servers_role_is_no_superuser_owns_nothing_and_belongs_to_the_tenant_role_only(
    hosted_dsn: str, server_login: ServerLogin
) -> None:
    with connect(hosted_dsn) as owner:
        row = owner.execute(
            "SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb, rolreplication, "
            "rolcanlogin FROM pg_roles WHERE rolname = %s",
            (SERVER_ROLE,),
        ).fetchone()
        assert row == (False, False, False, False, False, True)
        owned = owner.execute(
            "SELECT count(*) FROM pg_class WHERE relowner = %s::regrole", (SERVER_ROLE,)
        ).fetchone()
        assert owned == (0,)
        member_of = owner.execute(
            "SELECT array_agg(roleid::regrole::text) FROM pg_auth_members "
            "WHERE member = %s::regrole",
            (SERVER_ROLE,),
        ).fetchone()
        assert member_of == ([ROLE],)
    # A login of its own cannot read the key, so a server without the key file is refused.
    with pytest.raises(TenantKeyError, match="cannot read the tenants' key"):
        PgTenants(server_login.dsn)


def test_a_server_given_another_databases_key_is_refused_at_start(
    server_login: ServerLogin,
) -> None:
    """With it every tenant's first call failed on a row the policy refused, and the server's
    log said no more than that."""
    with pytest.raises(TenantKeyError, match="not this database's"):
        PgTenants(server_login.dsn, key=bytes(32))
    PgTenants(server_login.dsn, key=server_login.key).close()


def test_a_server_opens_its_tenants_as_the_servers_role(
    pair: Pair, server_login: ServerLogin, hosted_dsn: str
) -> None:
    tenants = PgTenants(server_login.dsn, key=server_login.key)
    brain = tenants.open(pair.bob)
    try:
        assert [h.title for h in brain.recall(pair.secret)][:1] == [f"Bob {pair.secret}"]
        db = brain._context.storage.db  # type: ignore[union-attr]
        with db.session():
            conn = db.lent
            assert conn.execute("SELECT session_user, current_user").fetchone() == (
                SERVER_ROLE,
                ROLE,
            )
            run(conn, "RESET ROLE")
            run(conn, "SELECT set_config('brain.tenant', %s, false)", (pair.alice,))
            assert db.value("SELECT count(*) FROM objects") == 0
    finally:
        brain.close()
        tenants.close()
    # A new tenant is made by the server's role too, as that tenant.
    new = f"carol{uuid.uuid4().hex[:8]}"
    tenants = PgTenants(server_login.dsn, key=server_login.key, embedder="hashing")
    try:
        tenants.open(new).close()
    finally:
        tenants.close()
    assert delete_user(hosted_dsn, new).rows > 0


def test_what_one_tenant_leaves_on_a_lent_connection_shows_nothing_to_the_next(
    pair: Pair, server_login: ServerLogin
) -> None:
    """A server's pool (and pgbouncer) lends one session to tenant after tenant: what a
    statement of Alice's leaves on it (settings for the session, a temporary table standing in
    for `objects`) must neither show Bob's rows to her nor hers, or a forgery, to Bob."""
    pool = Pool(server_login.dsn, 1)  # one connection: Bob's transaction gets Alice's session
    alice = TenantDatabase(pool, pair.alice, server_login.key)
    bob = TenantDatabase(pool, pair.bob, server_login.key)
    try:
        with alice.session():
            conn = alice.lent
            assert conn is not None
            planted = run(
                conn,
                "CREATE TEMP TABLE objects AS SELECT * FROM public.objects WHERE false",
            )
            assert isinstance(planted, psycopg.errors.InsufficientPrivilege)
            for sql in (
                "RESET ROLE",
                "SELECT set_config('brain.tenant', current_setting('brain.tenant'), false)",
                "SELECT set_config('brain.proof', current_setting('brain.proof'), false)",
                "SET search_path = pg_temp, public",
            ):
                assert run(conn, sql) is None, sql
        with bob.session():  # the same session, entered as Bob
            assert bob.lent is conn
            titles = {str(r[0]) for r in bob.execute("SELECT title FROM objects").fetchall()}
            assert f"Bob {pair.secret}" in titles
            owners = bob.execute("SELECT DISTINCT tenant FROM objects").fetchall()
            assert owners == [(pair.bob,)]
        with alice.session():  # and Alice, after Bob, sees none of his
            assert alice.value("SELECT count(*) FROM objects WHERE tenant = ?", (pair.bob,)) == 0
    finally:
        pool.close()
