"""The retrieval benchmark on LoCoMo-format data (Maharana et al., ACL 2024; CC BY-NC 4.0).

Follows ../shared/bench/README.md exactly: one fresh vault per sample, every dialog turn one
memory ("<speaker>: <text>", created at its session's date, tagged with its dia_id), every
question of categories 1-4 asked verbatim (category 5 reported apart), metrics from
bench/metrics.py. Ingestion goes through the public core API (`open_vault`, `remember`).
Turns of a session are written a millisecond apart, in order, as a live conversation would be.

    python -m bench.locomo FILE --out OUT.json [--configs bm25,text,vector,sparse,hybrid,...]
        [--baseline OLD.json] [--one-vault nodes|placed] [--cache-embeddings PATH]

`--baseline`: a paired bootstrap (95%) of every metric against the same config of OLD.json.
Every config is also compared with `bm25` of the same run when it was run: plain BM25
(bench/bm25_baseline.py) over the same memory texts, one index per sample.
`--one-vault`: every sample in one vault, each under a node of its own (`nodes`) or wherever
brain places it (`placed`); every question is asked against the whole vault.

A question is asked at its own date where the file gives one (LongMemEval's `question_date`:
"last week" is the week before it), else at the last memory's. A memory over the vault's size
limit (`max_text_bytes`) is clipped to it and counted (`clipped` in the report), never an
abort. Categories pooled: 1-4 (LoCoMo), or all of them when the file's questions carry a
`question_type` (LongMemEval's six types; `--pool` says otherwise). LongMemEval's own retrieval
metrics (Wu et al., ICLR 2025: recall_any, recall_all and ndcg_any @5, @10, per message and
session) are reported beside the protocol's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.bm25_baseline import BM25
from bench.compare import CachedEmbedder, CachedSparse, compare
from bench.locomo_data import Question, Sample, load
from bench.metrics import (
    LME_METRICS,
    METRICS,
    POOLED_CATEGORIES,
    aggregate,
    percentile,
    score_longmemeval,
    score_question,
)
from brain import open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import Embedder, load_embedder
from brain._indexes.sparse import load_sparse
from brain._settings import model_cache_dir
from brain._vault.template import init_vault

# name → recall options
CONFIGS: dict[str, dict[str, Any]] = {
    "bm25": {"mode": "bm25"},  # plain BM25 of the same texts, outside brain (the baseline)
    "text": {"mode": "text"},
    "vector": {"mode": "vector"},
    "sparse": {"mode": "sparse"},
    "hybrid": {"mode": "hybrid"},
    "hybrid_scope": {"mode": "hybrid", "scope": "auto"},
}
K = 10
ONE_VAULT = ("nodes", "placed")
POOLS = {"locomo": POOLED_CATEGORIES, "all": frozenset(range(1, 100))}


class Results:
    """Per-question scores and latencies of every config, the ingest rate, the memories clipped."""

    def __init__(self, configs: Sequence[str], pool: frozenset[int] = POOLED_CATEGORIES) -> None:
        self.configs = list(configs)
        self.pool = pool
        self.scores: dict[str, list[tuple[int, dict[str, float]]]] = {c: [] for c in configs}
        self.latency: dict[str, list[float]] = {c: [] for c in configs}
        self.ingested = 0
        self.ingest_seconds = 0.0
        self.clipped = 0
        self.texts: dict[str, list[tuple[str, str]]] = {}  # per sample: (dia_id, text as kept)

    def ask(
        self, brain: Any, clock: FixedClock, sample: Sample, owner: dict[str, tuple[str, str]]
    ) -> None:
        """Ask every question of the sample in every config, each at its own date where it has
        one; `owner`: note id → (sample, dia)."""
        last = clock.now()
        for name in self.configs:
            plain = BM25(self.texts[sample.sample_id]) if name == "bm25" else None
            for question in sample.questions:
                clock.set(question.asked or last)
                t0 = time.perf_counter()
                if plain is not None:
                    ranked: list[str | None] = [d for d, _ in plain.search(question.question, K)]
                else:
                    hits = _recall(brain, question.question, CONFIGS[name])
                    ranked = [_gold_key(owner.get(h.id), sample.sample_id) for h in hits]
                self.latency[name].append((time.perf_counter() - t0) * 1000)
                self.scores[name].append((question.category, _scored(ranked, question)))
        clock.set(last)

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.configs:
            agg = aggregate(self.scores[name], self.pool)
            out[name] = {
                "pooled": agg["pooled"],
                "by_category": agg["by_category"],
                "latency_ms": {
                    "p50": round(percentile(self.latency[name], 50), 2),
                    "p95": round(percentile(self.latency[name], 95), 2),
                },
                "ingest_per_s": round(self.ingested / self.ingest_seconds, 1),
                "questions": self.scores[name],
            }
        pool = sorted(self.pool) if self.pool != POOLS["all"] else "all"
        return {"configs": out, "clipped": self.clipped, "pool": pool}


def _scored(ranked: Sequence[str | None], question: Question) -> dict[str, float]:
    found = [d for d in ranked if d]
    return {**score_question(found, question.gold), **score_longmemeval(found, question.gold)}


@contextmanager
def _vault(
    embedder: Embedder, start: Any, sparse: Any = "settings"
) -> Iterator[tuple[Any, FixedClock]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        clock = FixedClock(start)
        init_vault(root, clock.now())
        brain = open_vault(root, clock=clock, embedder=embedder, sparse=sparse)
        try:
            yield brain, clock
        finally:
            brain.close()


def _ingest(
    brain: Any, clock: FixedClock, sample: Sample, results: Results, node: str | None = None
) -> dict[str, tuple[str, str]]:
    owner: dict[str, tuple[str, str]] = {}
    limit = brain.settings.max_text_bytes
    kept = results.texts.setdefault(sample.sample_id, [])
    start = time.perf_counter()
    with brain.bulk():  # one lock hold; node indexes written once at the end
        for i, turn in enumerate(sample.turns):
            clock.set(turn.created + timedelta(milliseconds=i))
            text = clip(turn.memory_text, limit)
            results.clipped += text != turn.memory_text
            note = brain.remember(text, tags=[turn.dia_id], node=node)
            owner[note.id] = (sample.sample_id, turn.dia_id)
            kept.append((turn.dia_id, text))
    brain._context.flush()  # embedding and indexing are part of ingesting
    results.ingest_seconds += time.perf_counter() - start
    results.ingested += len(sample.turns)
    return owner


def clip(text: str, limit: int) -> str:
    """The text cut to at most `limit` bytes of UTF-8, at a character's boundary."""
    data = text.encode()
    return text if len(data) <= limit else data[:limit].decode(errors="ignore")


