"""Warm hybrid recall with one piece of the code as it is here and as another checkout has it,
query by query in one process.

    python -m bench.recall_swap --vault DIR --other CHECKOUT --swap MODULE:NAME [--swap ...]
                                [--queries 200] [--out F.json]

DIR: a vault kept by `bench.scale --keep`. CHECKOUT: another copy of the project (for example
`git archive REV | tar -x -C CHECKOUT`). Each `--swap` names a function or a class attribute,
`brain._recall.neighbours:blend_vectors` or `brain._indexes.vectors:VectorIndex._ensure`: the
other checkout's file of that module is loaded beside this one, and its object takes the
place of this one's while the "other" side runs. Both sides must fit the rest of this code.

Two passes over the queries: in the first the even queries run this code and the odd the
other, in the second the other way round. Each query is answered once by each side, with
the rest of the queries between, so neither answer finds the other's rows in the caches.
Printed: each side's p50 and p95, and the median of the paired differences (here − other,
ms) with a 95% bootstrap interval.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.recall_ahead import paired
from bench.recall_kept import emit, warmed
from bench.scale import queries, summarise


def loaded(checkout: Path, module: str) -> Any:
    """The other checkout's copy of a module, under a name of its own."""
    path = checkout.joinpath(*module.split(".")).with_suffix(".py")
    name = f"_other_{module.replace('.', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.exists():
        raise SystemExit(f"--swap {module}: no {path}")
    other = importlib.util.module_from_spec(spec)
    sys.modules[name] = other  # dataclasses look their module up
    spec.loader.exec_module(other)
    return other


def swaps(checkout: Path, names: Sequence[str]) -> list[tuple[Any, str, Any, Any]]:
    """(owner, attribute, this code's object, the other's) for each `module:Name[.attr]`."""
    out = []
    for spec in names:
        module, _, dotted = spec.partition(":")
        if not dotted:
            raise SystemExit(f"--swap {spec}: give MODULE:NAME")
        here, there = importlib.import_module(module), loaded(checkout, module)
        *path, attr = dotted.split(".")
        for part in path:
            here, there = getattr(here, part), getattr(there, part)
        out.append((here, attr, getattr(here, attr), getattr(there, attr)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--other", type=Path, required=True)
    parser.add_argument("--swap", action="append", required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    pieces = swaps(args.other, args.swap)
    asked = queries(args.queries)
    brain = warmed(args.vault, queries(args.queries + 10)[args.queries :])
    load = os.getloadavg()[0]
    times: dict[bool, list[float]] = {True: [0.0] * len(asked), False: [0.0] * len(asked)}
    try:
        for turn in (0, 1):
            for n, query in enumerate(asked):
                here = (n + turn) % 2 == 0
                for owner, attr, mine, theirs in pieces:
                    setattr(owner, attr, mine if here else theirs)
                start = time.perf_counter()
                brain.recall(query)
                times[here][n] = (time.perf_counter() - start) * 1000
    finally:
        for owner, attr, mine, _theirs in pieces:
            setattr(owner, attr, mine)
        brain.close()
    diffs = [a - b for a, b in zip(times[True], times[False], strict=True)]
    middle, interval = paired(diffs, 2000)
    emit(
        {
            "vault": str(args.vault),
            "swapped": args.swap,
            "here": summarise(times[True]),
            "other": summarise(times[False]),
            "diff_ms": middle,
            "diff_ci95": interval,
            "load": round((load + os.getloadavg()[0]) / 2, 2),
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
