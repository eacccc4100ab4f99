"""`brain serve` answers the handshake and tools/list before it opens the vault's caches or
reaches the daemon; the first call that needs them opens them (real subprocesses, SDK client)."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio

from brain._brain import Brain
from brain._clock import FixedClock
from brain._context import Context
from brain._daemon.client import running_pid
from brain._mcp_server import TOOLS
from brain._opening import Opening, open_context
from brain._settings import load
from tests.mcp.conftest import serve_client

server = serve_client


def test_tools_are_listed_before_any_cache_is_opened(vault: Path) -> None:
    shutil.rmtree(vault / ".brain", ignore_errors=True)  # fresh from git: no caches yet
    seen: dict[str, bool] = {}

    async def main() -> None:
        async with server(vault, "off") as client:
            assert client.server_info.name == "brain"
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == list(TOOLS)
            seen["before"] = (vault / ".brain").exists()
            result = await client.call_tool("recall", {"query": "anything"})
            assert not result.is_error, result.content
            seen["after"] = (vault / ".brain" / "fulltext").exists()

    anyio.run(main)
    assert seen == {"before": False, "after": True}


def test_the_daemon_is_reached_on_the_first_call_not_before(daemon_vault: Path) -> None:
    vault = daemon_vault  # the test vault keeps the daemon off; this test wants it
    seen: dict[str, int | None] = {}

    async def main() -> None:
        async with server(vault, "auto") as client:
            await client.list_tools()
            seen["listed"] = running_pid(vault)
            result = await client.call_tool("ping", {})
            assert not result.is_error, result.content
            seen["called"] = running_pid(vault)

    anyio.run(main)
    assert seen["listed"] is None and seen["called"] is not None


def test_a_deferred_brain_opens_once_and_its_model_view_with_it(
    vault: Path, clock: FixedClock
) -> None:
    opened: list[int] = []
    settings = load(vault)

    def opener() -> Context:
        opened.append(1)
        return open_context(vault, clock=clock, embedder=None)

    brain = Brain(Opening(opener, vault, settings, clock, settings.default_partition))
    model = brain.at(for_model=True, defer_commits=True)  # as the MCP server takes its view
    model.commit()  # nothing opened, nothing to commit
    assert model.partition == settings.default_partition and model.clock is clock
    assert model.for_model is True and brain.for_model is False
    assert not brain._opening.is_open and not model._opening.is_open and opened == []
    assert model.list(limit=5) is not None
    real = model._context
    assert opened == [1] and real.for_model is True and real.defer_commits is True
    assert brain._opening.is_open and brain._context.for_model is False  # the view changed nothing
    assert real.caches is brain._context.caches  # one opened vault
    model.list(limit=5)
    brain.list(limit=5)
    assert opened == [1]
    brain.close()
