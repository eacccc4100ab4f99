"""`brain serve`: the MCP tools, each a thin wrapper over one core call; the allowlist is here.

Over stdio one server holds the tools over one Brain (`build_server`); over HTTP one server
runs each request on a worker thread with the tools over the Brain of the caller's tenant
(`build_tenant_server`, `tenant_tools`; brain/_hosted/serving.py): the same tool code either way.

The only module that imports `mcp`. Every tool takes a strict schema (an unknown argument is
refused), and every BrainError comes back as a tool error carrying the core's message.
Nothing administrative is reachable: no connect, sync, sleep, tiers, reindex, settings,
visibility or provenance. The Brain is opened `for_model`, so private and local-only notes and
other partitions do not exist for any tool (partition_list alone names the partitions).
"""

# No `from __future__ import annotations` here: the SDK reads the tools' annotations at
# registration, and the size limits in them come from this vault's settings.

import asyncio
import contextvars
import functools
import json
import os
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool, ToolManager
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, ErrorData, JSONRPCError, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from brain._brain import Brain
from brain._errors import BrainError
from brain._mcp_tools import (
    Register,
    Result,
    ToolFn,
    gate_tools,
    memory_tools,
    partition_tools,
)
from brain._model import new_id
from brain._toolargs import plain
from brain._version import version

# The allowlist: exactly these tools, and no others, are served. Kept as a hand-laid table,
# a line per group (memories, partitions, the session gate), the order the tools are made in.
TOOLS = (
    "remember", "recall", "forget", "expand", "list_memories", "diagnostics", "usage", "ping",
    "partition_create", "partition_list", "partition_use", "partition_rename",
    "partition_archive", "partition_restore",
    "session", "addendum", "maintain", "remarks", "diary", "close",
)  # fmt: skip
# The tools that change nothing: a call of one may be made again (after a lost connection),
# and may read a replica (`brain serve --http --db-read`).
READ_ONLY = ("recall", "list_memories", "diagnostics", "usage", "ping", "partition_list")

# A tenant's set of tools (`tenant_tools`), named here so no other module imports mcp for it.
Tools = ToolManager
# Sends a checked tool call to the daemon: (tool name, arguments, the in-process tool to fall
# back on when the daemon cannot be reached).
Forward = Callable[[str, dict[str, Any], ToolFn], Awaitable[Result]]
# Runs `work` with the tools of the request's tenant, on a worker thread, and awaits it;
# `read_only`: the work changes nothing, so it may run again on a fresh connection, and read
# a replica; `tool`: what the access log and the metrics call it.
TenantRun = Callable[..., Awaitable[Any]]
# The tools of the request's tenant if its Brain is open in this process, else None.
TenantPeek = Callable[[], ToolManager | None]


def build_server(
    brain: Brain, *, session_id: str | None = None, forward: Forward | None = None
) -> MCPServer:
    """The MCP server over one Brain, switched to its model-facing mode. With `forward`, each
    tool (its arguments checked here) is sent on to the daemon instead."""
    return _Server(
        "brain",
        version=version(),
        instructions=INSTRUCTIONS,
        tools=build_tools(brain, session_id=session_id, forward=forward),
        log_level="WARNING",
    )


def build_tenant_server(run: TenantRun, peek: TenantPeek) -> MCPServer:
    """One MCP server for many Brains (`brain serve --http`): every tools/list and tools/call
    is handed to `run` (`run(work, read_only=…)`), which calls `work(tools)` with the tools over
    the Brain its caller's token chose, off the event loop."""
    return _TenantServer(run, peek)


LOOPBACK_HOSTS = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
LOOPBACK_ORIGINS = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]


