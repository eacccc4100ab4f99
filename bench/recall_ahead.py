"""Warm hybrid recall with and without the sparse search made ahead on the encoding worker
(recall/sparse.py), query by query in one process, in turn.

    python -m bench.recall_ahead --vault DIR [--queries 400] [--out F.json]

DIR: a vault kept by `bench.scale --keep`. Ten queries warm it. Then each query is answered
twice, once with `Caches.search_ahead` on and once off, the order alternating from one query to
the next. Both answers meet the same machine at the same moment. Printed: each side's p50 and
p95, and the median of the paired differences (on − off, ms) with a 95% bootstrap interval.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path

from bench.recall_kept import emit, warmed
from bench.scale import queries, summarise
from brain._indexes.caches import Caches


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def paired(diffs: Sequence[float], rounds: int) -> tuple[float, list[float]]:
    """The median of paired differences and its 95% bootstrap interval (seeded)."""
    rng = random.Random(0)
    spread = sorted(median(rng.choices(diffs, k=len(diffs))) for _ in range(rounds))
    low, high = spread[int(0.025 * rounds)], spread[int(0.975 * rounds) - 1]
    return round(median(diffs), 3), [round(low, 3), round(high, 3)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    asked = queries(args.queries)
    brain = warmed(args.vault, asked)
    load = os.getloadavg()[0]
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for n, query in enumerate(asked):
            for ahead in (True, False) if n % 2 else (False, True):
                Caches.search_ahead = ahead
                start = time.perf_counter()
                brain.recall(query)
                times[ahead].append((time.perf_counter() - start) * 1000)
    finally:
        Caches.search_ahead = True
        brain.close()
    diffs = [on - off for on, off in zip(times[True], times[False], strict=True)]
    middle, interval = paired(diffs, 1000)
    report = {
        "vault": str(args.vault),
        "ahead": summarise(times[True]),
        "here": summarise(times[False]),
        "diff_ms": middle,
        "diff_95": interval,
        "load": round((load + os.getloadavg()[0]) / 2, 2),
    }
    emit(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
