"""A request the daemon turns away unrun, because it is stopping, is done elsewhere.

Each test keeps the daemon busy with a `remember` that waits for the vault's writer lock (held
here), queues a second request behind it, tells the daemon to stop, then lets the lock go: the
daemon ends the first job and turns the second away (TurnedAway), which its client then runs
in its own process. Nothing here is timed: every step waits for what the daemon reports.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brain._daemon.client import DaemonClient, start
from brain._vault.files import WriterLock
from tests.daemon.conftest import ROOT, brain, env, settle, stop_daemon, until


@pytest.fixture
def quiet(vault: Path) -> Iterator[Path]:
    """The test vault's daemon, warm, with no watcher whose catch-ups could queue beside."""
    settle(vault, "  autostart: false\n  watch: false\n")
    client = start(vault)
    client.call("status")  # answered once the warm-up job before it is done
    client.close()
    yield vault
    stop_daemon(vault)


def _ping(vault: Path) -> dict[str, Any]:
    client = DaemonClient.connect(vault, agree=False)
    try:
        return dict(client.call("ping"))
    finally:
        client.close()


def _popen(vault: Path, *args: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "brain", *args, "--vault", str(vault)]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
        cwd=ROOT,
    )


def _done(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    # The timeout only keeps a hung client from hanging the suite; it asserts no timing.
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


@contextlib.contextmanager
def _busy(vault: Path) -> Iterator[subprocess.Popen[str]]:
    """The daemon doing a `remember` that waits for the writer lock until this block ends."""
    with WriterLock(vault / ".brain" / "writer.lock").hold():
        first = _popen(vault, "remember", "Kayaks first, written by the daemon")
        until(lambda: _ping(vault)["doing"], "the daemon to take the first remember")
        yield first


def _queued_then_stopped(vault: Path) -> None:
    until(lambda: _ping(vault)["queued"] == 1, "the second request to wait its turn")
    client = DaemonClient.connect(vault, agree=False)
    assert client.call("stop") == {"stopping": True}
    client.close()


def test_a_remember_turned_away_by_a_stopping_daemon_is_done_in_process(quiet: Path) -> None:
    with _busy(quiet) as first:
        second = _popen(quiet, "remember", "Kayaks second, queued behind the first")
        _queued_then_stopped(quiet)
    code, out, err = _done(first)
    assert code == 0 and "Remembered" in out, err
    code, out, err = _done(second)
    assert code == 0 and "Remembered" in out, err
    assert "stopping" not in err
    listed = brain(quiet, "list")
    assert "Kayaks first" in listed.stdout and "Kayaks second" in listed.stdout


def test_a_fast_recall_turned_away_is_answered_by_the_full_command_line(quiet: Path) -> None:
    assert brain(quiet, "remember", "Canoes are lighter than kayaks").returncode == 0
    with _busy(quiet) as first:
        second = _popen(quiet, "recall", "canoes")  # the fast path (__main__.answered)
        _queued_then_stopped(quiet)
    assert _done(first)[0] == 0
    code, out, err = _done(second)
    assert code == 0, err
    assert "Canoes are lighter than kayaks" in out


def test_an_mcp_call_turned_away_is_done_by_brain_serve_itself(quiet: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    args = ["-m", "brain", "serve", "--vault", str(quiet)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env())
    made: dict[str, Any] = {}

    async def remember(client: Client) -> None:
        made["result"] = await client.call_tool("remember", {"text": "Kayaks from an assistant"})

    async def main() -> None:
        async with Client(params) as client:
            await client.call_tool("recall", {"query": "anything"})  # connected to the daemon
            async with anyio.create_task_group() as tasks:
                with _busy(quiet) as first:
                    made["first"] = first
                    tasks.start_soon(remember, client)
                    await anyio.to_thread.run_sync(_queued_then_stopped, quiet)
                # The lock is let go here; the task group waits for the call's answer.

    anyio.run(main)
    result = made["result"]
    assert not result.is_error, result.content
    assert _done(made["first"])[0] == 0
    listed = brain(quiet, "list")
    assert "Kayaks first" in listed.stdout and "from an assistant" in listed.stdout
