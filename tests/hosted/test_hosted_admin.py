"""The operator's commands: `brain hosted user delete` erases every row of one user and no
other's; `brain hosted status` says what the database holds."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from typer.testing import CliRunner

from bench.http_servers import add_user, call, connect, fresh_database, start
from brain._cli import _register as register_commands
from brain._cli import app
from brain._clock import FixedClock
from brain._hosted.admin import delete_user
from brain._hosted.roles import SERVER_ROLE, TenantKeyError
from brain._hosted.schema import SCHEMA_VERSION
from brain._hosted.schema import init as init_schema
from brain._hosted.tenants import PgTenants
from tests.conftest import pushed


def rows_of(db: str, user: str) -> dict[str, int]:
    """Her rows in every table of the database that names a tenant, and in `tenants`."""
    with psycopg.connect(db, autocommit=True) as conn:
        tables = [
            str(r[0])
            for r in conn.execute(
                "SELECT DISTINCT table_name FROM information_schema.columns "
                "WHERE table_schema = 'public' AND column_name = 'tenant'"
            )
        ]
        found = {
            t: conn.execute(f"SELECT count(*) FROM {t} WHERE tenant = %s", (user,)).fetchone()[0]  # type: ignore[index]
            for t in tables
        }
        found["tenants"] = conn.execute(
            "SELECT count(*) FROM tenants WHERE name = %s", (user,)
        ).fetchone()[0]  # type: ignore[index]
    return found


@pytest.fixture
def two(pg_dsn: str, vault: Path, clock: FixedClock) -> str:
    db = fresh_database(pg_dsn)
    init_schema(db)
    for user in ("alice", "bob"):
        brain = pushed(db, vault, clock, user)
        brain.remember(f"{user} keeps bees on the roof.", title="Bees")
        brain.close()
        add_user(db, user)
    register_commands()
    return db


def test_user_delete_erases_every_row_of_hers_and_none_of_his(two: str) -> None:
    before = rows_of(two, "bob")
    assert rows_of(two, "alice")["vault_files"] > 0 and rows_of(two, "alice")["brain_tokens"]
    done = CliRunner().invoke(app, ["hosted", "user", "delete", "alice", "--db", two, "--yes"])
    assert done.exit_code == 0, done.output
    assert set(rows_of(two, "alice").values()) == {0}
    assert rows_of(two, "bob") == before


def test_user_delete_without_yes_or_of_no_one_changes_nothing(two: str) -> None:
    before = rows_of(two, "alice")
    unsure = CliRunner().invoke(app, ["hosted", "user", "delete", "alice", "--db", two])
    assert unsure.exit_code == 2 and "--yes" in unsure.stderr
    nobody = CliRunner().invoke(app, ["hosted", "user", "delete", "carol", "--db", two, "--yes"])
    assert nobody.exit_code == 2 and "no user 'carol'" in nobody.stderr
    assert rows_of(two, "alice") == before


def test_status_says_the_schema_users_brains_rows_and_size(two: str) -> None:
    said = CliRunner().invoke(app, ["hosted", "status", "--db", two, "--json"])
    assert said.exit_code == 0, said.output
    found = json.loads(said.stdout)
    # Versions 4 and 5 only added (a table, a column): a server of 3 still runs on them
    # (schema.SERVES_FROM).
    assert found["schema"] == SCHEMA_VERSION == 8 and found["serves_from"] == 3
    assert found["tenants"] == 2 and found["users_with_tokens"] == 2
    assert found["rows"]["vault_files"] > 0 and found["database_bytes"] > 0


@pytest.mark.parametrize(
    "command",
    [
        ["user", "add", "carol"],
        ["user", "revoke", "alice"],
        ["user", "list"],
        ["status"],
        ["sleep"],
        ["user", "delete", "alice", "--yes"],
    ],
)
def test_the_servers_login_gets_one_line_from_the_administrators_commands(
    two: str, command: list[str]
) -> None:
    """An operator who gives the servers' DSN (`brain_server`) is told to use the owner's:
    no traceback, and no sleep that finds no user and says nothing."""
    before = rows_of(two, "alice")
    servers = make_conninfo(two, user=SERVER_ROLE)
    said = CliRunner().invoke(app, ["hosted", *command, "--db", servers])
    assert said.exit_code == 2, said.output
    assert "owner's DSN" in said.stderr and "\n" not in said.stderr.strip()
    assert rows_of(two, "alice") == before


def test_a_user_deleted_and_added_again_gets_a_new_brain_from_a_server_that_had_hers_open(
    two: str,
) -> None:
    """The server that had her Brain open does not go on with it (no partition left: every
    call refused until it restarted); her next call opens a new one, made from the template."""
    server = start(two, None)
    try:

        async def main() -> None:
            async with connect(server.url, add_user(two, "carol")) as mcp:
                await call(mcp, "remember", {"text": "Carol's old kite is red.", "title": "Kite"})
            delete_user(two, "carol")
            async with connect(server.url, add_user(two, "carol")) as mcp:
                assert (await call(mcp, "recall", {"query": "kite"}))["hits"] == []
                await call(mcp, "remember", {"text": "Carol's new kite is blue.", "title": "K"})
                assert (await call(mcp, "usage"))["notes"] > 1  # the template's notes too

        anyio.run(main)
    finally:
        server.stop()
    assert rows_of(two, "carol")["tenants"] == 1


@pytest.mark.parametrize(
    "command", [["user", "delete", "alice", "--yes"], ["pull", "--user", "alice"]]
)
def test_the_administrators_commands_that_need_the_key_tell_the_administrator_which_login(
    two: str, command: list[str], tmp_path: Path
) -> None:
    """`user delete` and `pull` with the servers' login need the tenants' key: the hint is
    the administrator's (the owner's DSN in `--db`), not the server's `--tenant-key`."""
    servers = make_conninfo(two, user=SERVER_ROLE)
    where = [str(tmp_path / "copy")] if command[0] == "pull" else []
    said = CliRunner().invoke(app, ["hosted", *command, *where, "--db", servers])
    assert said.exit_code == 2, said.output
    line = " ".join(said.stderr.split())
    assert "'brain_server' cannot read the tenants' key" in line
    assert "owner's DSN, `--db postgresql://OWNER@HOST/DB`" in line
    assert "--tenant-key" not in line and "brain serve" not in line
    # A server without the key file is still told to give it one.
    with pytest.raises(TenantKeyError, match="--tenant-key FILE"):
        PgTenants(servers)


