"""What the MCP tests share: a scenario run through the SDK's in-memory client, its calls."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from brain._brain import Brain
from brain._mcp_server import build_server

Scenario = Callable[[Client], Awaitable[None]]
ROOT = Path(__file__).resolve().parents[2]


def serve_client(vault: Path, daemon: str) -> Client:
    """The SDK's client of a real `brain serve` subprocess (`daemon`: its BRAIN_DAEMON)."""
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "BRAIN_DAEMON": daemon}
    args = ["-m", "brain", "serve", "--vault", str(vault)]
    return Client(StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env))


@pytest.fixture
def daemon_vault(vault: Path) -> Iterator[Path]:
    """The test vault with the daemon allowed to start (it says `autostart: false`), and the
    daemon stopped afterwards."""
    settings = vault / "brain.yaml"
    settings.write_text(settings.read_text().replace("autostart: false", "autostart: true"))
    try:
        yield vault
    finally:
        subprocess.run(
            [sys.executable, "-m", "brain", "daemon", "stop", "--vault", str(vault)],
            cwd=ROOT,
            capture_output=True,
            check=False,
        )


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
