"""One `brain serve --http` process under concurrent load: recalls a second at 1, 8 and 32
clients, /healthz while 32 clients recall, and one tenant's recall while another writes.

python -m bench.hosted_concurrency [--tenants 8] [--memories 300] [--seconds 8] [--rounds 3]
                                   [--baseline /work/main] [--db DSN]
                                   [--server '--workers 2'] [--baseline-server '…'] [--pin]

The users' brains are in PostgreSQL (hashing vectors, seeded in bulk by this checkout's code).
With --baseline the same measures run against a server started from that checkout too (e.g.
main before the worker pool), one after the other on the same database. Prints one JSON object.

Each measure is taken `--rounds` times, one round after the other (1, 8 and 32 clients, then
/healthz, then the stall), and `summary` holds what requirement 1 of issue 43 asks: each ratio
as the median of the rounds' ratios (a ratio of two rates measured a few seconds apart, so a
shift of the shared machine's load between rounds moves both), /healthz over every round's
probes together, and whether each target is met.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from bench.hosted import load, seed
from bench.http_servers import (
    ROOT,
    Server,
    add_user,
    call,
    connect,
    database,
    fresh_database,
    start,
)
from bench.metrics import percentile
from bench.scale import queries
from brain._hosted.schema import init as init_schema
from brain._hosted.tenants import PgTenants

BIG = 60 * 1024  # one remember of nearly the 64 KiB a tool accepts


def ms(took: list[float]) -> dict[str, float]:
    got = sorted(t * 1000 for t in took)
    return {
        "p50_ms": round(percentile(got, 50), 1),
        "p95_ms": round(percentile(got, 95), 1),
        "p99_ms": round(percentile(got, 99), 1),
        "n": len(got),
    }


# The probe is a process of its own: timed in the bench's event loop, beside 32 clients, a
# probe's latency would include the bench's own turns (and its GIL), not only the server's.
PROBE = """
import http.client, json, sys, time
host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
conn = http.client.HTTPConnection(host, port, timeout=60)
took, stop = [], time.perf_counter() + seconds
while time.perf_counter() < stop:
    begun = time.perf_counter()
    conn.request("GET", "/healthz")
    answer = conn.getresponse()
    answer.read()
    assert answer.status == 200, answer.status
    took.append(time.perf_counter() - begun)
    time.sleep(0.02)
