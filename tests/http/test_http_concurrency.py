"""`brain serve --http` serves many requests at once: a call waiting on PostgreSQL holds up
neither /healthz nor another tenant, and tenants served side by side stay apart."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import httpx2
import psycopg
import pytest

from bench.http_servers import Server, add_user, call, connect, fresh_database, start
from brain._hosted.schema import init as init_schema
from brain._hosted.tenant import open_tenant
from tests.http.conftest import waiting_for_a_lock


@dataclass
class One:
    db: str
    server: Server
    alice: str
    bob: str


@pytest.fixture(scope="module")
def one(pg_dsn: str) -> Iterator[One]:
    db = fresh_database(pg_dsn)
    init_schema(db)
    alice, bob = add_user(db, "alice"), add_user(db, "bob")
    server = start(db, None)
    try:
        yield One(db, server, alice, bob)
    finally:
        server.stop()


def test_a_call_waiting_on_the_database_holds_up_neither_health_nor_another_tenant(
    one: One,
) -> None:
    health = one.server.url.removesuffix("/mcp") + "/healthz"

    async def main() -> None:
        async with (
            connect(one.server.url, one.alice) as alice,
            connect(one.server.url, one.bob) as bob,
            httpx2.AsyncClient(timeout=30) as http,
        ):
            await call(alice, "ping")
            await call(bob, "remember", {"text": "Bob's ferry leaves at nine.", "title": "Ferry"})
            # Alice's writer lock, taken from outside: her next remember waits in the server.
            holder = psycopg.connect(one.db, autocommit=True)
            holder.execute("BEGIN")
            holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('brain:alice', 0))")
            done = anyio.Event()

            async def blocked() -> None:
                await call(alice, "remember", {"text": "Alice waited.", "title": "Waited"})
                done.set()

            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(blocked)
                    await waiting_for_a_lock(holder)
                    assert (await http.get(health)).json() == {"ok": True}
                    hits = (await call(bob, "recall", {"query": "ferry"}))["hits"]
                    assert [h["title"] for h in hits] == ["Ferry"]
                    assert not done.is_set()  # all of that while alice's call still waited
                    holder.execute("COMMIT")
            finally:
                holder.close()
            assert done.is_set()

    anyio.run(main)


def test_tenants_served_side_by_side_each_write_and_read_only_their_own(one: One) -> None:
    tokens = {"alice": one.alice, "bob": one.bob}
    seen: dict[str, set[str]] = {"alice": set(), "bob": set()}

    async def client(user: str, n: int) -> None:
        async with connect(one.server.url, tokens[user]) as mcp:
            for i in range(5):
                text = f"{user} side note {n}-{i} about lanterns"
                note = await call(mcp, "remember", {"text": text, "title": f"side {n} {i}"})
                seen[user].add(note["id"])
                hits = await call(mcp, "recall", {"query": "side note lanterns", "k": 20})
                side = [h for h in hits["hits"] if h["title"].startswith("side")]
                assert side and all(user in h["snippet"] for h in side), side

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(4):
                for user in tokens:
                    tg.start_soon(client, user, n)

    anyio.run(main)
    for user, ids in seen.items():
        brain = open_tenant(one.db, user, embedder=None)
        mine = {
            r.id
            for r in brain.list(node="Knowledge/Inbox", limit=1000)
            if r.title.startswith("side")
        }
        brain.close()
        assert mine == ids and len(ids) == 20
