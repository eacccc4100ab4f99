"""A server behind a real pgbouncer in transaction mode, and a server's own connection budget:
tenants borrow connections a transaction at a time, so many share a few and stay apart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import psycopg
import pytest

from bench.http_servers import Server, add_user, call, connect, fresh_database, start
from bench.pgbouncer import installed, pgbouncer
from brain._clock import FixedClock
from brain._hosted import tokens
from brain._hosted.admin import delete_user
from brain._hosted.roles import SERVER_ROLE
from brain._hosted.schema import init as init_schema
from brain._hosted.transfer import push
from brain._hosted.upkeep import sleep_all

TENANTS = 6
WORDS = ("quince", "walrus", "lantern", "harpoon", "saffron", "juniper")


@dataclass
class Served:
    db: str  # the database itself, for counting its connections
    server: Server
    tokens: dict[str, str]


def users(db: str) -> dict[str, str]:
    return {f"user{n}": add_user(db, f"user{n}") for n in range(TENANTS)}


@pytest.fixture(scope="module")
def bounced(pg_dsn: str) -> Iterator[Served]:
    if not installed():  # scripts/test installs it when it runs as root
        pytest.skip("pgbouncer is not installed (apt-get install -y pgbouncer)")
    db = fresh_database(pg_dsn)
    init_schema(db)
    tokens = users(db)
    # Two server connections for six tenants: pgbouncer lends them a transaction at a time.
    with pgbouncer(db, pool=2) as through:
        server = start(through, None, "--max-connections", "4")
        try:
            yield Served(db, server, tokens)
        finally:
            server.stop()


@pytest.fixture(scope="module")
def budgeted(pg_dsn: str) -> Iterator[Served]:
    db = fresh_database(pg_dsn)
    init_schema(db)
    tokens = users(db)
    # Straight to PostgreSQL, so prepared statements may be kept (each on its connection).
    server = start(db, None, "--max-connections", "2", "--prepared-statements")
    try:
        yield Served(db, server, tokens)
    finally:
        server.stop()


class Counter:
    """Counts the servers' connections (their login, `brain_server`) to a database, on one
    connection of its own (a new one each time would leave the last one's backend exiting,
    and counted)."""

    def __init__(self, db: str) -> None:
        self.conn = psycopg.connect(db, autocommit=True)

    def __call__(self) -> int:
        row = self.conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND usename = %s",
            (SERVER_ROLE,),
        ).fetchone()
        assert row is not None
        return int(row[0])


async def tenant_work(served: Served, n: int, count: Counter, seen: list[int]) -> None:
    """Three remembers and recalls of one tenant's own word, taking turns with the others'
    calls; then every other tenant's word finds nothing of theirs."""
    token = served.tokens[f"user{n}"]
    mine = WORDS[n]
    async with connect(served.server.url, token) as client:
        for i in range(3):
            text = f"The {mine} crate number {i} of user{n} is in the cellar."
            await call(client, "remember", {"text": text, "title": f"{mine} {i}"})
            found = json.dumps(await call(client, "recall", {"query": f"{mine} crate", "k": 20}))
            assert all(f"{mine} crate number {j}" in found for j in range(i + 1)), found
            seen.append(count())
            await anyio.sleep(0)
        for other in WORDS:
            if other != mine:
                found = json.dumps(await call(client, "recall", {"query": f"{other} crate"}))
                assert f"{other} crate number" not in found, found


def run_all(served: Served, count: Counter) -> list[int]:
    """Every tenant's work at once; the connections counted along the way."""
    seen: list[int] = []

    async def main() -> None:
        with anyio.fail_after(300):
            async with anyio.create_task_group() as group:
                for n in range(TENANTS):
                    group.start_soon(tenant_work, served, n, count, seen)

    anyio.run(main)
    return seen


def test_tenants_interleave_and_stay_apart_behind_pgbouncer_in_transaction_mode(
    bounced: Served,
) -> None:
    count = Counter(bounced.db)
    seen = run_all(bounced, count)
    count.conn.close()
    # Behind pgbouncer the database sees its pool's server connections, never one a tenant.
    assert seen and max(seen) <= 2, seen
    assert not any("prepared statement" in line for line in bounced.server.said)


def test_max_connections_bounds_the_connections_a_server_holds(budgeted: Served) -> None:
    count = Counter(budgeted.db)
    seen = run_all(budgeted, count)  # six tenants at once, each a brain open on the server
    assert seen and max(seen) <= 2, seen
    assert count() <= 2  # and after, with every tenant's brain still open
    count.conn.close()


def test_the_administrators_commands_run_behind_pgbouncer_in_transaction_mode(
    pg_dsn: str, vault: Path, clock: FixedClock
) -> None:
    """Two server connections for every command in turn: a statement psycopg prepared in one
    command's session met the next command's of the same name ("_pg3_0 already exists")."""
    if not installed():
        pytest.skip("pgbouncer is not installed (apt-get install -y pgbouncer)")
    db = fresh_database(pg_dsn)
    init_schema(db)
    with pgbouncer(db, pool=2) as through:
        for user in ("alice", "bob"):
            push(through, vault, user, clock)
            add_user(through, user)
        with tokens.connect(through) as conn:
            assert [u.name for u in tokens.list_users(conn)] == ["alice", "bob"]
        sleep_all(through, clock, done=None)
        assert delete_user(through, "alice").rows > 0
        assert delete_user(through, "bob").rows > 0
