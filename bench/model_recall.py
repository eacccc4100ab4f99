"""Warm recall of a kept vault as the person and as a model (the MCP server's view), p50/p95.

    python -m bench.model_recall VAULT [--queries 200] [--modes text,hybrid]

A model's recall counts what it may see: the question's words weighed among those memories, in
relevance and (files) in the full text's BM25 (docs/mcp.md, "Private stays private"). This
times what that costs against the person's recall of the same queries, in one process, the two
taken in turn query by query. The queries are bench.scale's, for a vault it built (`--keep`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path

from bench.scale import queries, summarise
from brain import open_vault


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("vault", type=Path)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--modes", default="text,hybrid")
    args = parser.parse_args(argv)
    person = open_vault(args.vault)
    model = person.at(for_model=True)
    asked = queries(args.queries)
    report: dict[str, object] = {"load_before": os.getloadavg()[0]}
    for mode in args.modes.split(","):
        for q in asked[:10]:  # warm: models loaded, caches read
            person.recall(q, mode=mode)
            model.recall(q, mode=mode)
        times: dict[str, list[float]] = {"person": [], "model": []}
        for q in asked:
            for who, brain in (("person", person), ("model", model)):
                began = time.perf_counter()
                brain.recall(q, mode=mode)
                times[who].append((time.perf_counter() - began) * 1000)
        report[mode] = {who: summarise(ms) for who, ms in times.items()}
    report["load_after"] = os.getloadavg()[0]
    person.close()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
