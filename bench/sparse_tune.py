"""How much the learned-sparse list should weigh in fusion, on the LoCoMo dev split only.

Each sample is ingested once (the protocol of bench/locomo.py); every variant of the sparse
weight and its neighbour blend then asks every question against the same vault:

    python -m bench.sparse_tune ../shared/bench/locomo-dev.json --out OUT.json \\
        [--cache-embeddings PATH]

OUT.json has the shape of bench/locomo.py's, one config per variant, so `bench.compare`'s
paired bootstrap applies between variants (`--baseline` against a bench/locomo.py run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench.compare import CachedEmbedder, compare
from bench.locomo import K, Results, _gold_key, _ingest, _vault, print_table
from bench.locomo_data import load
from bench.metrics import score_question
from brain._indexes.embedder import load_embedder
from brain._recall import pipeline, rank
from brain._settings import model_cache_dir

# name → (sparse weight, its neighbour blend); weight None: no sparse list at all.
VARIANTS: dict[str, tuple[float | None, float]] = {
    "off": (None, 0.0),
    "w1.0_b0": (1.0, 0.0),
    "w1.2_b0": (1.2, 0.0),
    "w1.5_b0": (1.5, 0.0),
    "w2.0_b0": (2.0, 0.0),
    "w1.5_b0.25": (1.5, 0.25),
}


@contextmanager
def _variant(weight: float | None, blend: float) -> Iterator[None]:
    saved_weights, saved_sparse = dict(rank.WEIGHTS), pipeline._sparse

    def sparse(*args: Any, **kwargs: Any) -> list[Any]:
        found = [] if weight is None else saved_sparse(*args, **kwargs)
        for retriever in found:
            retriever.weight = blend  # type: ignore[attr-defined]
        return found

    if weight is not None:
        rank.WEIGHTS["sparse"] = weight
    pipeline._sparse = sparse  # type: ignore[assignment]
    try:
        yield
    finally:
        rank.WEIGHTS.clear()
        rank.WEIGHTS.update(saved_weights)
        pipeline._sparse = saved_sparse  # type: ignore[assignment]


def _ask(results: Results, name: str, brain: Any, sample: Any, owner: dict[str, Any]) -> None:
    for question in sample.questions:
        t0 = time.perf_counter()
        hits = brain.recall(question.question, k=K, mode="hybrid")
        results.latency[name].append((time.perf_counter() - t0) * 1000)
        ranked = [_gold_key(owner.get(h.id), sample.sample_id) for h in hits]
        scores = score_question([d for d in ranked if d], question.gold)
        results.scores[name].append((question.category, scores))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache-embeddings", type=Path)
    parser.add_argument("--baseline", type=Path, help="a bench/locomo.py --out to compare with")
    args = parser.parse_args()
    embedder: Any = load_embedder("minilm", model_cache_dir(os.environ, Path.home()))
    if args.cache_embeddings:
        embedder = CachedEmbedder(embedder, args.cache_embeddings)
    results = Results(list(VARIANTS))
    for sample in load(args.file):
        with _vault(embedder, sample.turns[0].created) as (brain, clock):
            owner = _ingest(brain, clock, sample, results)
            for name, (weight, blend) in VARIANTS.items():
                with _variant(weight, blend):
                    _ask(results, name, brain, sample, owner)
        print(f"  {sample.sample_id}", file=sys.stderr)
    report = results.report()
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print_table(report)
    for name in VARIANTS:
        if name != "off":
            print(f"{name} against off (mean difference, 95% paired bootstrap):")
            print("\n".join(compare(report, report, name, "off")))
    if args.baseline:
        base = json.loads(args.baseline.read_text())
        for name in VARIANTS:
            print(f"{name} against the baseline's hybrid:")
            print("\n".join(compare(report, base, name, "hybrid")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
