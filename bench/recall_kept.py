"""Warm recall in process on a kept vault: p50 / p95 / max of each mode over the queries.

    python -m bench.recall_kept --vault DIR [--modes hybrid,text] [--queries 200]
                                [--set scale|daemon] [--out F.json]

DIR: a vault kept by `bench.scale --keep` (`--set scale`, its queries) or `bench.daemon --keep`
(`--set daemon`, its eight queries in turn). The vault is opened as brain.yaml says (its
embedder and sparse encoder), ten queries warm it, then each mode answers every query. Two
checkouts compared side by side: run this from each, in turn (farm-bench pairs them).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.daemon import QUERIES
from bench.scale import queries, summarise
from brain import open_vault
from brain._brain import Brain


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--modes", default="hybrid,text")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--set", default="scale", choices=("scale", "daemon"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.set == "daemon":
        asked = [QUERIES[n % len(QUERIES)] for n in range(args.queries)]
    else:
        asked = queries(args.queries)
    start = time.perf_counter()
    brain = warmed(args.vault, asked)
    report: dict[str, Any] = {"vault": str(args.vault)}
    report["open_s"] = round(time.perf_counter() - start, 2)
    load = os.getloadavg()[0]
    for mode in args.modes.split(","):
        times = []
        for query in asked:
            t0 = time.perf_counter()
            brain.recall(query, mode=mode)
            times.append((time.perf_counter() - t0) * 1000)
        report[mode] = summarise(times)
    brain.close()
    report["load"] = round((load + os.getloadavg()[0]) / 2, 2)
    emit(report, args.out)
    return 0


def warmed(vault: Path, asked: Sequence[str]) -> Brain:
    """The kept vault opened as a long-lived process holds it, ten of the queries asked."""
    brain = open_vault(vault)
    brain._context.catch_up_every = 600.0  # a long-lived process whose watcher follows the files
    brain._context.caches.catalog.hold_briefs()  # as the daemon does
    for query in asked[:10]:
        brain.recall(query)
    return brain


def emit(report: dict[str, Any], out: Path | None) -> None:
    """Print the report as one JSON line, and append it to `out` if given."""
    text = json.dumps(report, sort_keys=True)
    if out is not None:
        with out.open("a") as lines:
            lines.write(text + "\n")
    print(text)


if __name__ == "__main__":
    raise SystemExit(main())
