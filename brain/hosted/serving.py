"""`brain serve --http`: MCP's streamable HTTP transport, one Brain per tenant, behind the guard.

Stateless (no MCP session is kept between requests) and answering in plain JSON, so any server
behind a load balancer can answer any request; what must survive between requests lives in the
tenant's store (the gate state on the session note), not in this process.
"""

from __future__ import annotations

import ipaddress
import socket
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain.errors import BrainError, InvalidInput
from brain.hosted import tokens
from brain.hosted.guard import Guard, RateLimit, Verify, current_tenant
from brain.mcp_server import build_tenant_server, tenant_tools
from brain.model import new_id

if TYPE_CHECKING:
    import psycopg

    from brain.brain import Brain
    from brain.hosted.tenants import Tenants
    from brain.mcp_server import Tools

# A remember carries at most max_text_bytes (64 KiB by default) of text; JSON may spell each
# character as a six-byte escape, so a 1 MiB body holds any call a tool accepts.
MAX_BODY = 1 << 20


@dataclass(frozen=True)
class Address:
    host: str
    port: int


def parse_address(text: str, *, public: bool) -> Address:
    """HOST:PORT (or [v6]:PORT); a host off this machine only when `public` says so."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidInput(f"--http {text!r} is not HOST:PORT", "e.g. --http 127.0.0.1:8765")
    if not public and not _loopback(host):
        raise InvalidInput(
            f"--http {host} is not a loopback address: the server would be reachable from "
            "other machines",
            "bind 127.0.0.1 behind a TLS reverse proxy, or pass --public to mean it",
        )
    return Address(host, int(port))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class TenantTools:
    """The tools over each tenant's Brain, opened on its first request; at most `max_open`
    Brains stay open (the least recently used is committed and closed first)."""

    def __init__(self, tenants: Tenants, *, max_open: int = 64) -> None:
        self.tenants, self.max_open = tenants, max_open
        self._open: OrderedDict[str, tuple[Brain, Tools]] = OrderedDict()

    def now(self) -> Tools:
        """The tools of the tenant of the request being served."""
        return self.of(current_tenant.get())

    def of(self, tenant: str) -> Tools:
        if tenant in self._open:
            self._open.move_to_end(tenant)
            return self._open[tenant][1]
        brain = self.tenants.open(tenant)
        # One session id per tenant in this process, as one `brain serve` over stdio has.
        self._open[tenant] = (brain, tenant_tools(brain, session_id=new_id(brain.clock.now())))
        while len(self._open) > self.max_open:
            _name, (old, _tools) = self._open.popitem(last=False)
            _shut(old)
        return self._open[tenant][1]

    def close(self) -> None:
        while self._open:
            _name, (brain, _tools) = self._open.popitem()
            _shut(brain)
        self.tenants.close()


def _shut(brain: Brain) -> None:
    try:
        brain.changes.commit()  # the model's deferred writes, under git, become one commit
    finally:
        brain.close()


class TokenCheck:
    """Tokens looked up in the users database on every request, so a revocation holds at once;
    one connection, made again once if it broke."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: psycopg.Connection[Any] | None = None

    def __call__(self, token: str) -> str | None:
        import psycopg

        for attempt in (1, 2):
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = tokens.connect(self.dsn)
                return tokens.tenant_of(self._conn, token)
            except (psycopg.OperationalError, BrainError):
                self._conn = None
                if attempt == 2:
                    raise
        return None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


BACKLOG = 2048


def listen(address: Address) -> socket.socket:
    """A listening TCP socket at the address (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: without it a reply written in two parts (headers,
    # body) waits for the client's delayed ACK on a kept-alive connection, ~40 ms a request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((address.host, address.port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise BrainError(f"cannot listen on {address.host}:{address.port}: {exc.strerror}",
                         "choose another port, or stop what listens there") from None  # fmt: skip
    return sock


def build_app(tools: TenantTools, verify: Verify, limit: RateLimit) -> Any:
    """The ASGI app: the guard over the SDK's streamable HTTP app at /mcp."""
    server = build_tenant_server(tools.now)
    inner = server.streamable_http_app(
        stateless_http=True, json_response=True, max_request_body_size=MAX_BODY
    )
    return Guard(inner, verify, limit)


def serve_http(
    address: Address,
    tenants: Tenants,
    dsn: str,
    *,
    rate: float,
    burst: int,
    max_open: int = 64,
    announce: Callable[[str], None] = print,
) -> None:
    """Run until stopped (Ctrl-C or SIGTERM); each tenant's Brain is closed on the way out.
    `announce` is told the endpoint's URL once the socket listens (the port, if 0 was asked)."""
    import uvicorn

    with tokens.connect(dsn) as conn:
        tokens.ensure_schema(conn)
    check = TokenCheck(dsn)
    tools = TenantTools(tenants, max_open=max_open)
    app = build_app(tools, check, RateLimit(rate=rate, burst=burst))
    sock = listen(address)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    announce(f"http://{shown}:{port}/mcp")
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="on",
        access_log=False,
        backlog=BACKLOG,
        server_header=False,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        tools.close()
        check.close()
        sock.close()
