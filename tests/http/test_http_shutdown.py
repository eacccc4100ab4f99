"""SIGTERM stops a server cleanly: no new request is taken, the calls in flight finish, every
tenant is closed, the process exits 0, and every write it acknowledged is there."""

from __future__ import annotations

import signal
import socket
from urllib.parse import urlsplit

import anyio
import psycopg

from bench.http_servers import add_user, call, connect, fresh_database, start
from brain._hosted.schema import init as init_schema
from brain._hosted.tenant import open_tenant
from tests.http.conftest import waiting_for_a_lock


def refuses_connections(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=5).close()
    except OSError:
        return True
    return False


def test_sigterm_under_load_finishes_what_is_in_flight_and_loses_no_acknowledged_write(
    pg_dsn: str,
) -> None:
    db = fresh_database(pg_dsn)
    init_schema(db)
    tokens = {name: add_user(db, name) for name in ("alice", "bob")}
    server = start(db, None)
    acked: dict[str, list[str]] = {"alice": [], "bob": []}

    async def writer(user: str, n: int) -> None:
        try:
            async with connect(server.url, tokens[user]) as mcp:
                for i in range(10_000):
                    text = f"{user} writer {n} memory {i} about the lighthouse"
                    acked[user].append((await call(mcp, "remember", {"text": text}))["id"])
        except Exception:  # the server stopped taking requests: this writer is done
            return

    async def main() -> None:
        async with connect(server.url, tokens["alice"]) as alice:
            await call(alice, "ping")
            holder = psycopg.connect(db, autocommit=True)
            holder.execute("BEGIN")  # alice's writer lock: her next remember is in flight
            holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('brain:alice', 0))")

            async def in_flight() -> None:
                note = await call(alice, "remember", {"text": "In flight at SIGTERM."})
                acked["alice"].append(note["id"])

            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(in_flight)
                    for n in range(4):
                        tg.start_soon(writer, "bob", n)
                    await waiting_for_a_lock(holder)
                    while len(acked["bob"]) < 8:
                        await anyio.sleep(0.02)
                    server.process.send_signal(signal.SIGTERM)
                    while not refuses_connections(server.url):  # no new request is taken
                        await anyio.sleep(0.02)
                    holder.execute("COMMIT")  # now the call in flight may finish
            finally:
                holder.close()

    try:
        anyio.run(main)
        assert server.process.wait(timeout=60) == 0
        assert len(acked["alice"]) == 1 and len(acked["bob"]) >= 8
        for user, ids in acked.items():
            brain = open_tenant(db, user, embedder=None)
            for note_id in ids:
                assert brain._context.get(note_id).id == note_id
            brain.close()
        assert "every tenant's brain closed" in "".join(server.said)
    finally:
        server.stop()  # and its key file with it, whatever the test found
