"""Does encoding a memory together with the memory before it rank better than today's hybrid
recall? Offline, over dumps of today's best 50 (bench/rank_features.py), measurement only.

    python -m bench.pairs DUMP DATA [DUMP DATA ...] --cache PATH [--variants a,b] [--cost N]

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) and LongMemEval (Wu et al., ICLR 2025; MIT):
evaluation only. For each question, each of today's best DEPTH hits is encoded alone
("<speaker>: <text>", the memory as bench/locomo.py writes it) and as a pair with the memory
before it in the same session ("<previous>\\n<this>"; the first turn of a session has none, its
pair is itself), with brain's shipped MiniLM (ONNX); the question too. Each variant reorders
those DEPTH hits (the rest stay as they were) and is compared with today's order on the top 10:
every metric's paired bootstrap 95% interval (bench/compare.py), pooled (LoCoMo 1-4; every
LongMemEval type) and by category. Vectors are kept by text hash in `--cache` (reruns embed
nothing). `--cost N`: the median ms to encode one question's DEPTH pairs, over N questions a
file, uncached, and the ms a memory to encode it alone or as a pair in bulk (an ingest's cost).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.compare import CachedEmbedder, paired_bootstrap
from bench.locomo_data import load
from bench.metrics import POOLED_CATEGORIES, score_question
from brain._indexes.embedder import load_embedder
from brain._settings import model_cache_dir

DEPTH = 20  # today's best reordered: what a recall would encode pairs for
SHORT = 400  # recall/replies.py: a reply of at most this many characters borrows context
RRF_K = 60
CLIP = 400  # characters of a long previous memory kept (its end) in the clipped pair
METRICS = ("hit@1", "hit@5", "hit@10", "ndcg@10", "mrr", "session_hit@5")


@dataclass
class Hit:
    key: str | None
    score: float
    chars: float
    alone: float = 0.0  # cos(question, the memory alone)
    pair: float = 0.0  # cos(question, previous + memory)
    clipped: float = 0.0  # cos(question, the previous memory's last CLIP chars + memory)
    asks: bool = False  # the previous memory holds a "?"
    before: int = 0  # characters of the previous memory
    first: bool = True  # no previous memory in its session


@dataclass
class Question:
    category: int
    gold: frozenset[str]
    head: list[Hit]
    tail: list[str | None]


Variant = Callable[[list[Hit]], list[Hit]]


def texts_of(data: Path) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str | None]]:
    """Each turn's memory text and the memory text before it in its session, by (sample, dia_id)."""
    text: dict[tuple[str, str], str] = {}
    before: dict[tuple[str, str], str | None] = {}
    for sample in load(data):
        last: tuple[int, str] | None = None
        for turn in sample.turns:
            key = (sample.sample_id, turn.dia_id)
            text[key] = turn.memory_text
            before[key] = last[1] if last is not None and last[0] == turn.session else None
            last = (turn.session, turn.memory_text)
    return text, before


def pair_text(previous: str | None, this: str, clip: int = 0) -> str:
    if previous is None:
        return this
    if clip and len(previous) > clip:
        previous = previous[-clip:]
    return f"{previous}\n{this}"


def questions_of(dump: Path, data: Path, embedder: Any) -> list[Question]:
    """The dump's questions, each best DEPTH with its cosines to the question."""
    import numpy as np

    text, before = texts_of(data)
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    wanted: list[str] = []
    for q in lines:
        wanted.append(q["question"])
        for h in q["hits"][:DEPTH]:
            if h["key"] is None:
                continue
            k = (q["sample"], h["key"])
            wanted += [text[k], pair_text(before[k], text[k]), pair_text(before[k], text[k], CLIP)]
    unique = list(dict.fromkeys(wanted))
    vectors = embedder.embed(unique)
    at = {t: vectors[i] for i, t in enumerate(unique)}
    out = []
    for q in lines:
        qv = at[q["question"]]
        head = []
        for h in q["hits"][:DEPTH]:
            hit = Hit(h["key"], h["f"]["score"], h["f"]["chars"])
            if h["key"] is not None:
                k = (q["sample"], h["key"])
                hit.alone = float(np.dot(qv, at[text[k]]))
                hit.pair = float(np.dot(qv, at[pair_text(before[k], text[k])]))
                hit.clipped = float(np.dot(qv, at[pair_text(before[k], text[k], CLIP)]))
                previous = before[k]
                hit.asks = previous is not None and "?" in previous
                hit.first = previous is None
                hit.before = len(previous or "")
            head.append(hit)
        tail = [h["key"] for h in q["hits"][DEPTH:]]
        out.append(Question(q["category"], frozenset(q["gold"]), head, tail))
    return out


