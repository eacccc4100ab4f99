"""What an operator sees of `brain serve --http`: one JSON access line a request (with a
request id and the tenant's hash, never its name or token) and Prometheus metrics."""

from __future__ import annotations

import hashlib
import json
import time

import anyio
import httpx2

from bench.http_servers import add_user, answer, call, connect, fresh_database, start
from brain._hosted.schema import init as init_schema
from tests.http.conftest import JSON_HEADERS, PING


def test_access_lines_and_metrics(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    init_schema(db)
    token = add_user(db, "alice")
    server = start(db, None)
    base = server.url.removesuffix("/mcp")
    try:

        async def main() -> None:
            async with connect(server.url, token) as mcp:
                await call(mcp, "remember", {"text": "The kite is red.", "title": "Kite"})
                await call(mcp, "recall", {"query": "kite"})
                failed, _said = await answer(mcp, "expand", {"note_id": "NOTANID"})
                assert failed

        anyio.run(main)
        headers = {**JSON_HEADERS, "authorization": f"Bearer {token}", "x-request-id": "req-42"}
        echoed = httpx2.post(server.url, json=PING, headers=headers, timeout=30)
        assert echoed.headers["x-request-id"] == "req-42"
        assert httpx2.post(server.url, json=PING, headers=JSON_HEADERS).status_code == 401
        metrics = httpx2.get(base + "/metrics", timeout=30).text
        for _ in range(100):  # the last access line is written just after its answer went out
            if any("401" in line for line in server.said):
                break
            time.sleep(0.05)
    finally:
        server.stop()
    lines = [json.loads(line) for line in server.said[1:]]  # the first says where it listens
    access = [line for line in lines if line["logger"] == "brain.access"]
    tools = [line["tool"] for line in access]
    assert {"remember", "recall", "expand"} <= set(tools)
    alice = hashlib.sha256(b"alice").hexdigest()[:12]
    for line in access:
        assert {"time", "request_id", "tenant", "tool", "status", "ms"} <= line.keys()
        assert line["tenant"] in (alice, None)
    assert [line["error"] for line in access if line["tool"] == "expand"] == [True]
    assert any(line["request_id"] == "req-42" and line["status"] == 200 for line in access)
    assert any(line["status"] == 401 and line["tenant"] is None for line in access)
    assert "alice" not in json.dumps(lines) and token not in json.dumps(lines)

    assert 'brain_request_seconds_count{status="2xx",tool="recall"} 1.0' in metrics
    assert 'brain_tool_errors_total{tool="expand"} 1.0' in metrics
    assert "brain_open_tenants 1.0" in metrics
    assert "brain_cold_open_seconds_count 1.0" in metrics
    assert "brain_workers 4.0" in metrics and "brain_workers_busy 0.0" in metrics
