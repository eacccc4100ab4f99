"""Questions that name a time against the rest, per config of a benchmark's report: issue 42's
check that the time prior is not tuned to one file's session dates (LoCoMo: Maharana et al.,
ACL 2024; LongMemEval: Wu et al., ICLR 2025; evaluation only).

    python -m bench.dated FILE REPORT.json

REPORT.json: the `--out` of bench.locomo or bench.rank_tune over FILE (its `questions` are in
the file's order). A question is dated when recall/when.py reads a time in it, asked at its own
`question_date` where the file gives one, else at its sample's last memory.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.locomo import POOLS
from bench.locomo_data import load
from brain._recall.when import parse_time

METRICS = ("hit@1", "hit@10", "ndcg@10")
Split = dict[str, dict[str, float]]


def asked_at(path: Path) -> list[tuple[str, datetime]]:
    """Each question of the file with the time it is asked at, in the report's order."""
    out = []
    for sample in load(path):
        last = max(turn.created for turn in sample.turns)
        out += [(q.question, q.asked or last) for q in sample.questions]
    return out


def split(
    questions: Sequence[tuple[str, datetime]],
    scored: Sequence[tuple[int, dict[str, float]]],
    pool: Iterable[int],
) -> Split:
    """Mean METRICS of the pooled questions that name a time ("dated") and of the rest, with
    their count (`n`), and `gap`, dated minus rest."""
    if len(questions) != len(scored):
        raise ValueError(f"{len(scored)} scored questions for {len(questions)} in the file")
    pooled = set(pool)
    parts: dict[str, list[dict[str, float]]] = {"dated": [], "rest": []}
    for (text, now), (category, scores) in zip(questions, scored, strict=True):
        if category in pooled:
            parts["dated" if parse_time(text, now) is not None else "rest"].append(scores)
    out: Split = {}
    for name, rows in parts.items():
        out[name] = {m: sum(r[m] for r in rows) / len(rows) if rows else 0.0 for m in METRICS}
        out[name]["n"] = len(rows)
    out["gap"] = {m: out["dated"][m] - out["rest"][m] for m in METRICS}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("report", type=Path)
    args = parser.parse_args(argv)
    try:
        report: dict[str, Any] = json.loads(args.report.read_text(encoding="utf-8"))
        _print(report, asked_at(args.file))
    except (OSError, ValueError, KeyError, TypeError) as err:  # JSONDecodeError is a ValueError
        parser.error(f"{args.report} against {args.file}: {err!r}")
    return 0


def _print(report: dict[str, Any], questions: Sequence[tuple[str, datetime]]) -> None:
    print(f"{'config':<16} {'dated (n)':>10} " + " ".join(f"{m:>22}" for m in METRICS))
    for name, config in report["configs"].items():
        pool = report["pool"]  # "locomo", "all" or the categories
        pool = POOLS[pool] if isinstance(pool, str) else pool
        parts = split(questions, [tuple(q) for q in config["questions"]], pool)
        cells = [
            f"{parts['dated'][m]:.3f} − {parts['rest'][m]:.3f} = {parts['gap'][m]:+.3f}"
            for m in METRICS
        ]
        print(f"{name:<16} {int(parts['dated']['n']):>10} " + " ".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    raise SystemExit(main())
