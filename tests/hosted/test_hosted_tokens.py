"""Users and tokens in a real PostgreSQL: random, shown once, stored only hashed, revocable."""

from __future__ import annotations

import hashlib
import json

import psycopg
import pytest
from typer.testing import CliRunner

from bench.http_servers import fresh_database
from brain._cli import _register as register_commands
from brain._cli import app
from brain._errors import InvalidInput, NotFound
from brain._hosted import tokens


@pytest.fixture
def db(pg_dsn: str) -> str:
    return fresh_database(pg_dsn)


@pytest.fixture
def conn(db: str) -> psycopg.Connection:  # type: ignore[type-arg]
    with tokens.connect(db) as c:
        tokens.ensure_schema(c)
        yield c


def test_schema_is_idempotent(conn: psycopg.Connection) -> None:  # type: ignore[type-arg]
    tokens.add_user(conn, "alice")
    tokens.ensure_schema(conn)
    tokens.ensure_schema(conn)
    assert [u.name for u in tokens.list_users(conn)] == ["alice"]


def test_a_token_is_random_and_stored_only_as_its_hash(conn: psycopg.Connection) -> None:  # type: ignore[type-arg]
    first, second = tokens.add_user(conn, "alice"), tokens.add_user(conn, "bob")
    assert first != second and first.startswith("brain_") and len(first) >= 6 + 43
    rows = conn.execute("select * from brain_tokens").fetchall()
    stored = json.dumps([[str(v) for v in row] for row in rows])
    assert first not in stored and first[6:] not in stored  # the token itself is nowhere
    hashes = {bytes(r[0]) for r in conn.execute("select token_sha256 from brain_tokens")}
    assert hashlib.sha256(first.encode()).digest() in hashes


def test_a_live_token_names_its_tenant_and_nothing_else_does(conn: psycopg.Connection) -> None:  # type: ignore[type-arg]
    token = tokens.add_user(conn, "alice")
    assert tokens.tenant_of(conn, token) == "alice"
    assert tokens.tenant_of(conn, token + "x") is None
    assert tokens.tenant_of(conn, token[:-1]) is None
    assert tokens.tenant_of(conn, "") is None
    assert tokens.tenant_of(conn, "alice") is None
    assert tokens.tenant_of(conn, "brain_" + "A" * 5000) is None


def test_revoked_tokens_stop_at_once_and_a_new_one_can_be_given(
    conn: psycopg.Connection,  # type: ignore[type-arg]
) -> None:
    old = tokens.add_user(conn, "alice")
    with pytest.raises(InvalidInput, match="already has a token"):
        tokens.add_user(conn, "alice")
    assert tokens.revoke_user(conn, "alice") == 1
    assert tokens.tenant_of(conn, old) is None
    assert tokens.revoke_user(conn, "alice") == 0
    new = tokens.add_user(conn, "alice")
    assert tokens.tenant_of(conn, new) == "alice" and tokens.tenant_of(conn, old) is None
    (user,) = tokens.list_users(conn)
    assert (user.name, user.active_tokens, user.revoked_tokens) == ("alice", 1, 1)
    with pytest.raises(NotFound, match="no user 'carol'"):
        tokens.revoke_user(conn, "carol")


@pytest.mark.parametrize("name", ["", "Alice", "../bob", "a/b", ".hidden", "a b", "x" * 64])
def test_user_names_are_plain(conn: psycopg.Connection, name: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInput, match="user name"):
        tokens.add_user(conn, name)
    assert tokens.list_users(conn) == []


def test_the_commands_print_a_token_once_and_never_list_it(db: str) -> None:
    register_commands()
    runner = CliRunner()
    added = runner.invoke(app, ["hosted", "user", "add", "alice", "--db", db])
    assert added.exit_code == 0, added.output
    token = added.stdout.strip()
    assert token.startswith("brain_") and "shown only now" in added.stderr
    listed = runner.invoke(app, ["hosted", "user", "list", "--db", db, "--json"])
    assert listed.exit_code == 0 and token not in listed.output
    assert json.loads(listed.stdout)["users"][0]["active_tokens"] == 1
    again = runner.invoke(app, ["hosted", "user", "add", "alice", "--db", db])
    assert again.exit_code == 2 and "already has a token" in again.stderr
    revoked = runner.invoke(app, ["hosted", "user", "revoke", "alice", "--db", db])
    assert revoked.exit_code == 0 and "Revoked 1 token" in revoked.stdout
    with tokens.connect(db) as conn:
        assert tokens.tenant_of(conn, token) is None


def test_an_unreachable_database_is_one_clear_line() -> None:
    register_commands()
    bad = "postgresql://nobody@127.0.0.1:1/none"
    result = CliRunner().invoke(app, ["hosted", "user", "list", "--db", bad])
    assert result.exit_code == 2
    assert "cannot connect to the users database" in result.stderr
    assert "Traceback" not in result.output
