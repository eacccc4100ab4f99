"""Two `brain serve --http` on one PostgreSQL: recalls per server core, database CPU a recall.

python -m bench.hosted_scaling [--tenants 100] [--memories 1000] [--real 2] [--seconds 10]
                               [--cold 20] [--baseline DIR] [--db DSN]

The users' brains are seeded in bulk (bench.hosted_seed: the first --real tenants written by
the product, the rest copied with their own vectors; hashing vectors). Two servers from this
checkout (and, with --baseline, two from DIR, run in DIR's own .venv when it has one) serve the
same database on loopback. Each side first recalls once for each of --cold tenants, on servers
that have not opened their brains, then a second round: the CPU the first round took beyond the
second is a cold open's. Then 1, 8 and 32 clients, each with its own tenant's token,
alternating servers, recall for --seconds (one side after the other: four servers at once,
each connection a brain, would pass PostgreSQL's default 100 connections). Each
phase reads the CPU the servers and the PostgreSQL processes used (/proc, utime + stime)
between the moment every client is connected and the end. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import psycopg

from bench.hosted import load
from bench.hosted_seed import seed_tenants
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

TICK = os.sysconf("SC_CLK_TCK")


def stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (state first), or [] once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    return text.rsplit(")", 1)[1].split()


def cpu(pid: int, *, children: bool = False) -> float:
    """Seconds of CPU a process used, with its waited-for children's when asked."""
    got = stat(pid)
    if not got:
        return 0.0
    fields = got[11:15] if children else got[11:13]  # utime stime [cutime cstime]
    return sum(int(f) for f in fields) / TICK


def postmaster(dsn: str) -> int:
    """The PID of the (local) PostgreSQL that serves `dsn`."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    return int((Path(str(row[0])) / "postmaster.pid").read_text().split()[0])


def database_cpu(master: int) -> float:
    """CPU seconds of the postmaster and every backend: the ones that exited are in the
    postmaster's children's time, the live ones are read one by one."""
    total = cpu(master, children=True)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            got = stat(int(entry.name))
            if got and got[1] == str(master):
                total += cpu(int(entry.name))
    return total


def rss_mb(servers: list[Server]) -> float:
    """The servers' resident memory together, MB."""
    total = 0
    for server in servers:
        for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def ms(took: list[float]) -> dict[str, float]:
    got = sorted(t * 1000 for t in took)
    return {"p50_ms": round(percentile(got, 50), 1), "p95_ms": round(percentile(got, 95), 1)}


async def recall_each(servers: list[Server], tokens: list[str], asked: list[str]) -> list[float]:
    """One recall for each tenant in turn, on its own connection: the seconds each took."""
    took = []
    for n, token in enumerate(tokens):
        async with connect(servers[n % len(servers)].url, token) as mcp:
            begun = time.perf_counter()
            await call(mcp, "recall", {"query": asked[n], "k": 5})
            took.append(time.perf_counter() - begun)
    return took


def cold_opens(servers: list[Server], tokens: list[str], master: int) -> dict[str, Any]:
    """Each tenant's first recall on a server that has not opened its brain, then a second
    round on the same servers: latency, and the CPU a round took beyond the warm one."""
    asked = queries(2 * len(tokens))
    rounds = []
    for part in (asked[: len(tokens)], asked[len(tokens) :]):
        before = (sum(cpu(s.process.pid) for s in servers), database_cpu(master))
        took = anyio.run(recall_each, servers, tokens, part)
        after = (sum(cpu(s.process.pid) for s in servers), database_cpu(master))
        rounds.append(
            (took, [(b - a) * 1000 / len(tokens) for a, b in zip(before, after, strict=True)])
        )
    (cold, (cold_server, cold_db)), (warm, (warm_server, warm_db)) = rounds
    first, then = ms(cold), ms(warm)
    return {
        "tenants": len(tokens),
        "first_recall": first,
        "second_recall": then,
        "open_cost_p50_ms": round(first["p50_ms"] - then["p50_ms"], 1),
        "open_server_cpu_ms": round(cold_server - warm_server, 1),
        "open_database_cpu_ms": round(cold_db - warm_db, 1),
        "load": round(os.getloadavg()[0], 2),
    }


