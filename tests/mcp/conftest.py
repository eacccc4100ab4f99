"""What the MCP tests share: a scenario run through the SDK's in-memory client, its calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp import Client

from brain._brain import Brain
from brain._mcp_server import build_server

Scenario = Callable[[Client], Awaitable[None]]


def run(brain: Brain, scenario: Scenario) -> None:
    server = build_server(brain)

    async def main() -> None:
        async with Client(server) as client:
            await scenario(client)

    anyio.run(main)


async def call(client: Client, name: str, args: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(name, args or {})
    assert not result.is_error, f"{name}: {result.content[0].text}"  # type: ignore[union-attr]
    return result.structured_content


async def refused(client: Client, name: str, args: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(name, args or {})
    assert result.is_error, f"{name} should have been refused"
    return str(result.content[0].text)  # type: ignore[union-attr]
