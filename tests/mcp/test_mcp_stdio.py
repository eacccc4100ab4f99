"""`brain serve` as real subprocesses over stdio: end to end, and two hosts plus the CLI at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from brain._brain import open_vault
from brain._mcp_server import TOOLS
from brain._vault import notefile
from brain.testing import tree_digest

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def server(vault: Path, *extra: str) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "brain", "serve", "--vault", str(vault), *extra],
        env=ENV,
        cwd=str(ROOT),
    )
    return Client(params)


# A host's first words, for the tests that write the JSON-RPC lines themselves.
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}


def raw_server(vault: Path, stderr: int) -> subprocess.Popen[bytes]:
    """`brain serve` on pipes, for lines the SDK's client will not send or cannot read."""
    return subprocess.Popen(
        [sys.executable, "-m", "brain", "serve", "--vault", str(vault)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env={**os.environ, **ENV},
        cwd=ROOT,
    )


async def call(client: Client, name: str, args: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(name, args or {})
    assert not result.is_error, f"{name}: {result.content[0].text}"  # type: ignore[union-attr]
    return result.structured_content


def test_serve_over_stdio_end_to_end(vault: Path) -> None:
    async def main() -> None:
        async with server(vault) as client:
            listed = (await client.list_tools()).tools
            assert sorted(t.name for t in listed) == sorted(TOOLS)
            note = await call(client, "remember", {"text": "The cat is called Miso."})
            hits = (await call(client, "recall", {"query": "what is the cat called"}))["hits"]
            assert hits[0]["id"] == note["id"] and "Miso" in hits[0]["snippet"]
            briefing = await call(client, "session")
            assert "Biography" in briefing["briefing"]
            await call(client, "addendum", {"text": "Talked about the cat."})
            await call(client, "maintain")
            await call(client, "remarks")
            await call(client, "diary", {"text": "Learned the cat's name."})
            closed = await call(client, "close")
            assert closed == {
                "step": "close",
                "next": "session",
                "session_note": closed["session_note"],
            }
            bad = await client.call_tool("remember", {"text": "x", "visibility": "private"})
            assert bad.is_error

    anyio.run(main)
    sessions = list((vault / "main/Memory/Sessions").glob("*.md"))
    assert len(sessions) == 1 and "gate: close" in sessions[0].read_text()


def test_serve_refuses_an_unknown_partition_with_one_line(vault: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "brain", "serve", "--vault", str(vault), "--partition", "nope"],
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
        cwd=ROOT,
        timeout=120,
    )
    assert res.returncode == 2 and res.stdout == ""
    assert "no partition 'nope'" in res.stderr


CLI_WRITES = 8
EACH = 25


def test_two_servers_and_the_cli_on_one_vault(vault: Path) -> None:
    def cli_writes() -> None:
        for n in range(CLI_WRITES):
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "brain",
                    "remember",
                    f"gamma note {n}",
                    "--vault",
                    str(vault),
                    "--title",
                    f"gamma {n}",
                ],
                check=True,
                env={**os.environ, **ENV},
                cwd=ROOT,
                capture_output=True,
            )

    async def main() -> None:
        async with server(vault) as a, server(vault) as b:
            base = (await call(a, "usage"))["notes"]
            ids: dict[str, list[str]] = {"alpha": [], "beta": []}

            async def writes(client: Client, word: str) -> None:
                for n in range(EACH):
                    note = await call(
                        client, "remember", {"text": f"{word} note {n}", "title": f"{word} {n}"}
                    )
                    ids[word].append(note["id"])

            async with anyio.create_task_group() as group:
                group.start_soon(writes, a, "alpha")
                group.start_soon(writes, b, "beta")
                group.start_soon(anyio.to_thread.run_sync, cli_writes)

            total = base + 2 * EACH + CLI_WRITES
            assert (await call(a, "usage"))["notes"] == total
            assert (await call(b, "usage"))["notes"] == total
            # Each server sees the other's writes and the CLI's.
            seen_by_a = (await call(a, "recall", {"query": "beta", "k": 20}))["hits"]
            assert len(seen_by_a) == 20 and {h["id"] for h in seen_by_a} <= set(ids["beta"])
            seen_by_b = (await call(b, "recall", {"query": "alpha", "k": 20}))["hits"]
            assert {h["id"] for h in seen_by_b} <= set(ids["alpha"]) and len(seen_by_b) == 20
            hits = (await call(a, "recall", {"query": "gamma", "k": 20}))["hits"]
            gamma = [h for h in hits if h["title"].startswith("gamma")]
            assert len(gamma) == CLI_WRITES
            assert {h["source"]["via"] for h in gamma} == {"cli"}
            for note_id in ids["alpha"][:3]:
                assert (await call(b, "expand", {"note_id": note_id}))["id"] == note_id

    anyio.run(main)
    inbox = sorted((vault / "main/Knowledge/Inbox").glob("*.md"))
    assert len(inbox) == 2 * EACH + CLI_WRITES
    for path in inbox:
        notefile.parse(path.read_text(), path.name)  # whole, not torn
    brain = open_vault(vault)
    assert brain.doctor().ok
    brain.close()


