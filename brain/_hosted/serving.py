"""`brain serve --http`: MCP's streamable HTTP transport, one Brain per tenant, behind the guard.

Stateless (no MCP session is kept between requests) and answering in plain JSON, so any server
behind a load balancer can answer any request; what must survive between requests lives in the
tenant's store (the gate state on the session note), not in this process.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
import uvicorn

from brain._errors import BrainError
from brain._hosted import tokens
from brain._hosted.address import BACKLOG, Address, Allowed, Limits, listen
from brain._hosted.guard import Guard, RateLimit, Ready, Verify, current_tenant
from brain._hosted.limits import timed_protocol
from brain._hosted.observe import AccessLog, Metrics, configure_logs, current_call
from brain._hosted.writer import TenantGone
from brain._mcp_server import build_tenant_server, tenant_http_app, tenant_tools
from brain._model import new_id

if TYPE_CHECKING:
    import psycopg

    from brain._brain import Brain
    from brain._hosted.pool import Pool
    from brain._hosted.tenants import Tenants
    from brain._mcp_server import Tools

T = TypeVar("T")
log = logging.getLogger("brain.serve")

# Worker threads for tool calls. The core holds the GIL while it computes, so more threads do
# not add CPU (run a process per core for that); they let calls waiting on PostgreSQL or a
# lock overlap, and keep the event loop free for /healthz and the next request.
WORKERS = 4  # docs/hosted-serving.md, "What --workers trades": measured 2, 3, 4 and 8
GRACE = 30  # seconds the calls in flight at SIGTERM may take to finish


class Unavailable(BrainError):
    """What a model is told when the database fails under its call: one plain line; the
    details (a socket path, a DSN, the SQL) go to the server's log only."""

    def __init__(self) -> None:
        super().__init__("the memory store is unavailable right now; try again in a few seconds")


# A remember carries at most max_text_bytes (64 KiB by default) of text; JSON may spell each
# character as a six-byte escape, so a 1 MiB body holds any call a tool accepts.
MAX_BODY = 1 << 20


@dataclass(eq=False)
class _Opened:
    """One tenant's Brain in this process; `turn` lets one call use it at a time (a Brain
    is not shared between threads at once)."""

    turn: anyio.Lock = field(default_factory=anyio.Lock)
    brain: Brain | None = None
    tools: Tools | None = None


