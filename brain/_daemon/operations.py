"""What the daemon does for a request: the allowlist of operations, their arguments, MCP calls.

The CLI's note operations run through the same LocalBackend the in-process fallback uses, so
both paths give the same results. MCP tool calls run the MCP server's own tools (the same
strict schemas, the same model-facing view) for the `brain serve` client that sent them.
Nothing administrative is here: connect, sync, sleep, tiers, set, settings and reindex stay
with the person's own CLI process.
"""

from __future__ import annotations

import asyncio
import inspect
import types
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from brain._clock import zoned
from brain._daemon.backend import OPERATIONS, LocalBackend
from brain._daemon.follow import Follower
from brain._errors import BrainError, InvalidInput

if TYPE_CHECKING:
    from mcp.server.mcpserver.tools import Tool

    from brain._brain import Brain
    from brain._daemon import DaemonSettings

MAX_SESSIONS = 64  # MCP clients remembered at once; the oldest is dropped first


class Operations:
    """Runs one request at a time against the daemon's one Brain (callers serialise)."""

    def __init__(
        self,
        brain: Brain,
        on_daemon: Callable[[DaemonSettings], None] | None = None,
        on_connectors: Callable[[], None] = lambda: None,
    ) -> None:
        self.brain = brain
        self.local = LocalBackend(brain)
        self._sessions: OrderedDict[str, tuple[Brain, dict[str, Tool]]] = OrderedDict()
        self._loop = asyncio.new_event_loop()
        # brain.yaml may change under the daemon (by hand, `brain git enable`, `partition use`).
        self.follower = Follower(brain, on_daemon or (lambda _config: None), on_connectors)

    def run(self, op: str, args: Any, zone: Any = None) -> Any:
        """One request; its clock in the client's zone (`zone`: clock.zone_name) if it sent one."""
        with zoned(self.brain.clock, zone):
            return self._run(op, args)

    def _run(self, op: str, args: Any) -> Any:
        self.follower.check()
        self.brain.running().follow_git()
        if not isinstance(args, dict):
            raise InvalidInput("request field 'args' must be an object")
        if op == "mcp":
            return self.mcp(**_checked(self.mcp, args))
        if op not in OPERATIONS:
            raise InvalidInput(
                f"unknown operation {op!r}; the daemon serves: {', '.join(OPERATIONS)}, mcp"
            )
        method = getattr(self.local, op)
        return method(**_checked(method, args))

    def mcp(self, session: str, partition: str, tool: str, arguments: dict[str, Any]) -> Any:
        """One MCP tool call for the `brain serve` client whose session this is."""
        from mcp.server.mcpserver.exceptions import ToolError
        from pydantic import ValidationError

        from brain._mcp_server import TOOLS
        from brain._toolargs import plain

        if tool not in TOOLS:
            raise InvalidInput(f"unknown tool {tool!r}; allowed: {', '.join(TOOLS)}")
        view, tools = self._session(session, partition)
        # brain.yaml may have changed since (Follower): the view takes what the Brain took.
        view.running().follow(self.brain.running())
        found = tools[tool]
        try:
            kwargs = found.fn_metadata.validate_arguments(arguments)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            said = plain(exc, found.parameters) if isinstance(exc, ValidationError) else exc
            raise InvalidInput(f"arguments of {tool}: {said}") from None
        try:
            return self._loop.run_until_complete(found.fn(**kwargs))
        except ToolError as exc:
            cause = exc.__cause__
            raise cause if isinstance(cause, BrainError) else BrainError(str(exc)) from None

    def _session(self, session: str, partition: str) -> tuple[Brain, dict[str, Tool]]:
        from brain._mcp_server import build_tools

        if session in self._sessions:
            self._sessions.move_to_end(session)
            return self._sessions[session]
        # A view of the one Brain: same caches, lock and embedder; its own partition and the
        # model-facing mode, so one client's partition_use does not move another's.
        chosen = partition or self.brain.settings.default_partition
        view = self.brain.at(chosen, for_model=True, defer_commits=True)
        view.check_recallable()
        tools = {t.name: t for t in build_tools(view, session_id=session)}
        self._sessions[session] = (view, tools)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return view, tools

    def end(self, sessions: Iterable[str]) -> None:
        """These `brain serve` clients went away: what their sessions wrote becomes a commit
        now, as a server in its own process commits when it stops (docs/mcp.md)."""
        for session in sessions:
            ended = self._sessions.pop(session, None)
            if ended is not None:
                ended[0].commit()

    def close(self) -> None:
        self._loop.close()


def _checked(fn: Any, args: dict[str, Any]) -> dict[str, Any]:
    """The arguments, if each is named by fn and has the type its annotation says."""
    params, required = _parameters(fn)
    for name, value in args.items():
        if name not in params or name == "self":
            raise InvalidInput(f"unknown argument {name!r}; allowed: {', '.join(params)}")
        if not _fits(value, params[name]):
            raise InvalidInput(f"argument {name!r} has the wrong type ({type(value).__name__})")
    missing = [n for n in required if n not in args]
    if missing:
        raise InvalidInput(f"missing argument(s): {', '.join(missing)}")
    return args


def _parameters(fn: Any) -> tuple[dict[str, Any], list[str]]:
    """fn's arguments with their types, and the required ones; `**options: Unpack[Options]`
    stands for the keys of that TypedDict (recall's options are defined once, in model.py)."""
    hints = typing.get_type_hints(fn)
    named: dict[str, Any] = {}
    required = []
    for name, param in inspect.signature(fn).parameters.items():
        hint = hints.get(name, Any)
        if param.kind is param.VAR_KEYWORD:
            if typing.get_origin(hint) is typing.Unpack:
                named.update(typing.get_type_hints(typing.get_args(hint)[0]))
            continue
        named[name] = hint
        if param.default is param.empty:
            required.append(name)
    return named, required


def _fits(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin in (list, Sequence, tuple) or hint in (list, Sequence):
        inner = typing.get_args(hint)
        return isinstance(value, list) and all(_fits(v, inner[0]) for v in value if inner)
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return False