def tenant_http_app(
    server: MCPServer, *, hosts: list[str] | None, origins: list[str], max_body: int
) -> Any:
    """The SDK's streamable HTTP app for `server`: stateless, plain JSON answers, bodies up to
    `max_body`. The Host header must be loopback's or one of `hosts` (else 421) and an Origin
    header, when sent, loopback's or one of `origins` (else 403), against DNS rebinding;
    `hosts=None` turns that check off (`--public` with no `--allowed-host`)."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=hosts is not None,
        allowed_hosts=LOOPBACK_HOSTS + [h for name in hosts or [] for h in _any_port(name)],
        allowed_origins=LOOPBACK_ORIGINS + origins,
    )
    return server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        max_request_body_size=max_body,
        transport_security=security,
    )


def _any_port(host: str) -> list[str]:
    """A host as given (with its port, or `:*`), or without one: as it is and on any port."""
    return [host] if ":" in host.removeprefix("[").rpartition("]")[2] else [host, f"{host}:*"]


def tenant_tools(brain: Brain, *, session_id: str | None = None) -> Tools:
    """The allowlisted tools over one tenant's Brain, as `build_tenant_server` serves them."""
    return ToolManager(tools=build_tools(brain, session_id=session_id))


INSTRUCTIONS = (
    "Long-term memory. Start with `session` for the briefing; `recall` before answering "
    "from memory, `remember` what is worth keeping, `expand` to read a note. Close each "
    "session with addendum → maintain → remarks → diary → close."
)


class _Server(MCPServer):
    """The SDK's server, with arguments that fail a tool's schema refused in one plain line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lowlevel_server.middleware.append(_arguments_by_name)

    async def run_stdio_async(self) -> None:
        """As the SDK's, with each request it cannot read answered (_Answering)."""
        async with stdio_server() as (read_stream, write_stream):
            await self._lowlevel_server.run(
                _Answering(read_stream, write_stream),
                write_stream,
                self._lowlevel_server.create_initialization_options(),
            )

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause, tool = exc.__cause__, self._tool_manager.get_tool(name)
            if isinstance(cause, ValidationError) and tool is not None:
                raise ToolError(plain(cause, tool.parameters)) from cause
            raise


class _Answering:
    """The stdio server's incoming messages, where a request the SDK could not read (JSON
    holding a lone surrogate, `"\\ud800"`, not Unicode) is answered with an error naming its
    argument instead of being dropped, which left the host waiting until it gave up."""

    def __init__(self, stream: Any, write: Any) -> None:
        self._stream, self._write = stream, write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)  # aclose, last_context

    async def __aenter__(self) -> "_Answering":
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)

    def __aiter__(self) -> "_Answering":
        return self

    async def __anext__(self) -> Any:
        while True:
            item = await self._stream.__anext__()
            if not (isinstance(item, ValidationError) and await self._answered(item)):
                return item

    async def receive(self) -> Any:
        while True:
            item = await self._stream.receive()
            if not (isinstance(item, ValidationError) and await self._answered(item)):
                return item

    async def _answered(self, exc: ValidationError) -> bool:
        line = next((e.get("input") for e in exc.errors(include_url=False)), None)
        try:
            request = json.loads(line) if isinstance(line, str) else None
        except ValueError:
            return False
        if not isinstance(request, dict) or not _unpaired(request):
            return False  # the SDK's own reasons: it says them on stderr
        ident, params = request.get("id"), request.get("params")
        if not isinstance(ident, str | int) or isinstance(ident, bool):
            return False  # a notification, or not JSON-RPC: nobody waits for an answer
        arguments = params.get("arguments") if isinstance(params, dict) else None
        named = arguments.items() if isinstance(arguments, dict) else ()
        names = [f"argument {k!r}" for k, v in named if _unpaired(v)] or ["the request"]
        said = f"{names[0]} holds a lone surrogate (such as \\ud800), which is not Unicode text"
        error = ErrorData(code=INVALID_PARAMS, message=said)
        await self._write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=ident, error=error)))
        return True


async def _arguments_by_name(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
    """A tool call whose `arguments` is not an object (a list, a text) is refused naming it;
    the SDK's own answer, "Invalid request parameters", named nothing."""
    params = ctx.params
    if ctx.method == "tools/call" and isinstance(params, dict):
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            got = type(arguments).__name__ if not isinstance(arguments, bool) else "true or false"
            kinds = {"list": "a list", "str": "text", "int": "a number", "float": "a number"}
            said = f"arguments must be an object of named arguments, not {kinds.get(got, got)}"
            raise MCPError(code=INVALID_PARAMS, message=said)
    return await call_next(ctx)


def _unpaired(value: Any) -> bool:
    """Whether a JSON value holds a surrogate code point (UTF-8 cannot carry one)."""
    if isinstance(value, str):
        return any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, list | dict):
        return any(_unpaired(v) for v in (value.values() if isinstance(value, dict) else value))
    return False


