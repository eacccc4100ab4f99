"""Users and their bearer tokens, in PostgreSQL: random, shown once, stored hashed, revocable.

A token is 32 random bytes (`secrets.token_urlsafe(32)`, 256 bits). It is stored only as its
SHA-256. A slow hash (bcrypt, scrypt, PBKDF2) exists to make guessing a *low-entropy* secret
such as a password expensive; guessing a 256-bit random value is out of reach at any hash
speed, so a slow hash would only add milliseconds to every request. A keyed HMAC would add a
second secret to guard and still protect nothing a leaked 256-bit preimage does not.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from brain._errors import BrainError, InvalidInput, NotFound

if TYPE_CHECKING:
    import psycopg

# Shown as the start of every token, so a secret scanner (and a person) knows one on sight.
PREFIX = "brain_"
# A tenant name is a folder name for the files provider and a key in the database: plain.
TENANT = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
SCHEMA_VERSION = 1

_SCHEMA = """
create table if not exists brain_tokens (
    id bigserial primary key,
    tenant text not null,
    token_sha256 bytea not null unique,
    created timestamptz not null default now(),
    revoked timestamptz
);
create index if not exists brain_tokens_tenant on brain_tokens (tenant) where revoked is null;
create table if not exists brain_tokens_meta (key text primary key, value text not null);
"""
# A server's login may not read the tokens (nor the tenants they name): it asks this function,
# which answers for one hash at a time. Made by the tables' owner; `brain hosted init` grants
# it to the server's role.
_LOOKUP = """
do $do$ begin execute format($f$
create or replace function brain_token_tenant(digest bytea) returns text
language sql stable security definer set search_path = pg_catalog, %I, pg_temp as $b$
    select tenant from brain_tokens where token_sha256 = digest and revoked is null
$b$$f$, current_schema()); end $do$;
revoke all on function brain_token_tenant(bytea) from public;
"""


class UnknownUser(NotFound):
    """No such user in the tokens table."""


@dataclass(frozen=True)
class User:
    """A tenant as `user list` shows it: never a token, never a hash."""

    name: str
    created: datetime
    active_tokens: int
    revoked_tokens: int


def connect(dsn: str) -> psycopg.Connection[Any]:
    """A connection to the users database, with a clear error when it cannot be reached."""
    try:
        import psycopg
    except ImportError:
        raise BrainError(
            "a hosted brain needs psycopg, which is not installed",
            "pip install 'brain-memory[hosted]'",
        ) from None

    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise BrainError(
            f"cannot connect to the users database: {_first_line(exc)}",
            "check --db (a postgresql:// URI) and that the server runs",
        ) from None
    conn.prepare_threshold = None  # as schema.connect: a pooler may stand between
    return conn


def ensure_schema(conn: psycopg.Connection[Any]) -> None:
    """Create the tokens table and its lookup if missing; idempotent, safe from several
    processes at once, and a no-op (no privilege needed) once they exist."""
    ready = conn.execute(
        "select to_regprocedure('brain_token_tenant(bytea)') is not null"
        " and to_regclass('brain_tokens_meta') is not null"
    ).fetchone()
    if ready and ready[0]:
        row = conn.execute("select value from brain_tokens_meta where key = 'schema'").fetchone()
        if row is not None and row[0] == str(SCHEMA_VERSION):
            return
    with conn.transaction():
        # Two processes creating the table at once collide on the catalog: one waits here.
        conn.execute("select pg_advisory_xact_lock(hashtext('brain_tokens schema'))")
        conn.execute(_SCHEMA)
        if conn.execute("select to_regprocedure('brain_token_tenant(bytea)')").fetchone() in (
            None,
            (None,),
        ):
            conn.execute(_LOOKUP)
        conn.execute(
            "insert into brain_tokens_meta (key, value) values ('schema', %s)"
            " on conflict (key) do nothing",
            (str(SCHEMA_VERSION),),
        )
        row = conn.execute("select value from brain_tokens_meta where key = 'schema'").fetchone()
    if row is None or row[0] != str(SCHEMA_VERSION):
        raise BrainError(
            f"the users table is of schema {row[0] if row else '?'}, this brain knows "
            f"{SCHEMA_VERSION}",
            "upgrade brain on this machine",
        )


def check_name(name: str) -> str:
    """A tenant name as it may be stored and used as a folder name."""
    if not TENANT.fullmatch(name):
        raise InvalidInput(
            f"user name {name!r} is not allowed",
            "use 1-63 lowercase letters, digits, '-' or '_', starting with a letter or digit",
        )
    return name


def add_user(conn: psycopg.Connection[Any], name: str) -> str:
    """A new user and its token, returned once: only its hash is kept."""
    check_name(name)
    token = PREFIX + secrets.token_urlsafe(32)
    with conn.transaction():
        conn.execute("select pg_advisory_xact_lock(hashtext(%s))", (f"brain_tokens {name}",))
        active = conn.execute(
            "select 1 from brain_tokens where tenant = %s and revoked is null", (name,)
        ).fetchone()
        if active:
            raise InvalidInput(
                f"user {name!r} already has a token",
                f"revoke it first (`brain hosted user revoke {name}`), then add the user again",
            )
        conn.execute(
            "insert into brain_tokens (tenant, token_sha256) values (%s, %s)",
            (name, _digest(token)),
        )
    return token


def revoke_user(conn: psycopg.Connection[Any], name: str) -> int:
    """Revoke every live token of a user; how many were revoked (0: none was live)."""
    check_name(name)
    known = conn.execute("select 1 from brain_tokens where tenant = %s", (name,)).fetchone()
    if not known:
        raise UnknownUser(f"no user {name!r}", "`brain hosted user list` shows the users")
    done = conn.execute(
        "update brain_tokens set revoked = now() where tenant = %s and revoked is null", (name,)
    )
    return done.rowcount


def list_users(conn: psycopg.Connection[Any]) -> list[User]:
    """Every user, oldest first, with counts of live and revoked tokens."""
    rows = conn.execute(
        "select tenant, min(created), count(*) filter (where revoked is null),"
        " count(*) filter (where revoked is not null)"
        " from brain_tokens group by tenant order by min(created), tenant"
    ).fetchall()
    return [User(name, created, live, dead) for name, created, live, dead in rows]


def tenant_of(conn: psycopg.Connection[Any], token: str) -> str | None:
    """The tenant a live token belongs to, else None (unknown, revoked or malformed alike)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    # The lookup is by the hash, so its timing tells an attacker about the hash of their own
    # guess, not about a stored token.
    row = conn.execute("select brain_token_tenant(%s)", (_digest(token),)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
