"""Who the database lets do what: the server's login role, the tenant role, the tenant's proof.

A server logs in as `brain_server`: no superuser, no BYPASSRLS, owner of nothing, a member
of `brain_tenant` only. Row-level security compares each row's tenant with `brain_tenant()`,
which returns the session's `brain.tenant` only when `brain.proof` is the HMAC-SHA256 of that
name under a key kept in a table no login but the owner can read. The server holds the key
(a file `brain hosted init --key-file` writes), so it can enter any tenant; a statement run on
a tenant's connection can read that tenant's own proof and nothing that makes another's:
`RESET ROLE`, `set_config('brain.tenant', 'bob')` or any other setting gets it no row of Bob.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._errors import BrainError

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]

ROLE = "brain_tenant"  # what every tenant's queries run as: never a superuser, never an owner
SERVER_ROLE = "brain_server"  # what servers log in as
KEY_TABLE = "brain_tenant_key"
KEY_BYTES = 32
# Once per statement, not per row: an uncorrelated sub-select is an InitPlan, and its value
# is a parameter an index on (tenant, …) uses as it used the setting before.
TENANT_OF_SESSION = "(SELECT brain_tenant())"
_BLOCK = 64  # SHA-256's block: HMAC's pads are the key padded to it


class TenantKeyError(BrainError):
    """The tenants' key is missing, unreadable or not the database's."""


def proof(key: bytes, tenant: str) -> str:
    """What lets a session act as `tenant`: HMAC-SHA256 of the name, in hex."""
    return hmac.new(key, tenant.encode("utf-8"), hashlib.sha256).hexdigest()


def _pads(key: bytes) -> tuple[bytes, bytes]:
    padded = key.ljust(_BLOCK, b"\0")
    return bytes(b ^ 0x36 for b in padded), bytes(b ^ 0x5C for b in padded)


def create_roles(conn: Conn) -> None:
    """The tenant role and the server's login role, made once; an existing server role that
    was given more (a superuser, BYPASSRLS) is refused rather than served by."""
    for role, login in ((ROLE, "NOLOGIN"), (SERVER_ROLE, "LOGIN")):
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone():
            conn.execute(
                f"CREATE ROLE {role} {login} NOSUPERUSER NOCREATEDB NOCREATEROLE "
                "NOREPLICATION NOBYPASSRLS"
            )
    row = conn.execute(
        "SELECT rolsuper OR rolbypassrls OR rolcreaterole OR rolcreatedb OR rolreplication "
        "FROM pg_roles WHERE rolname = %s",
        (SERVER_ROLE,),
    ).fetchone()
    if row and row[0]:
        raise TenantKeyError(
            f"the role {SERVER_ROLE} has more rights than a server should",
            f"ALTER ROLE {SERVER_ROLE} NOSUPERUSER NOBYPASSRLS NOCREATEROLE NOCREATEDB "
            "NOREPLICATION, then init again",
        )
    conn.execute(f"GRANT {ROLE} TO current_user")
    conn.execute(f"GRANT {ROLE} TO {SERVER_ROLE}")
    # A statement on a server's connection may `ALTER ROLE brain_server SET …` (any role may
    # for itself): init puts its defaults back.
    conn.execute(f"ALTER ROLE {SERVER_ROLE} RESET ALL")
    # Temporary tables and functions last as long as the session, and a session is lent from
    # tenant to tenant (a server's pool, pgbouncer): a temporary `objects` made in one tenant's
    # transaction would stand in for the real one in the next tenant's. The login makes none.
    conn.execute(
        "DO $d$ BEGIN EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC, "
        f"{SERVER_ROLE}', current_database()); END $d$"
    )


def version_3(tenant_tables: tuple[str, ...]) -> list[str]:
    """The key table, `brain_tenant()`, policies that call it, and the server role's grants."""
    statements = [
        f"CREATE TABLE IF NOT EXISTS {KEY_TABLE} (one boolean PRIMARY KEY DEFAULT true "
        "CHECK (one), key bytea NOT NULL, inner_pad bytea NOT NULL, outer_pad bytea NOT NULL)",
        f"REVOKE ALL ON {KEY_TABLE} FROM PUBLIC",
        # The function's owner reads the key; its search_path is fixed to the catalog and the
        # schema it was made in, where no tenant may create anything (PostgreSQL >= 15).
        "DO $do$ BEGIN EXECUTE format($f$"
        "CREATE OR REPLACE FUNCTION brain_tenant() RETURNS text LANGUAGE sql STABLE "
        "SECURITY DEFINER SET search_path = pg_catalog, %I, pg_temp AS $b$"
        "  SELECT s.tenant FROM (SELECT current_setting('brain.tenant', true) AS tenant,"
        "    coalesce(current_setting('brain.proof', true), '') AS proof) s,"
        f"   {KEY_TABLE} k"
        "  WHERE s.tenant <> ''"
        # Digests of both sides compared: how long `=` takes says nothing of the right proof.
        "    AND sha256(convert_to(s.proof, 'UTF8')) = sha256(convert_to(encode(sha256("
        "      k.outer_pad || sha256(k.inner_pad || convert_to(s.tenant, 'UTF8'))), 'hex'),"
        "      'UTF8'))"
        "$b$$f$, current_schema()); END $do$",
        "REVOKE ALL ON FUNCTION brain_tenant() FROM PUBLIC",
        f"GRANT EXECUTE ON FUNCTION brain_tenant() TO {ROLE}",
        # The tenants themselves: each session sees its own row (a server makes a new
        # tenant's as that tenant); the owner, not forced, sees them all for its commands.
        "ALTER TABLE tenants ENABLE ROW LEVEL SECURITY",
        "DROP POLICY IF EXISTS by_tenant ON tenants",
        f"CREATE POLICY by_tenant ON tenants USING (name = {TENANT_OF_SESSION}) "
        f"WITH CHECK (name = {TENANT_OF_SESSION})",
        f"GRANT SELECT, INSERT ON tenants TO {ROLE}",
        f"GRANT SELECT ON brain_migrations TO {SERVER_ROLE}",
        f"GRANT SELECT ON brain_tokens_meta TO {SERVER_ROLE}",
        f"GRANT EXECUTE ON FUNCTION brain_token_tenant(bytea) TO {SERVER_ROLE}",
    ]
    for table in tenant_tables:
        statements += [
            f"DROP POLICY IF EXISTS by_tenant ON {table}",
            f"CREATE POLICY by_tenant ON {table} USING (tenant = {TENANT_OF_SESSION}) "
            f"WITH CHECK (tenant = {TENANT_OF_SESSION})",
        ]
    return statements