def phase(
    servers: list[Server], tokens: list[str], clients: int, seconds: float, master: int
) -> Any:
    """`clients` clients recalling for `seconds`, with the CPU each side of the wire used."""
    mark: list[float] = []

    def now() -> list[float]:
        spent = sum(cpu(s.process.pid) for s in servers)
        return [time.perf_counter(), spent, database_cpu(master), time.process_time()]

    def started() -> None:
        mark.extend(now())

    got = anyio.run(partial(load, servers, tokens, clients, seconds, write=False, at_start=started))
    wall, served, database, driver = (b - a for a, b in zip(mark, now(), strict=True))
    calls = max(got["calls"], 1)
    return {
        **got,
        "per_s_per_server": round(got["per_s"] / len(servers), 1),
        "per_server_cpu_s": round(calls / served, 1) if served else None,
        "server_cpu_ms_per_recall": round(1000 * served / calls, 2),
        "database_cpu_ms_per_recall": round(1000 * database / calls, 2),
        "driver_cpu_ms_per_recall": round(1000 * driver / calls, 2),
        "servers_cores_busy": round(served / wall, 2),
        "database_cores_busy": round(database / wall, 2),
    }


def connections(dsn: str) -> dict[str, int]:
    """Connections to the database now (this one's not counted), and the server's limit."""
    with psycopg.connect(dsn) as conn:
        held = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ).fetchone()
        limit = conn.execute("SHOW max_connections").fetchone()
    return {"held": int(held[0]) if held else 0, "max": int(limit[0]) if limit else 0}


def measure(db: str, tokens: list[str], source: Path, args: argparse.Namespace) -> Any:
    """One side's two servers: cold opens first, then 1, 8 and 32 clients."""
    extra = ("--rate", "100000", "--burst", "100000", "--max-open", str(len(tokens) + 1))
    servers = [start(db, None, *extra, source=source), start(db, None, *extra, source=source)]
    master = postmaster(db)
    try:
        got: dict[str, Any] = {"source": str(source), "recall": []}
        idle = rss_mb(servers)
        got["cold_open"] = cold_opens(servers, tokens[-args.cold :], master)
        print(f"  {source} cold open: {got['cold_open']}", file=sys.stderr)
        anyio.run(partial(load, servers, tokens, 32, 1.0, write=False))  # brains opened
        for clients in (1, 8, 32):
            got["recall"].append(phase(servers, tokens, clients, args.seconds, master))
            print(f"  {source} recall x{clients}: {got['recall'][-1]}", file=sys.stderr)
        opened = {(n % 2, tokens[n % len(tokens)]) for n in range(32)}  # (server, tenant)
        opened |= {(n % 2, token) for n, token in enumerate(tokens[-args.cold :])}
        got["connections"] = {**connections(db), "brains_open": len(opened)}
        got["memory_mb"] = {"servers_idle": round(idle), "servers_after": round(rss_mb(servers))}
        return got
    finally:
        for server in servers:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--real", type=int, default=2, help="tenants written by the product")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--cold", type=int, default=20, help="tenants whose first call is timed")
    parser.add_argument("--db", help="a local PostgreSQL to use (else an embedded one)")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside")
    args = parser.parse_args()
    if not (1 <= args.cold <= args.tenants and 1 <= args.real <= args.tenants):
        parser.error("--cold and --real must be between 1 and --tenants")
    with database(args.db, "brain-scaling-bench-") as dsn:
        db = fresh_database(dsn)
        names = [f"t{n:03d}" for n in range(args.tenants)]
        seeded = seed_tenants(db, names, args.memories, args.real, "256MB")
        tokens = [add_user(db, name) for name in names]
        print(f"  seeded: {seeded}", file=sys.stderr)
        sources = [ROOT] + ([args.baseline.resolve()] if args.baseline else [])
        result = {
            "tenants": args.tenants,
            "memories_per_tenant": args.memories,
            "seconds": args.seconds,
            "cores": os.cpu_count(),
            "seed": seeded,
            "load_before": round(os.getloadavg()[0], 2),
            "runs": [measure(db, tokens, source, args) for source in sources],
            "load_after": round(os.getloadavg()[0], 2),
        }
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