class _TenantServer(_Server):
    """The same server, whose tool manager is the one of the request being served.

    The tool bodies call the blocking core (PostgreSQL, a model), so each call runs on a
    worker thread (`run`), to its end on an event loop of that thread's own: the server's
    loop keeps answering other requests meanwhile.
    """

    def __init__(self, run: TenantRun, peek: TenantPeek) -> None:
        self._run, self._peek = run, peek
        super().__init__("brain", version=version(), instructions=INSTRUCTIONS, log_level="WARNING")

    @property
    def _tool_manager(self) -> ToolManager:
        return _serving.get()

    @_tool_manager.setter
    def _tool_manager(self, _unused: ToolManager) -> None:
        pass  # the SDK's own (empty) manager, made in its __init__, is never consulted

    async def list_tools(self) -> Any:
        listing = super().list_tools
        return await self._run(
            lambda tools: _finish(tools, listing()), read_only=True, tool="tools/list"
        )

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        calling = super().call_tool
        return await self._run(
            lambda tools: _finish(tools, calling(name, arguments, context)),
            read_only=name in READ_ONLY,
            tool=name if name in TOOLS else "unknown",  # a bounded set of metric labels
        )

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """Asked on the event loop before a call: only a tenant already open is looked at
        (opening one blocks); for another the SDK skips its `Mcp-Param` header check."""
        tools = self._peek()
        tool = None if tools is None else tools.get_tool(name)
        return None if tool is None else tool.parameters


# The tools of the call running on this thread (`_finish`).
_serving: contextvars.ContextVar[ToolManager] = contextvars.ContextVar("brain_serving_tools")
_loops = threading.local()


def _finish(tools: ToolManager, call: Coroutine[Any, Any, Any]) -> Any:
    """Run a call of the SDK's to its end on this worker thread's own event loop."""
    runner = getattr(_loops, "runner", None)
    if runner is None:
        runner = _loops.runner = asyncio.Runner()
    mark = _serving.set(tools)
    try:
        # In this call's context: a Runner otherwise runs every call in the context it copied
        # at its first, and would serve them all the first caller's tools.
        return runner.run(call, context=contextvars.copy_context())
    finally:
        _serving.reset(mark)


def build_tools(
    brain: Brain, *, session_id: str | None = None, forward: Forward | None = None
) -> list[Tool]:
    """The allowlisted tools over the model's view of a Brain (made here if not handed one)."""
    if not brain.for_model:
        # Under git, a session's writes become one commit at `close` (or when the server stops).
        brain = brain.at(for_model=True, defer_commits=True)
    session_id = session_id or new_id(brain.clock.now())
    source = {"via": "mcp", "session": session_id}
    limit = brain.settings.max_text_bytes
    text_field = Field(description="The text, in Markdown.", min_length=1, max_length=limit)
    tools: list[Tool] = []
    tool = _registrar(brain, forward, tools)
    memory_tools(tool, brain, source, text_field)
    partition_tools(tool, brain)
    gate_tools(tool, brain, source, text_field, limit)
    _say_gate_order(tools)
    _check_allowlist(tools)
    return tools


def _registrar(brain: Brain, forward: Forward | None, tools: list[Tool]) -> Register:
    """`tool(read_only=…)`: a decorator that appends the tool, strict and with its hints, to
    `tools`; a writing tool is one operation, and with `forward` the call goes to the daemon."""

    def tool(
        *, read_only: bool, destructive: bool = False, idempotent: bool = False
    ) -> Callable[[ToolFn], ToolFn]:
        def register(fn: ToolFn) -> ToolFn:
            hints = ToolAnnotations(
                read_only_hint=read_only,
                destructive_hint=destructive,
                idempotent_hint=idempotent,
                open_world_hint=False,
            )
            call = fn if read_only else _one_operation(brain, fn)
            body = _following_git(brain, call) if forward is None else _forwarding(fn, forward)
            tools.append(_strict(Tool.from_function(_errors(body), annotations=hints)))
            return fn

        return register

    return tool