def run(
    samples: Sequence[Sample],
    configs: Sequence[str],
    embedder: Embedder,
    pool: frozenset[int] = POOLED_CATEGORIES,
    sparse: Any = "settings",
) -> dict[str, Any]:
    """One fresh vault per sample: the protocol."""
    results = Results(configs, pool)
    for sample in samples:
        with _vault(embedder, sample.turns[0].created, sparse) as (brain, clock):
            owner = _ingest(brain, clock, sample, results)
            results.ask(brain, clock, sample, owner)
        print(f"  {sample.sample_id}: {len(sample.turns)} memories", file=sys.stderr)
    return results.report()


def run_one_vault(
    samples: Sequence[Sample],
    configs: Sequence[str],
    embedder: Embedder,
    variant: str,
    pool: frozenset[int] = POOLED_CATEGORIES,
    sparse: Any = "settings",
) -> dict[str, Any]:
    """Every sample in one vault: under `Knowledge/<sample id>` (`nodes`) or wherever
    brain places each memory (`placed`); a hit from another sample is never gold."""
    results = Results(configs, pool)
    owner: dict[str, tuple[str, str]] = {}
    with _vault(embedder, samples[0].turns[0].created, sparse) as (brain, clock):
        for sample in samples:
            node = f"Knowledge/{sample.sample_id}" if variant == "nodes" else None
            owner.update(_ingest(brain, clock, sample, results, node))
            print(f"  {sample.sample_id}: {len(sample.turns)} memories", file=sys.stderr)
        for sample in samples:
            results.ask(brain, clock, sample, owner)
    return results.report()


def _recall(brain: Any, question: str, options: dict[str, Any]) -> Any:
    try:
        return brain.recall(question, k=K, **options)
    except TypeError:
        # `scope` not supported by this build: plain recall.
        return brain.recall(question, k=K, mode=options["mode"])


def _gold_key(found: tuple[str, str] | None, sample_id: str) -> str | None:
    """The dia_id of a hit of this sample; a hit of another sample can never be gold."""
    if found is None:
        return None
    return found[1] if found[0] == sample_id else f"{found[0]}/{found[1]}"


