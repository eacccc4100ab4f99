"""Time the daemon at 10k memories: cold first call, warm `brain recall`, MCP recall round trip.

python -m bench.daemon [--notes 10000] [--embedder hashing|minilm] [--runs 20] [--keep DIR]

The vault is written as files and indexed once in process (with the chosen embedder), then every
figure is a fresh process or a real socket, as a person or an MCP host would see it. `--keep DIR`
builds the vault in DIR and keeps it; a later run with the same DIR measures it again without
building (the 1M vault takes most of an hour to build here).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from brain._brain import open_vault
from brain._daemon.client import DaemonClient, running_pid
from brain._model import iso, new_id
from brain.testing import new_vault

T0 = datetime(2026, 12, 2, tzinfo=UTC)
TOPICS = "garden boiler taxes bicycle recipes travel books music".split()
QUERIES = [
    "garden budget",
    "boiler repair plan",
    "taxes next steps",
    "bicycle week 12",
    "recipes for the trip",
    "travel budget",
    "books to read",
    "music plan",
]
ROOT = Path(__file__).resolve().parents[1]
FULL = "import sys\nfrom brain._cli import main\nsys.argv = ['brain', *sys.argv[1:]]\nmain()\n"


def build(root: Path, notes: int, embedder: str) -> float:
    new_vault(root, T0, embedder=embedder, daemon="idle_seconds: 600")
    inbox = root / "main/Knowledge/Inbox"
    for n in range(notes):
        topic = TOPICS[n % len(TOPICS)]
        (inbox / f"{topic} note {n}.md").write_text(
            f"---\nid: {new_id(T0)}\ntitle: {topic} note {n}\nkind: titled\nstatus: active\n"
            f"created: {iso(T0)}\ntouched: {iso(T0)}\n---\nMemory {n} about {topic}: details on "
            f"the {topic} plan, budget and next steps for week {n % 52}.\n"
        )
    start = time.perf_counter()
    brain = open_vault(root)
    brain._context.catch_up()
    brain._context.flush()  # embeds every note
    brain.close()
    return time.perf_counter() - start


def env(**extra: str) -> dict[str, str]:
    found = {k: v for k, v in os.environ.items() if k != "BRAIN_DAEMON"}
    return {**found, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **extra}


def wall(argv: list[str], **extra: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env(**extra), cwd=ROOT)
    took = (time.perf_counter() - start) * 1000
    assert done.returncode == 0, done.stderr
    return took


def row(label: str, times: list[float]) -> None:
    times = sorted(times)
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(f"| {label} | {statistics.median(times):.1f} | {p95:.1f} | {times[0]:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--embedder", default="hashing", choices=("hashing", "minilm"))
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--keep", type=Path, help="build the vault here and keep it")
    parser.add_argument("--build-only", action="store_true", help="with --keep: build, no timing")
    args = parser.parse_args()
    root = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp()) / "vault"
    if (root / "brain.yaml").exists():
        print(f"measuring the vault kept in {root}\n")
    else:
        took = build(root, args.notes, args.embedder)
        print(
            f"{args.notes} notes indexed with `{args.embedder}` in {took:.1f} s "
            f"(load {os.getloadavg()[0]:.1f})\n"
        )
        if args.build_only:
            return
    brain = [sys.executable, "-m", "brain"]
    vault = ["--vault", str(root)]
    print("| call | p50 ms | p95 ms | min ms |\n|---|---:|---:|---:|")
    row(
        "`brain recall`, in process (BRAIN_DAEMON=off)",
        [wall([*brain, "recall", q, *vault], BRAIN_DAEMON="off") for q in QUERIES[:5]],
    )
    cold = time.perf_counter()
    row(
        "`brain recall`, cold: starts the daemon, which loads and warms",
        [wall([*brain, "recall", QUERIES[0], *vault])],
    )
    pid = running_pid(root)
    assert pid is not None
    try:
        # A big vault's full walk runs aside after the first answer (Watcher._start): MCP
        # recall is timed while it runs, and the warm figures below once it is done.
        client = DaemonClient.connect(root)
        request: dict[str, Any] = {"session": new_id(T0), "partition": "main", "tool": "recall"}
        during: list[float] = []
        while not (first := client.call("status").get("first_catch_up")):
            start = time.perf_counter()
            query = QUERIES[len(during) % len(QUERIES)]
            client.call("mcp", {**request, "arguments": {"query": query}})
            during.append((time.perf_counter() - start) * 1000)
        caught = time.perf_counter() - cold
        print(
            f"| the watcher's first catch-up ({first['how']}, {first['ms']:.0f} ms) done, "
            f"from the cold call's start | {caught * 1000:.1f} | | |"
        )
        if during:
            row("MCP `recall` over the daemon socket while that catch-up ran", during)
        queries = [QUERIES[n % len(QUERIES)] for n in range(args.runs)]
        row(
            "`brain recall`, daemon warm (fast path)",
            [wall([*brain, "recall", q, *vault]) for q in queries],
        )
        full = [sys.executable, "-c", FULL, "recall"]
        row(
            "`brain recall`, daemon warm, full CLI (typer)",
            [wall([*full, q, *vault]) for q in queries[:10]],
        )
        times = []
        for n in range(args.runs * 10):
            start = time.perf_counter()
            client.call("mcp", {**request, "arguments": {"query": QUERIES[n % len(QUERIES)]}})
            times.append((time.perf_counter() - start) * 1000)
        row("MCP `recall` over the daemon socket (what `brain serve` sends)", times)
        row(
            "MCP `recall` through `brain serve` over stdio (host → serve → daemon)",
            anyio.run(stdio_round_trips, root, args.runs * 5),
        )
        status = client.call("status")
        client.close()
        print(
            f"\ndaemon: {status['memory_bytes'] / 2**20:.0f} MiB resident, "
            f"{status['requests']} requests served, load {os.getloadavg()[0]:.1f}"
        )
    finally:
        subprocess.run([*brain, "daemon", "stop", *vault], capture_output=True, env=env())
        if not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)


async def stdio_round_trips(root: Path, runs: int) -> list[float]:
    params = StdioServerParameters(
        command=sys.executable,
        env=env(),
        cwd=str(ROOT),
        args=["-m", "brain", "serve", "--vault", str(root)],
    )
    times = []
    async with Client(params) as client:
        await client.call_tool("ping", {})
        for n in range(runs):
            start = time.perf_counter()
            result = await client.call_tool("recall", {"query": QUERIES[n % len(QUERIES)]})
            times.append((time.perf_counter() - start) * 1000)
            assert not result.is_error
    return times


if __name__ == "__main__":
    main()