def ensure_key(conn: Conn) -> None:
    """The database's key, made once (init); rows of the key table are never replaced here."""
    if conn.execute(f"SELECT 1 FROM {KEY_TABLE}").fetchone():
        return
    key = secrets.token_bytes(KEY_BYTES)
    inner, outer = _pads(key)
    conn.execute(
        f"INSERT INTO {KEY_TABLE} (key, inner_pad, outer_pad) VALUES (%s, %s, %s)",
        (key, inner, outer),
    )


# What to do when a login that may not read the key asks for it: an administrator's command
# needs the owner's login; a server (PgTenants) the key file instead.
OWNERS_LOGIN = (
    "give this command the database owner's DSN, `--db postgresql://OWNER@HOST/DB` (or "
    "$BRAIN_DB): only the owner's login may read the key"
)
KEY_FILE = (
    "give the server the key file: `brain serve --http --tenant-key FILE`, written by "
    "`brain hosted init --key-file FILE` run as the database's owner"
)


def stored_key(conn: Conn, hint: str = OWNERS_LOGIN) -> bytes:
    """The key as the database holds it: only its owner (or a superuser) may read it. `hint`
    says what to do if this login may not (the administrator's, unless a server asks)."""
    import psycopg

    try:
        with conn.transaction():
            row = conn.execute(f"SELECT key FROM {KEY_TABLE}").fetchone()
    except psycopg.errors.InsufficientPrivilege:
        raise TenantKeyError(
            f"the login {conn.info.user!r} cannot read the tenants' key", hint
        ) from None
    if row is None:
        raise TenantKeyError("the database has no tenants' key", "run `brain hosted init DSN`")
    return bytes(row[0])


def check_key(conn: Conn, key: bytes) -> None:
    """Refuse a key that is not the database's (a server given another database's key file):
    with it no tenant's proof holds, and every call would fail on a row the policy refuses."""
    probe = "_key_check"  # no tenant is named so (tokens.TENANT): the proof enters no one
    with conn.transaction():
        conn.execute(
            "SELECT set_config('brain.tenant', %s, true), set_config('brain.proof', %s, true)",
            (probe, proof(key, probe)),
        )
        row = conn.execute("SELECT brain_tenant()").fetchone()
    if row is None or row[0] != probe:
        raise TenantKeyError(
            "the tenants' key given is not this database's",
            "give the key file `brain hosted init --key-file FILE` wrote for this database",
        )


def write_key(key: bytes, path: Path) -> None:
    """The key in a file only its owner reads; an existing file must hold this very key."""
    if path.exists():
        if read_key(path) != key:
            raise TenantKeyError(
                f"{path} holds another key than this database's",
                "give another path, or remove the file if it is stale",
            )
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(key.hex() + "\n", encoding="ascii")


def read_key(path: Path) -> bytes:
    """A key file's key (hex, as `write_key` writes it)."""
    try:
        text = path.read_text(encoding="ascii").strip()
        key = bytes.fromhex(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TenantKeyError(
            f"cannot read the tenants' key from {path}: {exc}",
            "`brain hosted init DSN --key-file FILE` writes it",
        ) from None
    if len(key) < 16:
        raise TenantKeyError(f"{path} holds no key", "`brain hosted init DSN --key-file FILE`")
    return key


def login_warning(conn: Conn) -> str | None:
    """What an operator should hear when a server logs in as more than it needs, else None."""
    row = conn.execute(
        "SELECT r.rolsuper, r.rolbypassrls, EXISTS (SELECT 1 FROM pg_class c "
        "WHERE c.relowner = r.oid AND c.relname = 'objects') FROM pg_roles r "
        "WHERE r.rolname = current_user"
    ).fetchone()
    if row is None or not any(row):
        return None
    return (
        "the server logs in as a superuser or the tables' owner: a statement on a tenant's "
        f"connection could reach every tenant; log in as {SERVER_ROLE} (docs/hosted.md)"
    )


def check_sees_every_tenant(conn: Conn) -> None:
    """Refuse a login that the tenants' policy holds (the servers' `brain_server`): every
    user's pass would silently find no user at all."""
    row = conn.execute(
        "SELECT r.rolsuper OR r.rolbypassrls OR pg_has_role(r.oid, c.relowner, 'USAGE') "
        "FROM pg_roles r, pg_class c WHERE r.rolname = current_user "
        "AND c.oid = to_regclass('tenants')"
    ).fetchone()
    if row is None or not row[0]:
        raise BrainError(
            "this login sees no user's brain but its own (it is not the database's owner)",
            "run the administrator's commands with the database owner's DSN, not the servers'",
        )