class TenantTools:
    """Runs each request's tools over its tenant's Brain on a bounded pool of worker threads,
    opening the Brain on the tenant's first request; at most `max_open` Brains stay open (the
    least recently used idle one is committed and closed first).

    The bookkeeping happens on the event loop, the blocking work (opening, the tools, closing)
    on the workers: one tenant's calls take turns, different tenants' run side by side.
    """

    def __init__(
        self,
        tenants: Tenants,
        *,
        max_open: int = 64,
        workers: int = WORKERS,
        metrics: Metrics | None = None,
    ) -> None:
        self.tenants, self.max_open, self.workers = tenants, max_open, workers
        self.metrics = metrics or Metrics()
        self._open: OrderedDict[str, _Opened] = OrderedDict()
        self._limiter: anyio.CapacityLimiter | None = None
        self.metrics.workers.set(workers)
        self.metrics.busy.set_function(
            lambda: 0 if self._limiter is None else self._limiter.borrowed_tokens
        )
        self.metrics.open_tenants.set_function(
            lambda: sum(o.brain is not None for o in list(self._open.values()))
        )

    @property
    def limiter(self) -> anyio.CapacityLimiter:
        if self._limiter is None:  # made inside the running loop, as anyio wants
            self._limiter = anyio.CapacityLimiter(self.workers)
        return self._limiter

    def peek(self) -> Tools | None:
        """The tools of the request's tenant if its Brain is open here (never opens one)."""
        opened = self._open.get(current_tenant.get())
        return None if opened is None else opened.tools

    async def run(
        self, work: Callable[[Tools], T], *, read_only: bool = False, tool: str = ""
    ) -> T:
        """`work(tools)` for the request's tenant on a worker. `read_only` (the work changes
        nothing): it may read a replica, and runs once more on a Brain opened afresh if the
        first try found its database connection broken. `tool` names the call in the access
        log and the metrics."""
        call = current_call.get(None)
        if call is not None:
            call.tool = tool
        try:
            return await self._run(work, read_only)
        except BaseException:
            if call is not None:
                call.failed = True
            raise

    async def _run(self, work: Callable[[Tools], T], read_only: bool) -> T:
        tenant = current_tenant.get()
        opened = self._open.get(tenant)
        if opened is None:
            opened = self._open[tenant] = _Opened()
        self._open.move_to_end(tenant)
        try:
            async with opened.turn:
                return await self._on_worker(tenant, opened, work, read_only)
        finally:
            await self._evict()

    async def _on_worker(
        self, tenant: str, opened: _Opened, work: Callable[[Tools], T], read_only: bool
    ) -> T:
        return await anyio.to_thread.run_sync(
            self._work, tenant, opened, work, read_only, limiter=self.limiter
        )

    def _work(self, tenant: str, opened: _Opened, work: Callable[[Tools], T], read_only: bool) -> T:
        if not read_only and opened.brain is not None and not _alive(opened.brain):
            _drop(opened)  # a write is not made again: it goes on a connection known to answer
            self.metrics.reconnects.inc()
        for attempt in (1, 2):
            opened_before = opened.tools is not None
            tools = self._tools(tenant, opened)
            assert opened.brain is not None
            try:
                # One pooled connection and one transaction for the whole call (PostgreSQL).
                with opened.brain.running().session(read_only=read_only):
                    return work(tools)
            except Exception as exc:
                if attempt == 1 and opened_before and _caused_by(exc, TenantGone):
                    # `brain hosted user delete` (and `add` again) since her Brain was opened
                    # here, found by the call's first round trip before it read or wrote:
                    # open the brain she has now (made from the template if none).
                    log.info("a tenant's brain was deleted since it was opened here: opened again")
                    _drop(opened)
                    continue
                if not connection_lost(exc):
                    if attempt == 1 and opened_before and self._deleted(tenant):
                        # `brain hosted user delete` (and `add` again) since her Brain was
                        # opened here: it found no partition. Open it afresh, as a first call.
                        _drop(opened)
                        continue
                    raise
                _drop(opened)  # the next call (or the retry) opens the Brain afresh
                self.metrics.reconnects.inc()
                if not read_only or attempt == 2:
                    raise Unavailable() from exc
                log.warning("a tenant's database connection was lost: opened again", exc_info=exc)
        raise AssertionError("unreachable")

    def _deleted(self, tenant: str) -> bool:
        """Whether the tenant's brain is gone (asked only after a call of hers failed)."""
        try:
            return not self.tenants.known(tenant)
        except Exception:
            return False  # the call's own error is the one to report

    def _tools(self, tenant: str, opened: _Opened) -> Tools:
        if opened.tools is None:
            begun = time.perf_counter()
            try:
                brain = self.tenants.open(tenant)
            except Exception as exc:  # the database's own words go to the log, not the model
                raise Unavailable() from exc
            self.metrics.cold_opens.observe(time.perf_counter() - begun)
            # One session id per tenant in this process, as one `brain serve` over stdio has.
            opened.brain = brain
            opened.tools = tenant_tools(brain, session_id=new_id(brain.clock.now()))
        return opened.tools

    async def _evict(self) -> None:
        while len(self._open) > self.max_open:
            idle = next((t for t, o in self._open.items() if not o.turn.locked()), None)
            if idle is None:
                return  # every one is in use: over the budget until a call ends
            opened = self._open.pop(idle)
            async with opened.turn:
                await anyio.to_thread.run_sync(_close, opened, limiter=self.limiter)

    def close(self) -> None:
        """Commit and close every tenant's Brain (the server has stopped serving)."""
        while self._open:
            _name, opened = self._open.popitem()
            try:
                _close(opened)
            except Exception:
                log.exception("closing a tenant's brain failed")
        self.tenants.close()


def _close(opened: _Opened) -> None:
    brain, opened.brain, opened.tools = opened.brain, None, None
    if brain is not None:
        try:
            brain.commit()  # the model's deferred writes, under git, become one commit
        finally:
            brain.close()


def _drop(opened: _Opened) -> None:
    """Let go of a Brain whose connection broke, quietly: nothing in it can be saved."""
    brain, opened.brain, opened.tools = opened.brain, None, None
    if brain is not None:
        try:
            brain.close()
        except Exception:
            log.debug("closing a broken tenant's brain", exc_info=True)


