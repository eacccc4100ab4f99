"""The retrieval benchmark on LoCoMo-format data (Maharana et al., ACL 2024; CC BY-NC 4.0).

Follows ../shared/bench/README.md exactly: one fresh vault per sample, every dialog turn one
memory ("<speaker>: <text>", created at its session's date, tagged with its dia_id), every
question of categories 1-4 asked verbatim (category 5 reported apart), metrics from
bench/metrics.py. Ingestion goes through the public core API (`open_vault`, `remember`).
Turns of a session are written a millisecond apart, in order, as a live conversation would be.

    python -m bench.locomo FILE --out OUT.json [--configs text,vector,sparse,hybrid,hybrid_scope]
        [--baseline OLD.json] [--one-vault nodes|placed] [--cache-embeddings PATH]

`--baseline`: a paired bootstrap (95%) of every metric against the same config of OLD.json.
`--one-vault`: every sample in one vault, each under a node of its own (`nodes`) or wherever
brain places it (`placed`); every question is asked against the whole vault.
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

from bench.compare import CachedEmbedder, compare
from bench.locomo_data import Sample, load
from bench.metrics import METRICS, aggregate, percentile, score_question
from brain import open_vault
from brain.clock import FixedClock
from brain.indexes.embedder import Embedder, load_embedder
from brain.settings import model_cache_dir
from brain.vault.template import init_vault

# name → recall options
CONFIGS: dict[str, dict[str, Any]] = {
    "text": {"mode": "text"},
    "vector": {"mode": "vector"},
    "sparse": {"mode": "sparse"},
    "hybrid": {"mode": "hybrid"},
    "hybrid_scope": {"mode": "hybrid", "scope": "auto"},
}
K = 10
ONE_VAULT = ("nodes", "placed")


class Results:
    """Per-question scores and latencies of every config, and the ingest rate."""

    def __init__(self, configs: Sequence[str]) -> None:
        self.configs = list(configs)
        self.scores: dict[str, list[tuple[int, dict[str, float]]]] = {c: [] for c in configs}
        self.latency: dict[str, list[float]] = {c: [] for c in configs}
        self.ingested = 0
        self.ingest_seconds = 0.0

    def ask(self, brain: Any, sample: Sample, owner: dict[str, tuple[str, str]]) -> None:
        """Ask every question of the sample in every config; `owner`: note id → (sample, dia)."""
        for name in self.configs:
            for question in sample.questions:
                t0 = time.perf_counter()
                hits = _recall(brain, question.question, CONFIGS[name])
                self.latency[name].append((time.perf_counter() - t0) * 1000)
                ranked = [_gold_key(owner.get(h.id), sample.sample_id) for h in hits]
                scores = score_question([d for d in ranked if d], question.gold)
                self.scores[name].append((question.category, scores))

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.configs:
            agg = aggregate(self.scores[name])
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
        return {"configs": out}


@contextmanager
def _vault(embedder: Embedder, start: Any) -> Iterator[tuple[Any, FixedClock]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        clock = FixedClock(start)
        init_vault(root, clock.now())
        brain = open_vault(root, clock=clock, embedder=embedder)
        try:
            yield brain, clock
        finally:
            brain.close()


def _ingest(
    brain: Any, clock: FixedClock, sample: Sample, results: Results, node: str | None = None
) -> dict[str, tuple[str, str]]:
    owner: dict[str, tuple[str, str]] = {}
    start = time.perf_counter()
    with brain.bulk():  # one lock hold; node indexes written once at the end
        for i, turn in enumerate(sample.turns):
            clock.set(turn.created + timedelta(milliseconds=i))
            note = brain.remember(turn.memory_text, tags=[turn.dia_id], node=node)
            owner[note.id] = (sample.sample_id, turn.dia_id)
    brain.flush()  # embedding and indexing are part of ingesting
    results.ingest_seconds += time.perf_counter() - start
    results.ingested += len(sample.turns)
    return owner


def run(samples: Sequence[Sample], configs: Sequence[str], embedder: Embedder) -> dict[str, Any]:
    """One fresh vault per sample: the protocol."""
    results = Results(configs)
    for sample in samples:
        with _vault(embedder, sample.turns[0].created) as (brain, clock):
            owner = _ingest(brain, clock, sample, results)
            results.ask(brain, sample, owner)
        print(f"  {sample.sample_id}: {len(sample.turns)} memories", file=sys.stderr)
    return results.report()


def run_one_vault(
    samples: Sequence[Sample], configs: Sequence[str], embedder: Embedder, variant: str
) -> dict[str, Any]:
    """Every sample in one vault: under `Knowledge/<sample id>` (`nodes`) or wherever
    brain places each memory (`placed`); a hit from another sample is never gold."""
    results = Results(configs)
    owner: dict[str, tuple[str, str]] = {}
    with _vault(embedder, samples[0].turns[0].created) as (brain, clock):
        for sample in samples:
            node = f"Knowledge/{sample.sample_id}" if variant == "nodes" else None
            owner.update(_ingest(brain, clock, sample, results, node))
            print(f"  {sample.sample_id}: {len(sample.turns)} memories", file=sys.stderr)
        for sample in samples:
            results.ask(brain, sample, owner)
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
    head = f"{'config':<14}" + "".join(f"{m:>15}" for m in METRICS) + f"{'p50 ms':>9}{'p95 ms':>9}"
    print(head)
    for name, data in report["configs"].items():
        pooled = data["pooled"]
        row = f"{name:<14}" + "".join(f"{pooled.get(m, 0):15.3f}" for m in METRICS)
        row += f"{data['latency_ms']['p50']:9.1f}{data['latency_ms']['p95']:9.1f}"
        print(row)
        for category, values in data["by_category"].items():
            row = f"{'  cat ' + category:<14}"
            row += "".join(f"{values.get(m, 0):15.3f}" for m in METRICS)
            print(row)
    print(f"ingest: {next(iter(report['configs'].values()))['ingest_per_s']} memories/s")


def print_comparison(report: dict[str, Any], baseline: dict[str, Any]) -> None:
    for name in report["configs"]:
        if name not in baseline["configs"]:
            continue
        print(f"{name} against the baseline (mean difference, 95% paired bootstrap):")
        print("\n".join(compare(report, baseline, name, name)))


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
        "--sparse-int8", action="store_true", help="SPLADE with int8 weights (brain.indexes.sparse)"
    )
    args = parser.parse_args(argv)
    if args.sparse_int8:
        from brain.indexes import sparse

        sparse.INT8 = True
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
    embedder = load_embedder(args.embedder, model_cache_dir(os.environ, Path.home()))
    assert embedder is not None
    if args.cache_embeddings:
        embedder = CachedEmbedder(embedder, args.cache_embeddings)
    if args.one_vault:
        report = run_one_vault(samples, configs, embedder, args.one_vault)
    else:
        report = run(samples, configs, embedder)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    print_table(report)
    if baseline is not None:
        try:
            print_comparison(report, baseline)
        except ValueError as exc:
            print(f"error: baseline {args.baseline}: {exc}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
