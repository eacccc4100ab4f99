"""What an operator sees of `brain serve --http`: JSON log lines, an access log, /metrics."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

ACCESS = logging.getLogger("brain.access")

# Tool calls take ~1 ms (ping) to seconds (a cold open, a 64 KiB remember under load).
BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    """The record's `fields`; a line logged while a request runs (a tool's error, a lost
    connection) names that request's id, as its access line does."""
    call = current_call.get(None)
    fields = {} if call is None else {"request_id": call.id}
    return {**fields, **getattr(record, "fields", {})}


class JsonLines(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the record's `fields`, and a
    `traceback` field for an exception (never a box drawn over many lines)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["error"] = repr(record.exc_info[1])
            line["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(line, default=str)


class PlainLines(logging.Formatter):
    """At a terminal: a line a record, its fields as key=value, then any traceback."""

    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        text = f"{stamp} {record.levelname.lower()} {record.name}: {record.getMessage()} {fields}"
        if record.exc_info:
            text += "\n" + "".join(traceback.format_exception(*record.exc_info))
        return text.rstrip()


def configure_logs(*, json_lines: bool | None = None) -> None:
    """Every logger of the process (brain's, the SDK's, uvicorn's) to stderr, as JSON lines
    unless stderr is a terminal."""
    if json_lines is None:
        json_lines = not sys.stderr.isatty()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if json_lines else PlainLines())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "mcp", "httpx"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # The SDK logs each request at INFO; the access log says it once, with more.
    logging.getLogger("mcp").setLevel(logging.WARNING)
    logging.getLogger("uvicorn.access").setLevel(logging.WARNING)


def tenant_hash(tenant: str) -> str:
    """A tenant named in the logs without its name: the first 12 hex of its SHA-256."""
    return hashlib.sha256(tenant.encode()).hexdigest()[:12]


class Metrics:
    """The server's Prometheus metrics, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Histogram(
            "brain_request_seconds",
            "HTTP requests by tool (or path) and status class",
            ["tool", "status"],
            buckets=BUCKETS,
            registry=r,
        )
        self.errors = Counter(
            "brain_tool_errors_total", "tool calls that ended in an error", ["tool"], registry=r
        )
        self.open_tenants = Gauge("brain_open_tenants", "tenants' brains open", registry=r)
        self.cold_opens = Histogram(
            "brain_cold_open_seconds",
            "opening a tenant's brain on its first request here",
            buckets=BUCKETS,
            registry=r,
        )
        self.workers = Gauge("brain_workers", "worker threads for tool calls", registry=r)
        self.busy = Gauge("brain_workers_busy", "worker threads running a call now", registry=r)
        self.connections = Gauge(
            "brain_db_connections", "database connections the server holds", registry=r
        )
        self.connections_lent = Gauge(
            "brain_db_connections_lent", "database connections lent to a call now", registry=r
        )
        self.replica_reads = Counter(
            "brain_replica_reads_total",
            "read-only tool calls by where they read (--db-read): the replica, or the "
            "primary because the replica was behind the tenant's last write or down",
            ["where"],
            registry=r,
        )
        self.reconnects = Counter(
            "brain_reconnects_total",
            "tenants opened again after their connection broke",
            registry=r,
        )

    def text(self) -> bytes:
        return generate_latest(self.registry)


@dataclass
class Call:
    """What the access log says of one request, filled in as it goes through."""

    id: str
    tenant: str | None = None  # set by the guard once the token is checked
    tool: str | None = None  # set by the tools (tools/list or the tool's name)
    failed: bool = False  # the tool call ended in an error


current_call: ContextVar[Call] = ContextVar("brain_current_call")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
QUIET = ("/healthz", "/readyz")  # a load balancer asks every few seconds: counted, not logged


class AccessLog:
    """ASGI middleware: a request id (the caller's `X-Request-Id` if sane, echoed back), one
    access log line and one latency observation a request; /metrics in Prometheus's text."""

    def __init__(self, app: App, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        if path == "/metrics":
            await _send_text(send, self.metrics.text())
            return
        call = Call(_request_id(scope))
        mark = current_call.set(call)
        status, begun = 500, time.perf_counter()

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", ()), (b"x-request-id", call.id.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            current_call.reset(mark)
            self._record(call, path, str(scope.get("method", "")), status, begun)

    def _record(self, call: Call, path: str, method: str, status: int, begun: float) -> None:
        took = time.perf_counter() - begun
        what = call.tool or path
        self.metrics.requests.labels(what, f"{status // 100}xx").observe(took)
        if call.failed:
            self.metrics.errors.labels(what).inc()
        if path in QUIET and status < 500:
            return
        fields = {
            "request_id": call.id,
            "method": method,
            "path": path,
            "status": status,
            "ms": round(took * 1000, 1),
            "tool": call.tool,
            "error": call.failed,
            "tenant": tenant_hash(call.tenant) if call.tenant else None,
        }
        ACCESS.info("request", extra={"fields": fields})


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            given = str(value.decode("latin-1"))
            if _REQUEST_ID.fullmatch(given):
                return given
    return uuid.uuid4().hex[:16]


async def _send_text(send: Send, body: bytes) -> None:
    headers = [
        (b"content-type", CONTENT_TYPE_LATEST.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