def test_a_request_the_sdk_cannot_read_is_answered_naming_what_is_wrong(vault: Path) -> None:
    # JSON may escape a lone surrogate ("\ud800"; a JavaScript host's JSON.stringify does);
    # the SDK cannot read such a line, and a host waited for its answer until it gave up.
    # `arguments` that is not an object got the SDK's "Invalid request parameters", naming
    # nothing.
    before = tree_digest(vault)
    process = raw_server(vault, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    call = {"jsonrpc": "2.0", "method": "tools/call"}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"remember",'
        '"arguments":{"text":"a \\ud800 b","title":"Odd"}}}',
        {**call, "id": 3, "params": {"name": "remember", "arguments": ["a note"]}},
        {**call, "id": 4, "params": {"name": "recall", "arguments": "kites"}},
        {**call, "id": 5, "params": {"name": "ping"}},
    ]
    for line in lines:
        process.stdin.write((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n")
    process.stdin.flush()
    answers: dict[int, Any] = {}
    gave_up = threading.Timer(120, process.kill)  # a dropped request must fail, not hang
    gave_up.start()
    try:
        while 5 not in answers:
            line = process.stdout.readline()
            assert line, f"no answer to requests {sorted({1, 2, 3, 4, 5} - set(answers))}"
            answer = json.loads(line)
            answers[answer["id"]] = answer
    finally:
        gave_up.cancel()
    process.stdin.close()
    process.wait(timeout=60)
    assert answers[2]["error"]["message"] == (
        "argument 'text' holds a lone surrogate (such as \\ud800), which is not Unicode text"
    )
    said = "arguments must be an object of named arguments, not "
    assert answers[3]["error"]["message"] == said + "a list"
    assert answers[4]["error"]["message"] == said + "text"
    assert answers[5]["result"]["structuredContent"]["ok"] is True  # and it went on serving
    assert tree_digest(vault) == before


def test_a_host_that_goes_away_mid_call_gets_the_call_done_and_no_traceback(
    vault: Path,
) -> None:
    """The host closes its pipes while a remember runs: the note is written, and the server
    ends quietly instead of printing the SDK's BrokenPipeError group into the host's log."""
    process = raw_server(vault, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    text = "The kite is red and flies over the dunes. " * 1400  # under the 64 KiB limit
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "remember", "arguments": {"text": text, "title": "Kite"}},
        },
    ]
    process.stdin.write(json.dumps(lines[0]).encode() + b"\n")
    process.stdin.flush()
    assert json.loads(process.stdout.readline())["id"] == 1
    for line in lines[1:]:
        process.stdin.write(json.dumps(line).encode() + b"\n")
    process.stdin.flush()
    process.stdout.close()  # gone before the answer: writing it breaks the pipe
    process.stdin.close()
    assert process.stderr is not None
    said = process.stderr.read()  # until the server exits
    process.wait(timeout=120)
    assert b"Traceback" not in said and b"BrokenPipeError" not in said, said.decode()
    assert process.returncode == 0
    brain = open_vault(vault)
    try:  # the call was done
        assert [n.title for n in brain.list(kind="titled") if n.title == "Kite"] == ["Kite"]
    finally:
        brain.close()