def test_a_server_that_had_a_deleted_users_brain_open_never_reads_her_an_empty_or_old_one(
    two: str,
) -> None:
    """Deleted and added again, her reads through a server that still had her old Brain open
    showed an empty brain (no error, so nothing reopened it); now each call's first round trip
    finds her tenant's row is not the one her Brain was opened on, and opens the new one."""
    server = start(two, None)
    try:

        async def main() -> None:
            async with connect(server.url, add_user(two, "carol")) as mcp:
                await call(mcp, "remember", {"text": "Carol's old kite is red.", "title": "Kite"})
                template = (await call(mcp, "usage"))["notes"] - 1
            delete_user(two, "carol")
            async with connect(server.url, add_user(two, "carol")) as mcp:
                # Nobody has written as her since: her brain is the template's, not empty.
                assert (await call(mcp, "usage"))["notes"] == template
                titles = [n["title"] for n in (await call(mcp, "list_memories"))["notes"]]
                assert len(titles) == template and "Kite" not in titles
            # Deleted and added again once more; this time another server writes as her first.
            delete_user(two, "carol")
            token = add_user(two, "carol")
            elsewhere = PgTenants(two, embedder="hashing")
            try:
                brain = elsewhere.open("carol")
                brain.remember("Carol's new kite is blue.", title="Blue kite")
                brain.close()
            finally:
                elsewhere.close()
            async with connect(server.url, token) as mcp:
                assert (await call(mcp, "usage"))["notes"] == template + 1
                titles = [n["title"] for n in (await call(mcp, "list_memories"))["notes"]]
                assert "Blue kite" in titles and "Kite" not in titles
                hits = (await call(mcp, "recall", {"query": "kite"}))["hits"]
                assert [h["title"] for h in hits] == ["Blue kite"]

        anyio.run(main)
    finally:
        server.stop()
