"""Time and count limits of `brain serve --http`: slow headers and bodies, streams per user.

A connection that does not finish a request's headers within `header` seconds of opening (or
of its last answer) is closed; a body not received within `body` seconds gets 408. GET /mcp
(a stream the server might push on) gets 405: a stateless server pushes nothing, so no such
stream is kept open at all, and a user may have at most `per_user` requests in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from uvicorn.protocols.http.h11_impl import H11Protocol

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 30.0
PER_USER = 32  # requests of one user in flight at one server


def timed_protocol(header: float) -> type[H11Protocol]:
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request headers take too long
    (uvicorn's own keep-alive timer is reset by any byte, so a slow sender kept it open)."""

    class HeaderDeadline(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _cycle: Any = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not self._cycle:  # a request's headers arrived whole
                self._cycle = self.cycle
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection has as long again

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(header, self._expire)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expire(self) -> None:
            if not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadline


async def read_body(receive: Receive, limit: int, timeout: float) -> bytes | None:
    """The whole request body, or None if it took longer than `timeout`; reading stops past
    `limit` bytes (the caller answers 413)."""
    parts: list[bytes] = []
    size = 0
    with anyio.move_on_after(timeout):
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return b"".join(parts)
            chunk = bytes(message.get("body", b""))
            parts.append(chunk)
            size += len(chunk)
            if size > limit or not message.get("more_body", False):
                return b"".join(parts)
    return None


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the app the body already read, then whatever comes next."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again
