"""Where warm recall's milliseconds go, stage by stage, on a kept vault.

    python -m bench.recall_stages --vault DIR [--mode hybrid] [--queries 200]
                                  [--profile N [--sort cumtime]]

DIR: a vault kept by `bench.scale --keep`. Ten queries warm it; then each stage below is timed
around every recall by wrapping its function with a clock: a stage's mean ms a recall with the
stages it calls, and alone; then the rest, which no stage here covers. A stage run on the
encoding worker (recall/ahead.py) overlaps the others, so the rest can be less than nothing.
`--profile N` prints cProfile's N costliest functions by their own time instead (`--sort cumtime`:
with what they call); its overhead inflates Python's share.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib
import os
import pstats
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.scale import queries, summarise
from brain import open_vault

# (module, attribute path): the stages of a hybrid recall, in the order a recall meets them.
STAGES = [
    ("brain._context", "Context.catch_up"),
    ("brain._context", "Context.flush"),
    ("brain._indexes.fulltext", "FullText.search"),
    ("brain._indexes.embedder", "MiniLMEmbedder.embed"),
    ("brain._indexes.sparse", "SpladeEncoder.encode"),
    ("brain._indexes.vectors", "VectorIndex.ranked"),
    ("brain._indexes.vectors", "VectorIndex._named"),
    ("brain._indexes.postings", "SparseIndex.search"),
    ("brain._recall.neighbours", "Neighbourhood.around"),
    ("brain._recall.neighbours", "blend_vectors"),
    ("brain._recall.neighbours", "blend_scores"),
    ("brain._indexes.catalog", "Catalog.briefs"),
    ("brain._indexes.catalog", "Catalog.said_titles"),
    ("brain._indexes.catalog", "Catalog.get_many"),
    ("brain._indexes.queries", "Queries.written_near"),
    ("brain._notes.corrections", "suspicion_flags"),
    ("brain._indexes.fulltext", "FullText.stored"),
    ("brain._recall.rank", "snippet"),
]


_OPEN = threading.local()  # per thread, for each open stage the time in the stages it called


def _wrap(totals: dict[str, list[float]], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        inside = _OPEN.__dict__.setdefault("stack", [])
        t0 = time.perf_counter()
        inside.append(0.0)
        try:
            return fn(*args, **kwargs)
        finally:
            spent = time.perf_counter() - t0
            inner = inside.pop()
            if inside:
                inside[-1] += spent
            both = totals.setdefault(name, [0.0, 0.0])
            both[0] += spent
            both[1] += spent - inner

    return timed


def instrument(totals: dict[str, list[float]]) -> None:
    """Wrap every stage's function (where it is defined and where it was imported by name)."""
    import sys

    for module_name, path in STAGES:
        module = importlib.import_module(module_name)
        owner_name, _, attr = path.rpartition(".")
        owner = getattr(module, owner_name) if owner_name else module
        original = getattr(owner, attr)
        timed = _wrap(totals, path, original)
        setattr(owner, attr, timed)
        if not owner_name:  # a module function: also where it was imported by name
            for other in list(sys.modules.values()):
                if getattr(other, attr, None) is original and other.__name__.startswith("brain"):
                    setattr(other, attr, timed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--profile", type=int, default=0)
    parser.add_argument("--sort", default="tottime", choices=("tottime", "cumtime"))
    args = parser.parse_args(argv)
    asked = queries(args.queries)
    brain = open_vault(args.vault)
    brain._context.catch_up_every = 600.0  # as bench.recall_kept: a long-lived process
    brain._context.caches.catalog.hold_briefs()
    for query in asked[:10]:
        brain.recall(query, mode=args.mode)
    totals: dict[str, list[float]] = {}
    profiler = cProfile.Profile() if args.profile else None
    if profiler is None:
        instrument(totals)
    load = os.getloadavg()[0]
    times = []
    for query in asked:
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        brain.recall(query, mode=args.mode)
        if profiler is not None:
            profiler.disable()
        times.append((time.perf_counter() - t0) * 1000)
    brain.close()
    print(f"recall {summarise(times)}, load {(load + os.getloadavg()[0]) / 2:.2f}")
    if profiler is not None:
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.profile)
        return 0
    mean = sum(times) / len(times)
    print(f"{'ms a recall, mean':<32} {'with':>7} {'alone':>7}")
    for _, name in STAGES:
        both = totals.get(name, [0.0, 0.0])
        print(f"{name:<32} {both[0] * 1000 / len(asked):7.2f} {both[1] * 1000 / len(asked):7.2f}")
    alone = sum(both[1] for both in totals.values()) * 1000 / len(asked)
    print(f"{'the rest':<32} {'':7} {mean - alone:7.2f}")
    print(f"{'all':<32} {mean:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