def gain(w: float, *, asks: bool = False, which: str = "pair", short: bool = False) -> Variant:
    """(a) score × (1 + w·max(0, cos(q, pair) − cos(q, alone))), short hits only (and, with
    `asks`, only where the previous memory asks something; with `short`, only where the
    previous memory is short too: a turn, not an assistant's long answer)."""

    def run(head: list[Hit]) -> list[Hit]:
        def lifted(h: Hit) -> float:
            if h.key is None or h.first or h.chars > SHORT or (asks and not h.asks):
                return h.score
            if short and h.before > SHORT:
                return h.score
            extra = float(getattr(h, which)) - h.alone
            return h.score * (1 + w * max(0.0, extra))

        return sorted(head, key=lambda h: -lifted(h))

    return run


def fused(cos: Callable[[Hit], float]) -> Variant:
    """(b) reciprocal-rank fusion of today's order with the order by `cos`."""

    def run(head: list[Hit]) -> list[Hit]:
        by_cos = sorted(range(len(head)), key=lambda i: -cos(head[i]))
        place = {i: r for r, i in enumerate(by_cos, start=1)}
        fusion = {i: 1 / (RRF_K + i + 1) + 1 / (RRF_K + place[i]) for i in range(len(head))}
        return [head[i] for i in sorted(range(len(head)), key=lambda i: -fusion[i])]

    return run


VARIANTS: dict[str, Variant] = {
    "today": lambda head: head,
    **{f"gain{w:g}": gain(w) for w in (0.5, 1, 2, 4)},
    **{f"gain{w:g}_asks": gain(w, asks=True) for w in (0.5, 1, 2, 4)},
    **{f"gain{w:g}_prevshort": gain(w, short=True) for w in (0.5, 1, 2)},
    **{f"gain{w:g}_asks_prevshort": gain(w, asks=True, short=True) for w in (0.5, 1, 2)},
    "gain1_clip": gain(1, which="clipped"),
    "gain2_clip": gain(2, which="clipped"),
    "rrf_pair": fused(lambda h: h.pair),
    "rrf_pair_asks": fused(lambda h: h.pair if h.asks else h.alone),
    "rrf_pair_short": fused(lambda h: h.pair if h.chars <= SHORT else h.alone),
    "rrf_clip": fused(lambda h: h.clipped),
    "rrf_pair_prevshort": fused(lambda h: h.pair if h.chars <= SHORT >= h.before else h.alone),
    "rrf_max": fused(lambda h: max(h.pair, h.alone)),
    "rrf_alone": fused(lambda h: h.alone),  # control: the same fusion with no pair at all
}


def scored(questions: Sequence[Question], variant: Variant) -> list[tuple[int, dict[str, float]]]:
    out = []
    for q in questions:
        order = [h.key for h in variant(list(q.head))] + q.tail
        found = [k for k in order[:10] if k]  # as bench.rank_features --compare reads a dump
        out.append((q.category, score_question(found, q.gold)))
    return out


def report(
    name: str,
    questions: Sequence[Question],
    variants: Sequence[str],
    table: Mapping[str, Variant] | None = None,
) -> dict[str, Any]:
    """Each variant of `table` (default: this module's) against today's order, paired."""
    table = VARIANTS if table is None else table
    base = scored(questions, table["today"])
    cats = sorted({c for c, _ in base})
    pooled = POOLED_CATEGORIES if max(cats) <= 5 else frozenset(cats)
    pools = [("pooled", pooled), *((f"cat {c}", frozenset({c})) for c in cats)]
    result: dict[str, Any] = {}
    for variant in variants:
        new = scored(questions, table[variant])
        rows: dict[str, Any] = {}
        for label, pool in pools:
            n = sum(c in pool for c, _ in base)
            row: dict[str, Any] = {"n": n}
            for m in METRICS:
                today = sum(s[m] for c, s in base if c in pool) / n
                row[m] = (today, *paired_bootstrap(new, base, m, categories=pool))
            rows[label] = row
        result[variant] = rows
        print(f"{name} {variant}", file=sys.stderr)
        for label, row in rows.items():
            cells = "  ".join(
                f"{m} {row[m][0]:.3f} {row[m][1]:+.3f} [{row[m][2]:+.3f},{row[m][3]:+.3f}]"
                for m in METRICS
            )
            print(f"  {label:<8} ({row['n']:>3}) {cells}", file=sys.stderr)
    return result


