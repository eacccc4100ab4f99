"""Tune recall fusion on the LoCoMo dev split only (Maharana et al., ACL 2024; eval only).

Collects each retriever's top candidates per question once, then scores fusion variants
offline, so a grid of settings takes seconds:

    python -m bench.tune FILE --cache bench/out/candidates.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.locomo_data import load
from bench.metrics import aggregate, score_question
from brain import open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import load_embedder
from brain._indexes.fulltext import Filters
from brain._recall.rank import VectorRetriever
from brain._settings import model_cache_dir
from brain._vault.template import init_vault

DEPTH = 100


def collect(path: Path) -> list[dict[str, Any]]:
    """Per question: category, gold, and (dia_id, score) lists from text and vector search."""
    embedder = load_embedder("minilm", model_cache_dir(os.environ, Path.home()))
    assert embedder is not None
    out = []
    for sample in load(path):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            clock = FixedClock(sample.turns[0].created)
            init_vault(root, clock.now())
            brain = open_vault(root, clock=clock, embedder=embedder)
            for turn in sample.turns:
                clock.set(turn.created)
                brain.remember(turn.memory_text, tags=[turn.dia_id])
            brain._context.flush()
            rows = {r.id: r for r in brain._context.caches.catalog.select()}
            dia = {
                oid: next((t for t in r.tags if t.startswith("D")), None) for oid, r in rows.items()
            }
            vector = VectorRetriever(brain._context.caches, embedder)
            filters = Filters(partition="main")
            for q in sample.questions:
                text = brain._context.caches.fulltext.search(q.question, DEPTH, filters)
                vec = vector.search(q.question, DEPTH, filters)
                out.append(
                    {
                        "category": q.category,
                        "gold": sorted(q.gold),
                        "text": [(dia[o], s) for o, s in text if dia.get(o)],
                        "vector": [(dia[o], s) for o, s in vec if dia.get(o)],
                    }
                )
            brain.close()
        print(f"  {sample.sample_id}", file=sys.stderr)
    return out


def fuse(q: dict[str, Any], k: float, wt: float, wv: float, depth: int) -> list[str]:
    scores: dict[str, float] = {}
    for name, weight in (("text", wt), ("vector", wv)):
        for rank, (d, _s) in enumerate(q[name][:depth], 1):
            scores[d] = scores.get(d, 0.0) + weight / (k + rank)
    return [d for d, _ in sorted(scores.items(), key=lambda x: -x[1])]


def evaluate(questions: Sequence[dict[str, Any]], ranker: Any) -> dict[str, float]:
    scored = [
        (q["category"], score_question(ranker(q)[:10], frozenset(q["gold"]))) for q in questions
    ]
    return aggregate(scored)["pooled"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--cache", type=Path, default=Path("bench/out/candidates.json"))
    args = parser.parse_args()
    if not args.cache.exists():
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        args.cache.write_text(json.dumps(collect(args.file)))
    questions = json.loads(args.cache.read_text())
    print(
        f"{'variant':<34}{'hit@5':>8}{'hit@10':>8}{'rall@10':>9}{'ndcg@10':>9}{'mrr':>7}{'sess@5':>8}"
    )

    def show(name: str, ranker: Any) -> None:
        p = evaluate(questions, ranker)
        print(
            f"{name:<34}{p['hit@5']:8.3f}{p['hit@10']:8.3f}{p['recall_all@10']:9.3f}"
            f"{p['ndcg@10']:9.3f}{p['mrr']:7.3f}{p['session_hit@5']:8.3f}"
        )

    show("text", lambda q: [d for d, _ in q["text"]])
    show("vector", lambda q: [d for d, _ in q["vector"]])
    for k in (5, 20, 60):
        for wt, wv in ((1, 1), (0.7, 1), (1, 0.7), (0.5, 1)):
            for depth in (20, 50, 100):
                show(
                    f"rrf k={k} wt={wt} wv={wv} d={depth}",
                    lambda q, k=k, wt=wt, wv=wv, depth=depth: fuse(q, k, wt, wv, depth),
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
