"""What the tests of `brain serve --http` share: a ping, MCP headers, a lock wait, no leaks."""

from __future__ import annotations

import anyio
import psycopg

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def waiting_for_a_lock(holder: psycopg.Connection[tuple[object, ...]]) -> None:
    """Until some statement waits for an advisory lock (alice's writer lock)."""
    with anyio.fail_after(60):
        while not holder.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()[0]:  # type: ignore[index]
            await anyio.sleep(0.05)


# What an error said to a client must never show: paths, the socket, the database, its SQL.
LEAKS = ("/tmp", "socket", "postgresql://", "dbname", "host=", "SELECT", "INSERT", "FATAL")


def plain(text: str) -> None:
    assert "\n" not in text and not any(leak in text for leak in LEAKS), text
