"""Plain BM25 baseline on LoCoMo-format data (Maharana et al., ACL 2024).

Usage: ``python -m bench.bm25_baseline FILE [--k 10] [--json]``.

One index per sample over the turns' memory texts (``"<speaker>: <text>"``); tokens are
lowercase ASCII alphanumeric runs; Okapi BM25 with k1 = 1.5, b = 0.75 and the
non-negative Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``; a query term counts
once per occurrence in the query. Only turns sharing at least one term with the query
are returned (at most k, ties in turn order). Metrics come from :mod:`bench.metrics`;
category 5 is reported apart.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from bench.locomo_data import Sample, load
from bench.metrics import METRICS, Aggregate, aggregate, percentile, score_question

K1 = 1.5
B = 0.75
_TOKEN = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens."""
    return _TOKEN.findall(text.lower())


class BM25:
    """A minimal in-memory Okapi BM25 index over (doc_id, text) pairs."""

    def __init__(self, docs: Sequence[tuple[str, str]], k1: float = K1, b: float = B) -> None:
        self.k1 = k1
        self.b = b
        self.ids = [doc_id for doc_id, _ in docs]
        self.tfs = [Counter(tokenize(text)) for _, text in docs]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        n = len(docs)
        self.avgdl = (sum(self.lengths) / n) if n else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        self.idf = {term: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for term, d in df.items()}
        self.postings: dict[str, list[int]] = {}
        for index, tf in enumerate(self.tfs):
            for term in tf:
                self.postings.setdefault(term, []).append(index)

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """Top-k (doc_id, score), best first; docs matching no query term left out."""
        scores: dict[int, float] = {}
        for term in tokenize(query):
            idf = self.idf.get(term)
            if idf is None:
                continue
            for index in self.postings[term]:
                freq = self.tfs[index][term]
                norm = 1.0 - self.b + self.b * self.lengths[index] / self.avgdl
                gain = idf * freq * (self.k1 + 1.0) / (freq + self.k1 * norm)
                scores[index] = scores.get(index, 0.0) + gain
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
        return [(self.ids[index], score) for index, score in ranked]


def run(samples: Sequence[Sample], k: int = 10) -> dict[str, object]:
    """Score BM25 on every question of every sample; returns metrics plus timings."""
    per_question: list[tuple[int, dict[str, float]]] = []
    latencies_ms: list[float] = []
    ingest_seconds = 0.0
    memories = 0
    for sample in samples:
        start = time.perf_counter()
        index = BM25([(turn.dia_id, turn.memory_text) for turn in sample.turns])
        ingest_seconds += time.perf_counter() - start
        memories += len(sample.turns)
        for question in sample.questions:
            start = time.perf_counter()
            hits = index.search(question.question, k)
            latencies_ms.append((time.perf_counter() - start) * 1000.0)
            ranked = [dia_id for dia_id, _ in hits]
            per_question.append((question.category, score_question(ranked, question.gold)))
    result: Aggregate = aggregate(per_question)
    return {
        **result,
        "samples": len(samples),
        "memories": memories,
        "skipped_questions": sum(s.skipped_questions for s in samples),
        "latency_ms": {
            "p50": percentile(latencies_ms, 50) if latencies_ms else 0.0,
            "p95": percentile(latencies_ms, 95) if latencies_ms else 0.0,
        },
        "ingest_per_s": memories / ingest_seconds if ingest_seconds > 0 else 0.0,
    }


def _print_table(report: dict[str, object]) -> None:
    pooled = report["pooled"]
    by_category = report["by_category"]
    count = report["count"]
    assert isinstance(pooled, dict) and isinstance(by_category, dict) and isinstance(count, dict)
    print(f"{'':>8} {'n':>5} " + " ".join(f"{name:>13}" for name in METRICS))
    rows = [("pooled", pooled, count["pooled"])]
    rows += [(f"cat {c}", by_category[c], count[c]) for c in by_category]
    for label, means, n in rows:
        cells = " ".join(f"{means.get(name, float('nan')):>13.3f}" for name in METRICS)
        print(f"{label:>8} {n:>5} {cells}")
    latency = report["latency_ms"]
    assert isinstance(latency, dict)
    print(
        f"samples {report['samples']}, memories {report['memories']}, "
        f"skipped questions (no evidence) {report['skipped_questions']}; "
        f"recall latency p50 {latency['p50']:.3f} ms, p95 {latency['p95']:.3f} ms; "
        f"ingest {report['ingest_per_s']:.0f} memories/s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench.bm25_baseline", description=__doc__)
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--k", type=int, default=10, help="results per query (default 10)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    try:
        samples = load(args.file)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    report = run(samples, k=args.k)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
