"""`brain hosted init` makes the roles and the tenants' key, writes the key file for the
servers, and brings a database of an older schema up to the proof-bound policies."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from bench.http_servers import fresh_database
from brain._cli import _register as register_commands
from brain._cli import app
from brain._hosted import schema
from brain._hosted.roles import SERVER_ROLE, read_key, stored_key
from brain._hosted.sql import TenantDatabase

register_commands()


def test_init_writes_the_key_file_once_and_refuses_another_key(pg_dsn: str, tmp_path: Path) -> None:
    db = fresh_database(pg_dsn)
    key_file = tmp_path / "keys" / "tenant.key"
    made = CliRunner().invoke(app, ["hosted", "init", db, "--key-file", str(key_file)])
    assert made.exit_code == 0, made.output
    assert SERVER_ROLE in made.output
    assert key_file.stat().st_mode & 0o777 == 0o600
    with psycopg.connect(db) as owner:
        assert read_key(key_file) == stored_key(owner)
    again = CliRunner().invoke(app, ["hosted", "init", db, "--key-file", str(key_file)])
    assert again.exit_code == 0, again.output  # the same key: nothing to do
    key_file.write_text("00" * 32 + "\n")
    other = CliRunner().invoke(app, ["hosted", "init", db, "--key-file", str(key_file)])
    assert other.exit_code == 2 and "another key" in other.output


def test_a_database_of_schema_2_is_brought_to_3_and_its_tenants_kept(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    with psycopg.connect(db, autocommit=False) as conn:  # as `brain hosted init` left it at 2
        conn.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{schema.ROLE}')"
            f" THEN CREATE ROLE {schema.ROLE} NOLOGIN; END IF; END $$"
        )
        conn.execute(
            "CREATE TABLE brain_migrations (version integer PRIMARY KEY, "
            "applied timestamptz NOT NULL DEFAULT now())"
        )
        for version in (1, 2):
            for statement in schema.MIGRATIONS[version]():
                conn.execute(statement)
            conn.execute("INSERT INTO brain_migrations (version) VALUES (%s)", (version,))
        for tenant in ("old", "other"):
            conn.execute("INSERT INTO tenants (name) VALUES (%s)", (tenant,))
            conn.execute(
                "INSERT INTO info (key, value, tenant) VALUES ('mine', %s, %s)", (tenant, tenant)
            )
        conn.commit()
    assert schema.init(db) == schema.SCHEMA_VERSION == 8
    with psycopg.connect(db) as owner:
        key = stored_key(owner)
    server = TenantDatabase(make_conninfo(db, user=SERVER_ROLE), "old", key)
    try:
        assert server.known()
        assert server.execute("SELECT value FROM info").fetchall() == [("old",)]
    finally:
        server.close()


def test_init_gives_the_servers_login_the_password_from_the_environment(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    said = CliRunner().invoke(
        app, ["hosted", "init", db], env={"BRAIN_SERVER_PASSWORD": 'it\'s-a "quoted" secret'}
    )
    assert said.exit_code == 0, said.output
    try:
        with psycopg.connect(db) as owner:  # roles are the cluster's: read as a superuser
            row = owner.execute(
                "SELECT rolpassword FROM pg_authid WHERE rolname = %s", (SERVER_ROLE,)
            ).fetchone()
            assert row is not None and str(row[0]).startswith("SCRAM-SHA-256$")
            assert scram_holds(str(row[0]), 'it\'s-a "quoted" secret')
            assert not scram_holds(str(row[0]), "another")
    finally:
        with psycopg.connect(db, autocommit=True) as owner:
            owner.execute(f"ALTER ROLE {SERVER_ROLE} PASSWORD NULL")


def scram_holds(secret: str, password: str) -> bool:
    """Whether PostgreSQL's SCRAM-SHA-256 secret was made from `password` (RFC 5802/7677)."""
    _, rest = secret.split("$", 1)
    params, keys = rest.split("$")
    rounds, salt = params.split(":")
    stored, _server = keys.split(":")
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt), int(rounds))
    client = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return base64.b64encode(hashlib.sha256(client).digest()).decode() == stored