def _alive(brain: Brain) -> bool:
    """Whether the Brain's storage still reaches its database (always, for files)."""
    return brain.running().alive()


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc`, or what caused it (the SDK wraps what a tool raised), is a `kind`."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc`, or what caused it, says the database connection is gone."""
    import psycopg

    seen: BaseException | None = exc
    for _ in range(10):  # the SDK wraps what a tool raised, and may wrap that again
        if seen is None:
            return False
        if isinstance(seen, psycopg.InterfaceError):
            return True
        # No state (the client lost the socket), a connection failure, or the server shutting
        # down; not a lock or statement timeout, which leave the connection usable.
        if isinstance(seen, psycopg.OperationalError) and (
            seen.sqlstate is None or seen.sqlstate.startswith(("08", "57P"))
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class TokenCheck:
    """Tokens looked up in the users database on every request, so a revocation holds at once,
    on a connection lent by the server's pool for the lookup; a lookup that found its
    connection dead (the database restarted) is made once more on a new one."""

    def __init__(self, pool: Pool) -> None:
        self.pool = pool

    def __call__(self, token: str) -> str | None:
        return self._twice(lambda conn: tokens.tenant_of(conn, token))

    def _twice(self, ask: Callable[[psycopg.Connection[Any]], T]) -> T:
        import psycopg

        from brain._hosted.pool import PoolBusy

        for attempt in (1, 2):
            try:
                with self.pool.connection() as conn, conn.transaction():
                    # A lookup stuck on the database (a lock on brain_tokens) ends too.
                    self.pool.time_limit(conn)
                    return ask(conn)
            except PoolBusy:
                raise  # it waited its while already
            except (psycopg.OperationalError, BrainError):
                if attempt == 2:
                    raise
                self.pool.drop_idle()
        raise AssertionError("unreachable")

    def ready(self) -> bool:
        """Whether the users database answers now (`/readyz`)."""
        try:
            self._twice(lambda conn: conn.execute("SELECT 1"))
        except Exception:
            return False
        return True

    def close(self) -> None:
        self.pool.close()


def build_app(
    tools: TenantTools,
    verify: Verify,
    limit: RateLimit,
    ready: Ready | None = None,
    allow: Allowed | None = None,
    limits: Limits | None = None,
) -> Any:
    """The ASGI app: the access log over the guard over the SDK's streamable HTTP app."""
    allow = allow or Allowed()
    server = build_tenant_server(tools.run, tools.peek)
    inner = tenant_http_app(server, hosts=allow.hosts, origins=allow.origins, max_body=MAX_BODY)
    limits = limits or Limits()
    guard = Guard(
        inner,
        verify,
        limit,
        ready,
        max_body=MAX_BODY,
        body_timeout=limits.body,
        per_user=limits.per_user,
    )
    return AccessLog(guard, tools.metrics)


def serve_http(
    address: Address,
    tenants: Tenants,
    pool: Pool,
    *,
    rate: float,
    burst: int,
    max_open: int = 64,
    workers: int = WORKERS,
    grace: int = GRACE,
    allow: Allowed | None = None,
    limits: Limits | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Run until stopped (Ctrl-C or SIGTERM): then take no new request, let those in flight
    finish for up to `grace` seconds, close each tenant's Brain, and return (exit code 0).
    `announce` is told the endpoint's URL once the socket listens (the port, if 0 was asked).
    `pool` lends every connection the server makes to PostgreSQL, the users' and the
    tenants' brains' alike (`--max-connections`)."""
    configure_logs()
    with pool.connection() as conn:
        tokens.ensure_schema(conn)
    check = TokenCheck(pool)
    tools = TenantTools(tenants, max_open=max_open, workers=workers)
    tools.metrics.connections.set_function(lambda: pool.held)
    tools.metrics.connections_lent.set_function(lambda: pool.lent)
    if pool.replica is not None:
        reads = tools.metrics.replica_reads
        pool.replica.counted = lambda where: reads.labels(where).inc()
    limits = limits or Limits()
    app = build_app(tools, check, RateLimit(rate=rate, burst=burst), check.ready, allow, limits)
    sock = listen(address)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    announce(f"http://{shown}:{port}/mcp")
    config = uvicorn.Config(
        app,
        log_config=None,  # configure_logs's: JSON lines unless at a terminal
        log_level="info",
        lifespan="on",
        access_log=False,
        backlog=BACKLOG,
        server_header=False,
        timeout_graceful_shutdown=grace,
        http=timed_protocol(limits.header),
    )
    try:
        _Stoppable(config).run(sockets=[sock])
    finally:
        tools.close()
        check.close()
        sock.close()
        log.info("stopped: every tenant's brain closed")


class _Stoppable(uvicorn.Server):
    """uvicorn's server, which after a clean stop on SIGTERM returns instead of raising the
    signal again (that killed the process with 143 before the tenants were closed)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()