def separation(name: str, questions: Sequence[Question]) -> dict[str, Any]:
    """How often each signal puts a gold hit above another hit of the same question's head (of
    every such couple; and of those whose gold hit is a short reply to a question)."""
    signals: dict[str, Callable[[Hit], float]] = {
        "today": lambda h: h.score,
        "alone": lambda h: h.alone,
        "pair": lambda h: h.pair,
        "clipped": lambda h: h.clipped,
        "pair-alone": lambda h: h.pair - h.alone,
    }
    out: dict[str, Any] = {}
    for subset in ("all", "replies"):
        right = dict.fromkeys(signals, 0.0)
        couples = 0
        for q in questions:
            gold = [h for h in q.head if h.key in q.gold]
            if subset == "replies":
                gold = [h for h in gold if h.asks and h.chars <= SHORT]
            other = [h for h in q.head if h.key not in q.gold]
            for g in gold:
                for o in other:
                    couples += 1
                    for label, f in signals.items():
                        right[label] += 1.0 if f(g) > f(o) else 0.5 if f(g) == f(o) else 0.0
        out[subset] = {"couples": couples, **{k: v / max(couples, 1) for k, v in right.items()}}
        cells = "  ".join(f"{k} {v / max(couples, 1):.3f}" for k, v in right.items())
        print(f"{name} separation {subset} ({couples} couples): {cells}", file=sys.stderr)
    return out


def cost(data: Path, dump: Path, inner: Any, count: int) -> dict[str, float]:
    """ms to encode one question's DEPTH pairs (median over `count` questions, uncached), and
    ms a memory to encode DEPTH·`count` memories alone and as pairs in one bulk call."""
    text, before = texts_of(data)
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    step = max(1, len(lines) // count)
    picked = lines[::step][:count]
    inner.embed(["warm up the model"] * 4)
    per_query = []
    alone: list[str] = []
    pairs: list[str] = []
    for q in picked:
        keys = [(q["sample"], h["key"]) for h in q["hits"][:DEPTH] if h["key"]]
        batch = [pair_text(before[k], text[k]) for k in keys]
        alone += [text[k] for k in keys]
        pairs += batch
        start = time.perf_counter()
        inner.embed(batch)
        per_query.append((time.perf_counter() - start) * 1000)
    bulk = {}
    for label, texts in (("alone", alone), ("pair", pairs)):
        start = time.perf_counter()
        for at in range(0, len(texts), 256):
            inner.embed(texts[at : at + 256])
        bulk[label] = (time.perf_counter() - start) * 1000 / len(texts)
    return {
        "query_p50_ms": statistics.median(per_query),
        "query_p90_ms": sorted(per_query)[int(0.9 * len(per_query))],
        "bulk_alone_ms": bulk["alone"],
        "bulk_pair_ms": bulk["pair"],
        "chars_alone": statistics.mean(len(t) for t in alone),
        "chars_pair": statistics.mean(len(t) for t in pairs),
        "memories": len(alone),
    }


def measured(
    pairs: Sequence[tuple[Path, Path]],
    read: Callable[[Path, Path], Sequence[Question]],
    names: Sequence[str],
    table: Mapping[str, Variant],
    separate: Callable[[str, Sequence[Question]], Any],
    costed: Callable[[Path, Path], dict[str, float]] | None = None,
) -> dict[str, Any]:
    """Each DUMP DATA pair's questions (`read`), every variant of `names` against today's
    order, how each signal separates gold from the rest (`separate`), and, with `costed`,
    what the signal costs; by data file name."""
    out: dict[str, Any] = {}
    for dump, data in pairs:
        questions = read(dump, data)
        out[data.name] = {"variants": report(data.name, questions, names, table)}
        out[data.name]["separation"] = separate(data.name, questions)
        if costed is not None:
            out[data.name]["cost"] = costed(dump, data)
            print(f"{data.name} cost {out[data.name]['cost']}", file=sys.stderr)
    return out


def arguments(
    doc: str | None, variants: Sequence[str], argv: Sequence[str] | None
) -> tuple[argparse.Namespace, list[tuple[Path, Path]], list[str]]:
    """An offline bench's command line: DUMP DATA pairs, --cache, --variants, --cost, --json.
    Returns the arguments, the (dump, data) pairs and the variants asked for."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("files", type=Path, nargs="+", help="DUMP DATA pairs")
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--variants", default=",".join(variants))
    parser.add_argument("--cost", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if len(args.files) % 2:
        parser.error("files come in pairs: DUMP DATA")
    pairs = list(zip(args.files[::2], args.files[1::2], strict=True))
    return args, pairs, [v for v in args.variants.split(",") if v]


def main(argv: Sequence[str] | None = None) -> int:
    args, pairs, names = arguments(__doc__, list(VARIANTS), argv)
    inner: Any = load_embedder("minilm", model_cache_dir(os.environ, Path.home()))
    embedder = CachedEmbedder(inner, args.cache)
    out = measured(
        pairs,
        lambda dump, data: questions_of(dump, data, embedder),
        names,
        VARIANTS,
        separation,
        (lambda dump, data: cost(data, dump, inner, args.cost)) if args.cost else None,
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