print(json.dumps(took))
"""


async def health_while_recalling(server: Server, tokens: list[str], seconds: float) -> Any:
    """/healthz every 20 ms, from a process of its own, while 32 clients recall."""
    address = server.url.removeprefix("http://").removesuffix("/mcp")
    host, _, port = address.rpartition(":")
    took: list[float] = []

    async def probe() -> None:
        await anyio.sleep(1.0)  # the clients are connected and recalling
        args = [sys.executable, "-c", PROBE, host.strip("[]"), port, str(seconds - 1.5)]
        done = await anyio.run_process(args)
        took.extend(json.loads(done.stdout))

    async with anyio.create_task_group() as tg:
        tg.start_soon(probe)
        recall = await load([server], tokens, 32, seconds, write=False)
    return {"healthz": ms(took), "recall_x32": recall, "took": took}


async def recall_beside_writes(server: Server, reader: str, writer: str, seconds: float) -> Any:
    """One tenant's recalls alone, then while another tenant remembers ~60 KiB notes."""
    asked = queries(200)

    async def recalls(until: float) -> list[float]:
        took = []
        async with connect(server.url, reader) as mcp:
            await call(mcp, "ping")
            i = 0
            while time.perf_counter() < until:
                begun = time.perf_counter()
                await call(mcp, "recall", {"query": asked[i % 200], "k": 5})
                took.append(time.perf_counter() - begun)
                i += 1
        return took

    idle = await recalls(time.perf_counter() + seconds)
    written = 0
    busy: list[float] = []

    async def write(until: float) -> None:
        nonlocal written
        async with connect(server.url, writer) as mcp:
            while time.perf_counter() < until:
                text = f"Long note {written}: " + ("harbour lanterns and tides " * (BIG // 27))
                await call(mcp, "remember", {"text": text[:BIG]})
                written += 1

    async def read(until: float) -> None:
        busy.extend(await recalls(until))

    async with anyio.create_task_group() as tg:
        until = time.perf_counter() + seconds
        tg.start_soon(write, until)
        tg.start_soon(read, until)
    return {"idle": ms(idle), "beside_writes": ms(busy), "big_writes": written}


def pin(pid: int, cores: set[int]) -> None:
    """Every thread of a process onto these cores (threads it makes later inherit them)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), cores)


def measure(
    db: str,
    tokens: list[str],
    seconds: float,
    source: Path,
    options: list[str],
    pinned: bool,
    rounds: int,
) -> dict[str, Any]:
    extra = ("--rate", "100000", "--burst", "100000", *options)
    server = start(db, None, *extra, source=source)
    if pinned:  # the server alone on core 0; this process and PostgreSQL stay on core 1
        pin(server.process.pid, {0})
    try:
        got: dict[str, Any] = {"source": str(source), "options": options, "rounds": []}
        probes: list[float] = []  # every round's /healthz times, for the summary's percentiles
        for _ in range(rounds):
            one: dict[str, Any] = {"recall": []}
            for clients in (1, 8, 32):
                res = anyio.run(partial(load, [server], tokens, clients, seconds, write=False))
                one["recall"].append(res)
                print(f"  {source.name} recall x{clients}: {res}", file=sys.stderr)
            one["health"] = anyio.run(lambda: health_while_recalling(server, tokens, seconds))
            probes += one["health"].pop("took")
            one["stall"] = anyio.run(
                lambda: recall_beside_writes(server, tokens[0], tokens[1], seconds)
            )
            got["rounds"].append(one)
        got["summary"] = summary(got["rounds"], probes)
        print(f"  {source.name} summary: {got['summary']}", file=sys.stderr)
        return got
    finally:
        server.stop()


def summary(rounds: list[dict[str, Any]], probes: list[float]) -> dict[str, Any]:
    """Requirement 1's figures over the rounds (`probes`: all their /healthz times), and
    whether each target is met."""
    rates = [[r["per_s"] for r in one["recall"]] for one in rounds]  # 1, 8, 32 clients
    scale = statistics.median(r8 / r1 for r1, r8, _ in rates)
    steady = statistics.median(r32 / r8 for _, r8, r32 in rates)
    stall = statistics.median(
        one["stall"]["beside_writes"]["p50_ms"] / one["stall"]["idle"]["p50_ms"] for one in rounds
    )
    health = ms(probes)
    return {
        "recalls_per_s": [round(statistics.median(r[i] for r in rates), 1) for i in range(3)],
        "x8_over_x1": round(scale, 2),
        "x32_over_x8": round(steady, 2),
        "healthz": health,
        "stall": round(stall, 2),
        "met": {
            "x8 >= 1.5 x1": scale >= 1.5,
            "x32 >= x8": steady >= 1.0,
            "healthz p99 <= 50 ms": health["p99_ms"] <= 50.0,
            "stall <= 2x": stall <= 2.0,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tenants", type=int, default=8)
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--db", help="a PostgreSQL to use (else an embedded one)")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure too")
    parser.add_argument(
        "--server", default="", help="more options of this checkout's server, e.g. '--workers 2'"
    )
    parser.add_argument("--baseline-server", default="", help="the same for the baseline's")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the server alone on core 0, the load and the embedded PostgreSQL on core 1",
    )
    args = parser.parse_args()
    if args.pin:  # before PostgreSQL starts: its processes inherit this
        pin(os.getpid(), {1})
    with database(args.db, "brain-concurrency-bench-") as dsn:
        db = fresh_database(dsn)
        init_schema(db)
        names = [f"t{n:03d}" for n in range(args.tenants)]
        tokens = [add_user(db, name) for name in names]
        seed(PgTenants(db, embedder="hashing"), None, names, args.memories)
        result: dict[str, Any] = {
            "tenants": args.tenants,
            "memories_per_tenant": args.memories,
            "seconds": args.seconds,
            "cores": os.cpu_count(),
            "pinned": args.pin,
            "rounds": args.rounds,
            "runs": [
                measure(db, tokens, args.seconds, ROOT, args.server.split(), args.pin, args.rounds)
            ],
        }
        if args.baseline is not None:
            other = args.baseline.resolve()
            result["runs"].append(
                measure(
                    db,
                    tokens,
                    args.seconds,
                    other,
                    args.baseline_server.split(),
                    args.pin,
                    args.rounds,
                )
            )
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
