"""Each question's best 50 as hybrid recall ranks them, with what every stage said of each, one
JSON line a question: what a second-pass ranker is fitted on (bench/rerank_fit.py).

    python -m bench.rank_features FILE --out OUT.jsonl [--cache-embeddings PATH] [--samples N]
    python -m bench.rank_features --compare OLD.jsonl NEW.jsonl   (top 10s, paired, by category)

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) and LongMemEval (Wu et al., ICLR 2025; MIT):
evaluation only. A line holds the question, its category, its gold dia_ids, and per hit (in
today's order) its gold key and its features (`--explain`'s per-retriever ranks and shares, the
priors' factors, relevance, the hit's score and its text's length and speaker).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.compare import paired_bootstrap, shipped_encoders
from bench.locomo import Results, _file_pool, _gold_key, _ingest, _vault
from bench.locomo_data import load
from bench.metrics import POOLED_CATEGORIES, score_question

DEPTH = 50
RETRIEVERS = ("text", "vector", "sparse")
PRIORS = ("time", "answer", "asks", "speaker", "name", "opens")


def features(hit: Any, body: str) -> dict[str, float]:
    """What the stages said of one hit, as numbers (a retriever that did not find it: 0)."""
    why = hit.explain or {}
    out: dict[str, float] = {}
    for name in RETRIEVERS:
        entry = why.get("retrievers", {}).get(name, {})
        place = entry.get("rank")
        out[f"{name}_rr"] = 1.0 / place if place else 0.0
        out[f"{name}_share"] = entry.get("share") or 0.0
        out[f"{name}_score"] = entry.get("score") or 0.0
        out[f"{name}_near"] = entry.get("neighbours") or 0.0
    out["fused"] = why.get("fused") or 0.0
    out["context"] = why.get("context") or 0.0
    out["status"] = why.get("prior", 1.0)
    for name in PRIORS:
        out[name] = float(why.get(name, 1.0) or 1.0)
    out["relevance"] = float(why.get("relevance", hit.relevance) or 0.0)
    out["score"] = hit.score
    out["chars"] = float(len(body))
    out["questions"] = float(body.count("?"))
    return out


def compare(old_path: Path, new_path: Path) -> None:
    """Two dumps' top 10s, question by question: each metric's change and its paired 95%
    interval, pooled (LoCoMo 1-4, or every type of a LongMemEval file) and by category."""
    old, new = _top10(old_path), _top10(new_path)
    if [c for c, _ in old] != [c for c, _ in new]:
        raise SystemExit("the dumps hold different questions")
    cats = sorted({c for c, _ in old})
    pooled = POOLED_CATEGORIES if max(cats) <= 5 else frozenset(cats)
    for name, pool in [("pooled", pooled), *((f"cat {c}", frozenset({c})) for c in cats)]:
        count = sum(c in pool for c, _ in old)
        print(f"{name} ({count})")
        for metric in ("hit@1", "hit@5", "hit@10", "ndcg@10", "mrr", "session_hit@5"):
            base = sum(s[metric] for c, s in old if c in pool) / count
            mean, low, high = paired_bootstrap(new, old, metric, categories=pool)
            change = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
            print(f"  {metric:<14}{base:.3f} -> {base + mean:.3f}  {change}")


def _top10(path: Path) -> list[tuple[int, dict[str, float]]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        found = [h["key"] for h in q["hits"][:10] if h["key"]]
        out.append((q["category"], score_question(found, frozenset(q["gold"]))))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path, nargs="?")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", type=Path, nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--cache-embeddings", type=Path)
    parser.add_argument("--samples", type=int, default=0)
    args = parser.parse_args(argv)
    if args.compare:
        compare(*args.compare)
        return 0
    if args.file is None or args.out is None:
        parser.error("FILE and --out are needed (or --compare OLD NEW)")
    embedder, terms = shipped_encoders(args.cache_embeddings)
    results = Results(["hybrid"], _file_pool(args.file))
    samples = load(args.file)[: args.samples or None]
    with args.out.open("w", encoding="utf-8") as out:
        for sample in samples:
            with _vault(embedder, sample.turns[0].created, terms) as (brain, clock):
                owner = _ingest(brain, clock, sample, results)
                speaker = {turn.dia_id: turn.speaker for turn in sample.turns}
                last = clock.now()
                for question in sample.questions:
                    clock.set(question.asked or last)
                    hits = brain.recall(question.question, k=DEPTH, explain=True)
                    rows = []
                    for hit in hits:
                        key = _gold_key(owner.get(hit.id), sample.sample_id)
                        body = (brain._context.caches.fulltext.stored(hit.id) or {}).get("body", "")
                        row = features(hit, body)
                        row["user"] = float(speaker.get(key or "", "") == "user")
                        rows.append({"key": key, "f": row})
                    line = {
                        "file": args.file.name,
                        "sample": sample.sample_id,
                        "question": question.question,
                        "category": question.category,
                        "gold": sorted(question.gold),
                        "hits": rows,
                    }
                    out.write(json.dumps(line) + "\n")
                clock.set(last)
            print(f"  {sample.sample_id}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
