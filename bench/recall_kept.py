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
    brain = open_vault(args.vault)
    brain.catch_up_every = 600.0  # a long-lived process whose watcher follows the files
    report: dict[str, Any] = {"vault": str(args.vault), "open_s": 0.0}
    for query in asked[:10]:
        brain.recall(query)
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
    text = json.dumps(report, sort_keys=True)
    if args.out:
        with args.out.open("a") as out:
            out.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
