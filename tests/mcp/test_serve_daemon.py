"""`brain serve` through the vault's daemon (its default path): what a session wrote is
committed when the server stops, and a call too big for the daemon's socket still runs (real
subprocesses, the SDK's client, a real daemon)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from brain._daemon.client import running_pid
from tests.mcp.conftest import serve_client

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0  # a generous deadline for the daemon's commit to appear (not a timing assertion)


def brain(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "brain", *args, "--vault", str(vault)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "BRAIN_DAEMON": "off"},
        cwd=ROOT,
        check=True,
    )


def server(vault: Path) -> Client:
    return serve_client(vault, "auto")


async def call(client: Client, name: str, args: dict[str, Any]) -> Any:
    result = await client.call_tool(name, args)
    assert not result.is_error, f"{name}: {result.content[0].text}"  # type: ignore[union-attr]
    return result.structured_content


def git_log(vault: Path) -> str:
    found = subprocess.run(
        ["git", "-C", str(vault), "log", "--format=%s"], capture_output=True, text=True
    )
    return found.stdout


def test_a_sessions_writes_are_committed_when_its_server_stops(daemon_vault: Path) -> None:
    vault = daemon_vault
    brain(vault, "git", "enable")

    async def main() -> None:
        async with server(vault) as client:
            await call(client, "remember", {"text": "The boat is called Ada.", "title": "Boat"})

    anyio.run(main)
    assert running_pid(vault) is not None  # the daemon stays, for the next host
    deadline = time.monotonic() + WAIT
    while 'remember "Boat"' not in git_log(vault):
        assert time.monotonic() < deadline, "the session's writes were never committed"
        time.sleep(0.05)
    status = subprocess.run(
        ["git", "-C", str(vault), "status", "--porcelain"], capture_output=True, text=True
    )
    assert status.stdout == ""


def test_a_text_the_vault_allows_is_remembered_though_too_big_for_the_daemon(
    daemon_vault: Path,
) -> None:
    vault = daemon_vault
    settings = vault / "brain.yaml"
    limit = settings.read_text().replace("max_text_bytes: 65536", "max_text_bytes: 10000000")
    settings.write_text(limit)
    text = "anchovy " * 1_200_000  # 9.6 MB: over the daemon's 8 MiB messages, under the limit

    async def main() -> None:
        async with server(vault) as client:
            await call(client, "ping", {})  # the daemon runs
            note = await call(client, "remember", {"text": text, "title": "Long list"})
            assert note["outcome"] == "created"
            hits = (await call(client, "recall", {"query": "anchovy"}))["hits"]
            assert [h["id"] for h in hits] == [note["id"]]

    anyio.run(main)
    assert running_pid(vault) is not None
    assert (vault / "main/Knowledge/Inbox/Long list.md").read_text().count("anchovy") == 1_200_000
