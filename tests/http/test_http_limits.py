"""Limits of `brain serve --http`: slow headers are cut off, slow bodies get 408, no endless
GET stream is kept, a user's requests in flight are bounded, and a PostgreSQL statement that
runs too long is cancelled, with one plain line for the model."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import psycopg
import pytest
from mcp.shared.exceptions import MCPError

from bench.http_servers import Server, add_user, answer, call, connect, fresh_database, start
from brain._hosted.schema import init as init_schema
from tests.http.conftest import JSON_HEADERS, PING, plain


@dataclass
class Limited:
    db: str
    server: Server
    token: str

    def raw(self) -> socket.socket:
        parts = urlsplit(self.server.url)
        return socket.create_connection((parts.hostname, parts.port), timeout=60)


@pytest.fixture(scope="module")
def limited(pg_dsn: str) -> Iterator[Limited]:
    db = fresh_database(pg_dsn)
    init_schema(db)
    token = add_user(db, "alice")
    server = start(
        db,
        None,
        "--header-timeout",
        "1",
        "--body-timeout",
        "1",
        "--max-requests-per-user",
        "2",
        "--statement-timeout",
        "1",
    )
    try:
        yield Limited(db, server, token)
    finally:
        server.stop()


def test_a_connection_slow_to_send_its_headers_is_closed(limited: Limited) -> None:
    sock = limited.raw()
    sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
    assert sock.recv(1024) == b""  # closed by the server (a minute's wait would raise)
    sock.close()


def test_a_body_slow_to_come_gets_408(limited: Limited) -> None:
    sock = limited.raw()
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {limited.token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        'Content-Length: 400\r\n\r\n{"jsonrpc"'
    )
    sock.sendall(head.encode())
    answer_ = sock.recv(4096)
    assert answer_.startswith(b"HTTP/1.1 408")
    sock.close()


def test_no_endless_stream_is_kept_open(limited: Limited) -> None:
    headers = {"authorization": f"Bearer {limited.token}", "accept": "text/event-stream"}
    got = httpx2.get(limited.server.url, headers=headers, timeout=30)
    assert got.status_code == 405 and got.headers["allow"] == "POST"


def held(db: str, sql: str) -> psycopg.Connection[tuple[object, ...]]:
    holder = psycopg.connect(db, autocommit=True)
    holder.execute("BEGIN")
    holder.execute(sql)
    return holder


async def taken(mcp: Any, text: str) -> None:
    """A remember, sent again when the bound refused it: a probe in flight as it arrived
    counts against the same two (the probes below then find the two in flight)."""
    while True:
        try:
            await call(mcp, "remember", {"text": text})
            return
        except MCPError:  # 429: refused at the door, nothing written
            await anyio.sleep(0.05)


def test_a_users_requests_in_flight_are_bounded(limited: Limited) -> None:
    server = start(limited.db, None, "--max-requests-per-user", "2")
    holder = held(limited.db, "SELECT pg_advisory_xact_lock(hashtextextended('brain:alice', 0))")
    sent = {**JSON_HEADERS, "authorization": f"Bearer {limited.token}"}

    async def main() -> None:
        async with connect(server.url, limited.token) as mcp, anyio.create_task_group() as tg:
            for n in range(2):  # two remembers wait for her writer lock: her two in flight
                tg.start_soon(taken, mcp, f"waiting {n}")
            async with httpx2.AsyncClient(timeout=30) as http:
                while (
                    got := await http.post(server.url, json=PING, headers=sent)
                ).status_code == 200:
                    await anyio.sleep(0.05)  # until the second one is in flight too
                assert got.status_code == 429
                assert got.json() == {"error": "too many requests at once"}
            holder.execute("COMMIT")  # the two finish

    try:
        anyio.run(main)
    finally:
        holder.close()
        server.stop()


def test_a_statement_running_too_long_is_cancelled_with_one_plain_line(limited: Limited) -> None:
    async def main() -> None:
        async with connect(limited.server.url, limited.token) as mcp:
            await call(mcp, "remember", {"text": "The tide turns at noon."})
            holder = held(
                limited.db,
                "LOCK TABLE objects, texts, vectors, vault_files IN ACCESS EXCLUSIVE MODE",
            )
            try:
                failed, said = await answer(mcp, "recall", {"query": "tide"})
            finally:
                holder.close()
            assert failed
            plain(said)
            hits = (await call(mcp, "recall", {"query": "tide"}))["hits"]
            assert hits

    anyio.run(main)
    lines = [json.loads(line) for line in limited.server.said[1:]]
    assert any("statement timeout" in line.get("traceback", "") for line in lines)


def test_a_connection_that_sends_nothing_is_closed(limited: Limited) -> None:
    sock = limited.raw()
    assert sock.recv(1024) == b""  # closed by the server (a minute's wait would raise)
    sock.close()


def test_a_connection_left_idle_after_an_answer_is_closed(limited: Limited) -> None:
    sock = limited.raw()
    body = json.dumps(PING).encode()
    host = urlsplit(limited.server.url).netloc
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {limited.token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    said = b""
    while b'"jsonrpc"' not in said:  # the answer, on a connection kept alive
        part = sock.recv(4096)
        assert part, said
        said += part
    assert said.startswith(b"HTTP/1.1 200")
    while part := sock.recv(4096):  # then nothing more is asked: closed by the server
        said += part
    sock.close()


def test_a_token_check_stuck_on_the_database_ends_with_503(limited: Limited) -> None:
    # The statement timeout holds the token check's session too, not only the tenants'.
    holder = held(limited.db, "LOCK TABLE brain_tokens IN ACCESS EXCLUSIVE MODE")
    try:
        sent = {**JSON_HEADERS, "authorization": f"Bearer {limited.token}"}
        got = httpx2.post(limited.server.url, json=PING, headers=sent, timeout=60)
        assert (got.status_code, got.json()) == (503, {"error": "unavailable"})
    finally:
        holder.close()
    sent = {**JSON_HEADERS, "authorization": f"Bearer {limited.token}"}
    assert httpx2.post(limited.server.url, json=PING, headers=sent, timeout=60).status_code == 200
