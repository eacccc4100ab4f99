"""Recall over imported conversations: each session of a LoCoMo-format file stored as one
transcript (`brain import`'s path: a recall note, each turn a section), the questions asked as
bench/locomo.py asks them. Measurement only; not the shared protocol (there each turn is one
memory, `"<speaker>: <text>"`), so the figures say how the product's import path ranks the same
conversations, beside the protocol's.

    python -m bench.transcripts FILE --out OUT.json [--configs bm25,hybrid] [--samples N]
        [--cache-embeddings PATH]

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) and LongMemEval (Wu et al., ICLR 2025; MIT):
evaluation only. A hit is a section (`<note id>#<n>`, the n-th turn of its session) or a
transcript's own object (its title and summary, never gold).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.compare import paired_bootstrap, shipped_encoders
from bench.locomo import CONFIGS, POOLS, Results, _file_pool, _vault, print_table
from bench.locomo_data import Sample, load
from brain._ingest.transcripts import Transcript, Turn
from brain._sources.conversations import store_transcripts


def imported(brain: Any, clock: Any, sample: Sample, results: Results) -> dict[str, Any]:
    """The sample's sessions as transcripts, imported in one pass as an export is (each dated
    by its session); section id → (sample, dia_id). The bm25 config reads the turns as the
    protocol writes them."""
    sessions: dict[int, list[Any]] = {}
    for turn in sample.turns:
        sessions.setdefault(turn.session, []).append(turn)
    results.texts[sample.sample_id] = [(t.dia_id, t.memory_text) for t in sample.turns]
    chats = []
    for number, turns in sessions.items():
        when = turns[0].created.isoformat().replace("+00:00", "Z")
        said = tuple(Turn(role=t.speaker, content=t.text) for t in turns)
        chats.append(
            Transcript(f"{sample.sample_id}-{number}", f"Session {number}", "bench", when, said)
        )
    start = time.perf_counter()
    clock.set(sample.turns[-1].created)
    added = store_transcripts(brain._context, chats, "bench").added
    brain._context.flush()
    results.ingest_seconds += time.perf_counter() - start
    results.ingested += len(sample.turns)
    owner: dict[str, tuple[str, str]] = {}
    for note, turns in zip(added, sessions.values(), strict=True):
        for n, turn in enumerate(turns):
            owner[f"{note}#{n}"] = (sample.sample_id, turn.dia_id)
    return owner


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--configs", default="bm25,hybrid")
    parser.add_argument("--samples", type=int, default=0)
    parser.add_argument("--cache-embeddings", type=Path)
    parser.add_argument("--baseline", type=Path, help="bench.locomo's --out of the same file")
    args = parser.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configs: {', '.join(unknown)}")
    embedder, terms = shipped_encoders(args.cache_embeddings)
    results = Results(configs, _file_pool(args.file))
    for sample in load(args.file)[: args.samples or None]:
        with _vault(embedder, sample.turns[0].created, terms) as (brain, clock):
            owner = imported(brain, clock, sample, results)
            results.ask(brain, clock, sample, owner)
        print(f"  {sample.sample_id}: {len(sample.turns)} turns", file=sys.stderr)
    report = results.report()
    args.out.write_text(json.dumps(report), encoding="utf-8")
    print_table(report)
    if args.baseline:
        base = json.loads(args.baseline.read_text(encoding="utf-8"))["configs"]
        for name in configs:
            if name not in base:
                continue
            new, old = report["configs"][name]["questions"], base[name]["questions"]
            pool = POOLS["all"] if report["pool"] == "all" else frozenset(report["pool"])
            print(f"{name}: imported transcripts − turns as memories (95% paired)")
            for metric in ("hit@1", "hit@10", "ndcg@10", "session_hit@5"):
                mean, low, high = paired_bootstrap(new, old, metric, categories=pool)
                print(f"  {metric:<14}{mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
