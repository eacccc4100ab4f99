"""What stands before the MCP app over HTTP: bearer tokens (401), a rate per tenant (429).

An ASGI middleware. A request without a live token learns nothing: missing, malformed, unknown
and revoked tokens all get the same 401 and the same body, which names no tenant. An accepted
request runs with its tenant in `current_tenant`, which the tools read to pick its Brain.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread

from brain._hosted.limits import BODY_TIMEOUT, PER_USER, read_body, replay
from brain._hosted.observe import current_call

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
# A token's tenant, or None for a token that is not live; raising means the check cannot be
# made now (the users database is down): 503, never a guess.
Verify = Callable[[str], str | None]
# Whether the server can serve now (its database answers): for a load balancer's /readyz.
Ready = Callable[[], bool]

current_tenant: ContextVar[str] = ContextVar("current_tenant")

HEALTH_PATH = "/healthz"  # liveness: the process answers (restart it if not)
READY_PATH = "/readyz"  # readiness: its database answers too (send it traffic only then)
READY_WAIT = 5.0  # seconds a readiness check waits for the database before saying no


@dataclass
class RateLimit:
    """A token bucket per tenant: `rate` requests a second on average, bursts up to `burst`.

    Per server process: behind N servers a tenant may reach N times the rate, which a load
    balancer with sticky routing by token (or the proxy's own limit) tightens.
    """

    rate: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)

    def wait(self, tenant: str) -> float:
        """0 if this request may go now (and count it), else the seconds until one may."""
        now = self.clock()
        tokens, then = self._buckets.get(tenant, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.rate)
        if tokens >= 1.0:
            self._buckets[tenant] = (tokens - 1.0, now)
            return 0.0
        self._buckets[tenant] = (tokens, now)
        return (1.0 - tokens) / self.rate


class Guard:
    """Authenticate each HTTP request by its bearer token, limit its rate, then pass it on."""

    def __init__(
        self,
        app: App,
        verify: Verify,
        limit: RateLimit,
        ready: Ready | None = None,
        *,
        max_body: int = 1 << 20,
        body_timeout: float = BODY_TIMEOUT,
        per_user: int = PER_USER,
    ) -> None:
        self.app, self.verify, self.limit = app, verify, limit
        self.ready = ready
        self.max_body, self.body_timeout, self.per_user = max_body, body_timeout, per_user
        self._in_flight: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan: the app's own start and stop
            await self.app(scope, receive, send)
            return
        if scope.get("path") == HEALTH_PATH:  # for a load balancer; says nothing of anyone
            await _answer(send, 200, {"ok": True})
            return
        if scope.get("path") == READY_PATH:
            ok = await self._ready()
            await _answer(send, 200 if ok else 503, {"ready": ok})
            return
        token = _bearer(scope)
        try:
            # On a thread: a slow users database must not hold up the event loop (/healthz).
            tenant = await anyio.to_thread.run_sync(self.verify, token) if token else None
        except Exception:  # the users database is unreachable: refuse, say nothing more
            await _answer(send, 503, {"error": "unavailable"}, {"retry-after": "5"})
            return
        if tenant is None:
            await _answer(send, 401, {"error": "unauthorized"}, {"www-authenticate": "Bearer"})
            return
        wait = self.limit.wait(tenant)
        if wait > 0:
            retry = str(max(1, math.ceil(wait)))
            await _answer(send, 429, {"error": "too many requests"}, {"retry-after": retry})
            return
        call = current_call.get(None)
        if call is not None:  # for the access log (brain/hosted/observe.py)
            call.tenant = tenant
        if scope.get("method") == "GET":  # a stream to push on: a stateless server has none
            await _answer(send, 405, {"error": "method not allowed"}, {"allow": "POST"})
            return
        if self._in_flight.get(tenant, 0) >= self.per_user:
            await _answer(send, 429, {"error": "too many requests at once"}, {"retry-after": "1"})
            return
        self._in_flight[tenant] = self._in_flight.get(tenant, 0) + 1
        mark = current_tenant.set(tenant)
        try:
            body = await read_body(receive, self.max_body, self.body_timeout)
            if body is None:
                await _answer(
                    send, 408, {"error": "request body too slow"}, {"connection": "close"}
                )
                return
            await self.app(scope, replay(body, receive), send)
        finally:
            current_tenant.reset(mark)
            left = self._in_flight.pop(tenant) - 1
            if left:
                self._in_flight[tenant] = left

    async def _ready(self) -> bool:
        if self.ready is None:
            return True
        with anyio.move_on_after(READY_WAIT):
            # Abandoned on time-out: the thread finishes on its own, the answer is no.
            return await anyio.to_thread.run_sync(self.ready, abandon_on_cancel=True)
        return False


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


async def _answer(
    send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})