GATE_ORDER = "Gate order: session → addendum → maintain → remarks → diary → close."


def _say_gate_order(tools: list[Tool]) -> None:
    """Each step of the session gate says the order of all of them."""
    for fn_tool in tools:
        if fn_tool.name in ("session", "addendum", "maintain", "remarks", "diary", "close"):
            fn_tool.description += "\n" + GATE_ORDER


def _check_allowlist(tools: list[Tool]) -> None:
    assert tuple(t.name for t in tools) == TOOLS, "the tools must be exactly the allowlist"
    assert {t.name for t in tools if t.annotations and t.annotations.read_only_hint} == set(
        READ_ONLY
    )


def serve(brain: Brain, *, session_id: str | None = None, forward: Forward | None = None) -> None:
    """Run the server over stdio until the host closes it (stdout carries only MCP)."""
    try:
        build_server(brain, session_id=session_id, forward=forward).run()
    except BaseExceptionGroup as group:
        if group.split(_HOST_GONE)[1] is not None:
            raise
        # The host closed its end (it stopped, or gave up on a call): the call was done, and
        # there is no one to tell; no traceback on stderr (the host's log), nor at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    finally:
        brain.commit()


# What writing to a host that went away raises, under the SDK's task group.
_HOST_GONE = (
    BrokenPipeError,
    ConnectionResetError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
)


def _one_operation(brain: Brain, fn: ToolFn) -> ToolFn:
    """A writing tool call is one operation: what it changed joins the session's commit."""

    @functools.wraps(fn)
    async def recorded(*args: Any, **kwargs: Any) -> Result:
        with brain.operation(f"{fn.__name__} (MCP)"):
            return await fn(*args, **kwargs)

    return recorded


def _forwarding(fn: ToolFn, forward: Forward) -> ToolFn:
    """The tool's signature (so its schema), with the call sent on by `forward`."""

    @functools.wraps(fn)
    async def sent(**kwargs: Any) -> Result:
        return await forward(fn.__name__, kwargs, fn)

    return sent


def _following_git(brain: Brain, fn: ToolFn) -> ToolFn:
    """The tool, after a catch-up when git moved HEAD under the server (a pull), as the daemon
    does before each request (Running.follow_git)."""

    @functools.wraps(fn)
    async def following(*args: Any, **kwargs: Any) -> Result:
        brain.running().follow_git()
        return await fn(*args, **kwargs)

    return following


def _errors(fn: ToolFn) -> ToolFn:
    """A BrainError becomes a tool error carrying the core's own message."""

    @functools.wraps(fn)
    async def guarded(*args: Any, **kwargs: Any) -> Result:
        try:
            return await fn(*args, **kwargs)
        except BrainError as exc:
            raise ToolError(_said_to_a_model(exc)) from exc

    return guarded


def _said_to_a_model(exc: BrainError) -> str:
    """The core's message; a hint that names a `brain …` command is said to be the person's
    (a model has tools, not the command line: "check the id with `brain list`" is not its)."""
    if exc.hint and "`brain " in exc.hint and "person" not in exc.hint:
        return f"{exc.message} (for the person, at their terminal: {exc.hint})"
    return str(exc)


def _strict(tool: Tool) -> Tool:
    """The same tool, refusing arguments its schema does not name."""
    loose = tool.fn_metadata.arg_model
    config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)
    strict: type[BaseModel] = type(
        loose.__name__, (loose,), {"model_config": config, "__module__": __name__}
    )
    metadata = tool.fn_metadata.model_copy(update={"arg_model": strict})
    schema = strict.model_json_schema(by_alias=True)
    return tool.model_copy(update={"fn_metadata": metadata, "parameters": schema})
