"""The daemon's cold start on a kept vault: from `brain recall` with no daemon to its answer.

    python -m bench.cold_start --vault DIR [--runs 3] [--vs CHECKOUT]

Each run stops any daemon of the vault, then times a `brain recall` that starts one (loading
the caches and the model, and its watcher's first catch-up) and prints its answer, then waits
until that daemon's watcher reports its first catch-up done (a big vault's full walk runs
aside after the first answer: Watcher._start). `--vs` names a second checkout of brain, run
in turn with this one (A B A B ...) on the same vault, so the two are compared under the same
load. The vault: `python -m bench.daemon --notes 1000000 --keep DIR --build-only`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.daemon import QUERIES, ROOT
from brain._daemon.client import DaemonClient, running_pid

WAIT = 600.0  # seconds to wait for a walk at most: a bound so a broken run fails, not a claim


def brain(checkout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BRAIN_DAEMON"}
    env |= {"PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "brain", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=checkout,
    )


def once(checkout: Path, vault: Path, query: str) -> tuple[float, float]:
    """Seconds to the first answer, and to the watcher's first catch-up being done."""
    brain(checkout, "daemon", "stop", "--vault", str(vault))
    deadline = time.monotonic() + WAIT
    while running_pid(vault) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    start = time.perf_counter()
    done = brain(checkout, "recall", query, "--vault", str(vault))
    answered = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    client = DaemonClient.connect(vault)
    while not caught_up(client.call("status")) and time.monotonic() < deadline:
        time.sleep(0.1)
    client.close()
    return answered, time.perf_counter() - start


def caught_up(status: dict[str, Any]) -> bool:
    # A daemon from before `first_catch_up` shows its first as the first `last_catch_up`.
    return bool(status.get("first_catch_up") or status.get("last_catch_up"))


def spread(times: list[float]) -> str:
    return f"{statistics.median(times):.2f} ({times[0]:.2f}–{times[-1]:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vs", type=Path, help="another checkout, run in turn with this one")
    args = parser.parse_args()
    vault = args.vault.resolve()
    checkouts = [ROOT] + ([args.vs.resolve()] if args.vs else [])
    times: dict[Path, list[tuple[float, float]]] = {c: [] for c in checkouts}
    loads = []
    for n in range(args.runs):
        for checkout in checkouts:
            times[checkout].append(once(checkout, vault, QUERIES[n % len(QUERIES)]))
            loads.append(os.getloadavg()[0])
    brain(ROOT, "daemon", "stop", "--vault", str(vault))
    print("| checkout | first answer, s: median (min–max) | first catch-up done, s |")
    print("|---|---|---|")
    for checkout, runs in times.items():
        first, caught = sorted(r[0] for r in runs), sorted(r[1] for r in runs)
        print(f"| {checkout} | {spread(first)} | {spread(caught)} |")
    print(f"\nload average {min(loads):.1f}–{max(loads):.1f}")


if __name__ == "__main__":
    main()
