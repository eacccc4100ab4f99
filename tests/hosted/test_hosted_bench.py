"""The hosted write path in bulk and the hosted benchmarks, run at a tiny size: a crash in
either fails here, not on the operator's machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.http_servers import ENV, ROOT, fresh_database
from brain._clock import FixedClock
from tests.conftest import pushed


def test_bulk_on_a_hosted_brain_writes_every_memory(
    hosted_dsn: str, vault: Path, clock: FixedClock
) -> None:
    brain = pushed(hosted_dsn, vault, clock)
    with brain.bulk():
        ids = [
            brain.remember(f"bulk memory {i} about the ferry", title=f"bulk {i}").id
            for i in range(5)
        ]
    brain._context.flush()
    assert {h.id for h in brain.recall("ferry", k=10, mode="text")} == set(ids)
    brain.close()


def run_bench(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        env=ENV,
        cwd=str(ROOT),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_hosted_seed_bench_runs_at_a_tiny_size(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    said = run_bench(
        "bench.hosted_seed",
        "--db",
        db,
        "--tenants",
        "3",
        "--memories",
        "4",
        "--real",
        "1",
        "--maintenance-mem",
        "64MB",
    )
    assert "seeded in" in said


def test_the_hosted_serving_bench_runs_on_postgresql_at_a_tiny_size(pg_dsn: str) -> None:
    said = run_bench(
        "bench.hosted",
        "--db",
        pg_dsn,
        "--storage",
        "pg",
        "--tenants",
        "2",
        "--memories",
        "3",
        "--seconds",
        "0.3",
    )
    result = json.loads(said)
    assert [r["clients"] for r in result["recall"]] == [1, 8, 32]
    assert all(r["errors"] == 0 and r["calls"] > 0 for r in result["recall"])
    assert result["remember"]["errors"] == 0


def test_the_two_server_scaling_bench_runs_at_a_tiny_size(pg_dsn: str) -> None:
    said = run_bench(
        "bench.hosted_scaling",
        "--db",
        pg_dsn,
        "--tenants",
        "3",
        "--memories",
        "4",
        "--real",
        "1",
        "--cold",
        "2",
        "--seconds",
        "0.2",
    )
    [run] = json.loads(said)["runs"]
    assert [r["clients"] for r in run["recall"]] == [1, 8, 32]
    for phase in run["recall"]:
        assert phase["errors"] == 0 and phase["calls"] > 0
        assert phase["server_cpu_ms_per_recall"] > 0 and phase["database_cpu_ms_per_recall"] > 0
    assert run["cold_open"]["tenants"] == 2
    assert run["connections"]["held"] >= 2  # one a server at least


def test_the_concurrency_bench_runs_its_rounds_and_judges_each_target(pg_dsn: str) -> None:
    said = run_bench(
        "bench.hosted_concurrency",
        "--db",
        pg_dsn,
        "--tenants",
        "2",
        "--memories",
        "3",
        "--seconds",
        "2",
        "--rounds",
        "2",
    )
    (run,) = json.loads(said)["runs"]
    assert len(run["rounds"]) == 2
    for one in run["rounds"]:
        assert all(r["errors"] == 0 and r["calls"] > 0 for r in one["recall"])
        assert one["health"]["healthz"]["n"] > 0 and one["stall"]["big_writes"] > 0
    summary = run["summary"]
    assert summary["healthz"]["n"] == sum(o["health"]["healthz"]["n"] for o in run["rounds"])
    assert set(summary["met"]) == {
        "x8 >= 1.5 x1",
        "x32 >= x8",
        "healthz p99 <= 50 ms",
        "stall <= 2x",
    }
