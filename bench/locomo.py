"""The retrieval benchmark on LoCoMo-format data (Maharana et al., ACL 2024; CC BY-NC 4.0).

Follows ../shared/bench/README.md exactly: one fresh vault per sample, every dialog turn one
memory ("<speaker>: <text>", created at its session's date, tagged with its dia_id), every
question of categories 1-4 asked verbatim (category 5 reported apart), metrics from
bench/metrics.py. Ingestion goes through the public core API (`open_vault`, `remember`).

    python -m bench.locomo FILE --out OUT.json [--configs text,vector,hybrid,hybrid_scope]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.locomo_data import Sample, load
from bench.metrics import aggregate, percentile, score_question
from brain import open_vault
from brain.clock import FixedClock
from brain.indexes.embedder import Embedder, load_embedder
from brain.settings import model_cache_dir
from brain.vault.template import init_vault

# name → recall options
CONFIGS: dict[str, dict[str, Any]] = {
    "text": {"mode": "text"},
    "vector": {"mode": "vector"},
    "hybrid": {"mode": "hybrid"},
    "hybrid_scope": {"mode": "hybrid", "scope": "auto"},
}
K = 10


def run(samples: Sequence[Sample], configs: Sequence[str], embedder: Embedder) -> dict[str, Any]:
    per_config: dict[str, list[tuple[int, dict[str, float]]]] = {c: [] for c in configs}
    latency: dict[str, list[float]] = {c: [] for c in configs}
    ingested, ingest_seconds = 0, 0.0
    for sample in samples:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            clock = FixedClock(sample.turns[0].created)
            init_vault(root, clock.now())
            brain = open_vault(root, clock=clock, embedder=embedder)
            start = time.perf_counter()
            with brain.bulk():  # one lock hold; node indexes written once at the end
                for turn in sample.turns:
                    clock.set(turn.created)
                    brain.remember(turn.memory_text, tags=[turn.dia_id])
            brain.flush()  # embedding and indexing are part of ingesting
            ingest_seconds += time.perf_counter() - start
            ingested += len(sample.turns)
            for name in configs:
                options = CONFIGS[name]
                for question in sample.questions:
                    t0 = time.perf_counter()
                    hits = _recall(brain, question.question, options)
                    latency[name].append((time.perf_counter() - t0) * 1000)
                    ranked = [_dia_id(h.tags) for h in hits]
                    scores = score_question([d for d in ranked if d], question.gold)
                    per_config[name].append((question.category, scores))
            brain.close()
        print(f"  {sample.sample_id}: {len(sample.turns)} memories", file=sys.stderr)
    out: dict[str, Any] = {}
    for name in configs:
        agg = aggregate(per_config[name])
        out[name] = {
            "pooled": agg["pooled"],
            "by_category": agg["by_category"],
            "latency_ms": {
                "p50": round(percentile(latency[name], 50), 2),
                "p95": round(percentile(latency[name], 95), 2),
            },
            "ingest_per_s": round(ingested / ingest_seconds, 1),
        }
    return {"configs": out}


def _recall(brain: Any, question: str, options: dict[str, Any]) -> Any:
    try:
        return brain.recall(question, k=K, **options)
    except TypeError:
        # `scope` not supported by this build: plain recall.
        return brain.recall(question, k=K, mode=options["mode"])


def _dia_id(tags: Sequence[str]) -> str | None:
    return next((t for t in tags if t.startswith("D") and ":" in t), None)


METRICS = ("hit@1", "hit@5", "hit@10", "recall_all@10", "ndcg@10", "mrr", "session_hit@5")


def print_table(report: dict[str, Any]) -> None:
    head = f"{'config':<14}" + "".join(f"{m:>15}" for m in METRICS) + f"{'p50 ms':>9}{'p95 ms':>9}"
    print(head)
    for name, data in report["configs"].items():
        pooled = data["pooled"]
        row = f"{name:<14}" + "".join(f"{pooled.get(m, 0):15.3f}" for m in METRICS)
        row += f"{data['latency_ms']['p50']:9.1f}{data['latency_ms']['p95']:9.1f}"
        print(row)
    print(f"ingest: {next(iter(report['configs'].values()))['ingest_per_s']} memories/s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON results")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configs")
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    parser.add_argument("--samples", type=int, default=0, help="only the first N samples")
    args = parser.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown config(s) {unknown}; allowed: {', '.join(CONFIGS)}")
    try:
        samples = load(args.file)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.samples:
        samples = samples[: args.samples]
    import os

    embedder = load_embedder(args.embedder, model_cache_dir(os.environ, Path.home()))
    assert embedder is not None
    report = run(samples, configs, embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print_table(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