def print_table(report: dict[str, Any]) -> None:
    for metrics in (METRICS, LME_METRICS[:6], LME_METRICS[6:]):
        print(f"{'config':<14}" + "".join(f"{m.split('_', 1)[-1]:>15}" for m in metrics), end="")
        print(f"{'p50 ms':>9}{'p95 ms':>9}" if metrics is METRICS else f"  ({metrics[0][:4]})")
        for name, data in report["configs"].items():
            row = f"{name:<14}" + "".join(f"{data['pooled'].get(m, 0):15.3f}" for m in metrics)
            if metrics is METRICS:
                row += f"{data['latency_ms']['p50']:9.1f}{data['latency_ms']['p95']:9.1f}"
            print(row)
            for category, values in data["by_category"].items():
                row = f"{'  cat ' + category:<14}"
                print(row + "".join(f"{values.get(m, 0):15.3f}" for m in metrics))
    print(f"ingest: {next(iter(report['configs'].values()))['ingest_per_s']} memories/s")
    print(f"pooled: categories {report.get('pool')}; memories clipped: {report.get('clipped', 0)}")


def print_comparison(report: dict[str, Any], baseline: dict[str, Any] | None) -> None:
    """Each config against the same config of `baseline`, and against this run's bm25."""
    pool = _pool_of(report)
    for name in report["configs"]:
        if baseline is not None and name in baseline["configs"]:
            print(f"{name} against the baseline (mean difference, 95% paired bootstrap):")
            print("\n".join(compare(report, baseline, name, name, pool)))
        if name != "bm25" and "bm25" in report["configs"]:
            print(f"{name} against plain BM25 of this run (95% paired bootstrap):")
            print("\n".join(compare(report, report, name, "bm25", pool)))


def _pool_of(report: dict[str, Any]) -> frozenset[int]:
    pool = report.get("pool", sorted(POOLED_CATEGORIES))
    return POOLS["all"] if pool == "all" else frozenset(pool)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON results")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated configs")
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    parser.add_argument("--samples", type=int, default=0, help="only the first N samples")
    parser.add_argument("--baseline", type=Path, help="an earlier --out file to compare with")
    parser.add_argument("--one-vault", choices=ONE_VAULT, help="all samples in one vault")
    parser.add_argument(
        "--cache-embeddings", type=Path, help="keep vectors by text here between runs"
    )
    parser.add_argument(
        "--sparse-int8",
        action="store_true",
        help="SPLADE with int8 weights (brain._indexes.sparse)",
    )
    parser.add_argument(
        "--pool", choices=tuple(POOLS), help="categories pooled (default: by the file's kind)"
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="every hit shown: the ranking alone, without the relevance floor's empty answers",
    )
    args = parser.parse_args(argv)
    if args.no_floor:
        from brain._recall import relevance

        relevance.FLOOR = 0.0
    if args.sparse_int8:
        from brain._indexes import sparse as sparse_module

        sparse_module.INT8 = True
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown config(s) {unknown}; allowed: {', '.join(CONFIGS)}")
    try:
        samples = load(args.file)
        baseline = json.loads(args.baseline.read_text()) if args.baseline else None
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.samples:
        samples = samples[: args.samples]
    cache = model_cache_dir(os.environ, Path.home())
    embedder = load_embedder(args.embedder, cache)
    assert embedder is not None
    terms: Any = "settings"
    if args.cache_embeddings:
        embedder = CachedEmbedder(embedder, args.cache_embeddings)
        if args.embedder == "minilm":  # the vault's default beside the real model
            terms = CachedSparse(load_sparse("splade", cache), args.cache_embeddings)
    pool = POOLS[args.pool] if args.pool else _file_pool(args.file)
    if args.one_vault:
        report = run_one_vault(samples, configs, embedder, args.one_vault, pool, terms)
    else:
        report = run(samples, configs, embedder, pool, terms)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print_table(report)
    if baseline is not None or "bm25" in configs:
        try:
            print_comparison(report, baseline)
        except ValueError as exc:
            print(f"error: baseline {args.baseline}: {exc}", file=sys.stderr)
            return 2
    return 0


def _file_pool(path: Path) -> frozenset[int]:
    """Every category for a file whose questions carry LongMemEval's `question_type`."""
    data = json.loads(path.read_text(encoding="utf-8"))
    typed = any("question_type" in q for sample in data for q in sample.get("qa", []))
    return POOLS["all"] if typed else POOLED_CATEGORIES


if __name__ == "__main__":
    raise SystemExit(main())
