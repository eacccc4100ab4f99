"""Does a whole-session retriever, used as a prior, rank better than today's hybrid recall?
Offline, over dumps of today's best 50 (bench/rank_features.py), measurement only.

    python -m bench.sessions DUMP DATA [DUMP DATA ...] --cache PATH [--cache PATH ...]
        [--variants a,b | --screen] [--json OUT]

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) and LongMemEval (Wu et al., ICLR 2025; MIT):
evaluation only. Every session of the question's sample is one document, scored against the
question: plain BM25 over the sessions' texts (bench/bm25_baseline.py; the turns' memory texts,
one a line) and the cosine of the question's MiniLM vector to the mean of the session's turn
vectors (the vectors brain stored at ingest, read from `--cache`, one a DUMP DATA pair or one
for all); `both` fuses the two session orders by reciprocal rank. Two controls: `shuffled` (the
BM25 session scores dealt to the sessions at random: the same machinery, no information) and
`mass` (a session's share of today's top-50 score mass: the earlier check that lost).

First, how often each ranks a gold session first / in its top 3 / top 5, beside today's order of
sessions (the dump's hits mapped to sessions, first occurrence kept). Then each variant reorders
today's best DEPTH hits (the rest stay as they were), by today's score × (1 + λ·s), s the hit's
session's normalised score (`max`: score / the best session's; `rank`: 1 / its rank), or by
reciprocal-rank fusion of today's order with the hits ordered by their session's rank (today's
order within a session), and is compared with today's order on the top 10: each metric's paired
bootstrap 95% interval, pooled (LoCoMo 1-4; every LongMemEval type) and by category
(bench/pairs.py's report). `--screen`: every variant's point changes only, no intervals.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bm25_baseline import BM25
from bench.locomo_data import Sample, load
from bench.metrics import POOLED_CATEGORIES, session_of
from bench.pairs import METRICS, RRF_K, Hit, Question, Variant, fused, report, scored

SIGNALS = ("bm25", "cos", "both", "shuffled", "mass")
NORMS = ("max", "rank")
LAMBDAS = (0.1, 0.2, 0.3, 0.5)
DEPTHS = (20, 50)
SEED = 42


@dataclass
class SessionHit(Hit):
    session: str | None = None
    prior: dict[str, float] = field(default_factory=dict)  # "<signal>/<norm>" -> value


@dataclass
class Sitting:
    """What a question's sessions score, beside today's order of them."""

    category: int
    gold: frozenset[str]  # the gold sessions
    today: list[str]  # the dump's sessions, first occurrence kept
    orders: dict[str, list[str]]  # signal -> the sample's sessions, best first


def session_texts(sample: Sample) -> dict[str, list[str]]:
    """Each session's turns' memory texts, in order, by session id (``D<n>``)."""
    out: dict[str, list[str]] = {}
    for turn in sample.turns:
        out.setdefault(session_of(turn.dia_id), []).append(turn.memory_text)
    return out


def bm25_scores(sessions: dict[str, list[str]], question: str) -> dict[str, float]:
    """Plain BM25 of the question against each session as one document (0: no term shared)."""
    index = BM25([(sid, "\n".join(texts)) for sid, texts in sessions.items()])
    found = dict(index.search(question, k=len(sessions)))
    return {sid: found.get(sid, 0.0) for sid in sessions}


def order_of(scores: dict[str, float]) -> list[str]:
    """Sessions best first; ties in the sessions' own order."""
    place = {sid: i for i, sid in enumerate(scores)}
    return sorted(scores, key=lambda sid: (-scores[sid], place[sid]))


def rrf(*orders: list[str]) -> dict[str, float]:
    """Reciprocal-rank fusion of session orders (every order holds every session)."""
    out: dict[str, float] = dict.fromkeys(orders[0], 0.0)
    for order in orders:
        for rank, sid in enumerate(order, start=1):
            out[sid] += 1 / (RRF_K + rank)
    return out


def normalised(scores: dict[str, float]) -> dict[str, dict[str, float]]:
    """`max`: score / the best session's (0 if none scores above 0); `rank`: 1 / rank."""
    best = max(scores.values(), default=0.0)
    order = order_of(scores)
    return {
        "max": {sid: max(s, 0.0) / best if best > 0 else 0.0 for sid, s in scores.items()},
        "rank": {sid: 1 / r for r, sid in enumerate(order, start=1)},
    }


def shuffled(scores: dict[str, float], seed: str) -> dict[str, float]:
    """The same scores dealt to the sessions at random (the control with no information)."""
    values = list(scores.values())
    random.Random(f"{SEED}/{seed}").shuffle(values)
    return dict(zip(scores, values, strict=True))


def questions_of(dump: Path, data: Path, embedder: Any) -> tuple[list[Question], list[Sitting]]:
    """The dump's questions, each hit carrying its session's normalised scores."""
    import numpy as np

    samples = {s.sample_id: s for s in load(data)}
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    questions: list[Question] = []
    sittings: list[Sitting] = []
    means: dict[str, dict[str, Any]] = {}  # sample -> session -> unit mean of its turn vectors
    asked = embedder.embed(list(dict.fromkeys(q["question"] for q in lines)))
    qvec = {t: asked[i] for i, t in enumerate(dict.fromkeys(q["question"] for q in lines))}
    texts: dict[str, dict[str, list[str]]] = {}
    for q in lines:
        sid = q["sample"]
        if sid not in texts:
            texts[sid] = session_texts(samples[sid])
            # brain's vault body ends in a newline: the text its encoder saw, so the cache's key
            flat = [t + "\n" for ts in texts[sid].values() for t in ts]
            vectors = embedder.embed(flat)
            means[sid] = {}
            at = 0
            for session, ts in texts[sid].items():
                mean = vectors[at : at + len(ts)].mean(axis=0)
                means[sid][session] = mean / max(float(np.linalg.norm(mean)), 1e-12)
                at += len(ts)
        sessions = texts[sid]
        raw: dict[str, dict[str, float]] = {
            "bm25": bm25_scores(sessions, q["question"]),
            "cos": {s: float(np.dot(qvec[q["question"]], v)) for s, v in means[sid].items()},
        }
        raw["both"] = rrf(order_of(raw["bm25"]), order_of(raw["cos"]))
        raw["shuffled"] = shuffled(raw["bm25"], f"{sid}/{q['question']}")
        mass = dict.fromkeys(sessions, 0.0)
        for h in q["hits"]:
            if h["key"] is not None:
                mass[session_of(h["key"])] = mass.get(session_of(h["key"]), 0.0) + h["f"]["score"]
        raw["mass"] = mass
        prior = {
            sig: {f"{sig}/{norm}": values for norm, values in normalised(scores).items()}
            for sig, scores in raw.items()
        }
        head: list[Hit] = []
        for h in q["hits"]:
            where = session_of(h["key"]) if h["key"] is not None else None
            hit = SessionHit(h["key"], h["f"]["score"], h["f"]["chars"], session=where)
            for by_norm in prior.values():
                for name, values in by_norm.items():
                    hit.prior[name] = values.get(where, 0.0) if where else 0.0
            head.append(hit)
        gold = frozenset(q["gold"])
        questions.append(Question(q["category"], gold, head, []))
        today = list(dict.fromkeys(session_of(h["key"]) for h in q["hits"] if h["key"]))
        sittings.append(
            Sitting(
                q["category"],
                frozenset(session_of(g) for g in gold),
                today,
                {sig: order_of(scores) for sig, scores in raw.items()},
            )
        )
    return questions, sittings


def prior_of(hit: Hit, name: str) -> float:
    return hit.prior.get(name, 0.0) if isinstance(hit, SessionHit) else 0.0


def lifted(name: str, weight: float, depth: int) -> Variant:
    """Today's best `depth` by score × (1 + weight · the hit's session's `name` prior)."""

    def run(head: list[Hit]) -> list[Hit]:
        top = sorted(head[:depth], key=lambda h: -h.score * (1 + weight * prior_of(h, name)))
        return top + head[depth:]

    return run


def fused_with(signal: str, depth: int) -> Variant:
    """Today's best `depth` by reciprocal-rank fusion of today's order with the session order."""
    fuse = fused(lambda h: prior_of(h, f"{signal}/rank"))

    def run(head: list[Hit]) -> list[Hit]:
        return fuse(head[:depth]) + head[depth:]

    return run


def variants() -> dict[str, Variant]:
    out: dict[str, Variant] = {"today": lambda head: head}
    for depth in DEPTHS:
        for signal in SIGNALS:
            for norm in NORMS:
                for weight in LAMBDAS:
                    name = f"{signal}-{norm}-{weight:g}-d{depth}"
                    out[name] = lifted(f"{signal}/{norm}", weight, depth)
            out[f"rrf-{signal}-d{depth}"] = fused_with(signal, depth)
    return out


VARIANTS = variants()
DEFAULT = (
    [f"{s}-{n}-{w:g}-d20" for s in ("bm25", "cos", "both") for n in NORMS for w in LAMBDAS]
    + [f"rrf-{s}-d{d}" for s in ("bm25", "cos", "both") for d in DEPTHS]
    + [f"shuffled-{n}-0.3-d20" for n in NORMS]
    + ["rrf-shuffled-d20", "mass-max-0.3-d20"]
)


def pools(categories: Sequence[int]) -> list[tuple[str, frozenset[int]]]:
    cats = sorted(set(categories))
    pooled = POOLED_CATEGORIES if max(cats) <= 5 else frozenset(cats)
    return [("pooled", pooled), *((f"cat {c}", frozenset({c})) for c in cats)]


def _order(signal: str) -> Callable[[Sitting], list[str]]:
    return lambda s: s.orders[signal]


def session_rates(name: str, sittings: Sequence[Sitting]) -> dict[str, Any]:
    """How often a gold session is first / in the top 3 / top 5 of each order of sessions."""
    out: dict[str, Any] = {}
    orders: dict[str, Callable[[Sitting], list[str]]] = {"today": lambda s: s.today}
    orders.update({sig: _order(sig) for sig in SIGNALS})
    for label, pool in pools([s.category for s in sittings]):
        chosen = [s for s in sittings if s.category in pool]
        row: dict[str, Any] = {"n": len(chosen)}
        for order, of in orders.items():
            row[order] = {
                f"@{k}": sum(bool(set(of(s)[:k]) & s.gold) for s in chosen) / len(chosen)
                for k in (1, 3, 5)
            }
        for sig in SIGNALS:  # first session: the signal's right where today's is wrong, and back
            right = [bool(s.orders[sig][:1] and s.orders[sig][0] in s.gold) for s in chosen]
            today = [bool(s.today[:1] and s.today[0] in s.gold) for s in chosen]
            row[sig]["fixes"] = sum(r and not t for r, t in zip(right, today, strict=True))
            row[sig]["breaks"] = sum(t and not r for r, t in zip(right, today, strict=True))
        out[label] = row
        cells = "  ".join(
            f"{o} "
            + "/".join(f"{row[o][f'@{k}']:.3f}" for k in (1, 3, 5))
            + (f" (+{row[o]['fixes']}/-{row[o]['breaks']})" if o != "today" else "")
            for o in orders
        )
        print(f"{name} sessions {label:<8} ({len(chosen):>3}) @1/@3/@5: {cells}", file=sys.stderr)
    return out


def screen(name: str, questions: Sequence[Question], names: Sequence[str]) -> dict[str, Any]:
    """Each variant's mean change of every metric, pooled and by category (no intervals)."""
    base = scored(questions, VARIANTS["today"])
    groups = pools([c for c, _ in base])
    out: dict[str, Any] = {}
    for variant in names:
        new = scored(questions, VARIANTS[variant])
        rows = {}
        for label, pool in groups:
            pairs = [(a, b) for (c, a), (_, b) in zip(new, base, strict=True) if c in pool]
            rows[label] = {m: sum(a[m] - b[m] for a, b in pairs) / len(pairs) for m in METRICS}
        out[variant] = rows
        pooled = " ".join(f"{m} {rows['pooled'][m]:+.3f}" for m in METRICS)
        worst = min((rows[label]["ndcg@10"], label) for label, _ in groups if label != "pooled")
        print(
            f"{name} {variant:<24} {pooled}  worst cat ndcg@10 {worst[0]:+.3f} ({worst[1]})",
            file=sys.stderr,
        )
    return out


SHOWN = ("hit@1", "hit@10", "ndcg@10", "mrr", "session_hit@5")


def markdown(out: dict[str, Any], detail: Sequence[str] = ()) -> str:
    """The run's tables: session retrieval, each variant pooled, `detail` variants by category."""
    lines: list[str] = []
    for file, part in out.items():
        rates = part["sessions"]
        lines += [f"#### {file}: a gold session first / in the top 3 / top 5", ""]
        lines += ["| | n | today | " + " | ".join(SIGNALS) + " |"]
        lines += ["|---" * (3 + len(SIGNALS)) + "|"]
        for label, row in rates.items():
            cells = [
                "/".join(f"{row[o][f'@{k}']:.3f}" for k in (1, 3, 5))
                + (f" (+{row[o]['fixes']}/−{row[o]['breaks']})" if o != "today" else "")
                for o in ("today", *SIGNALS)
            ]
            lines += [f"| {label} | {row['n']} | " + " | ".join(cells) + " |"]
        if "variants" not in part:
            continue
        variants = part["variants"]
        first = next(iter(variants.values()))["pooled"]
        lines += [
            "",
            f"#### {file}: pooled ({first['n']}), change against today [95% interval]",
            "",
        ]
        lines += ["| variant | " + " | ".join(SHOWN) + " |", "|---" * (1 + len(SHOWN)) + "|"]
        lines += ["| today | " + " | ".join(f"{first[m][0]:.3f}" for m in SHOWN) + " |"]
        for name, rows in variants.items():
            cells = [_cell(rows["pooled"][m]) for m in SHOWN]
            lines += [f"| {name} | " + " | ".join(cells) + " |"]
        for name in detail:
            if name not in variants:
                continue
            lines += ["", f"#### {file}: {name} by category", ""]
            lines += ["| | n | " + " | ".join(SHOWN) + " |", "|---" * (2 + len(SHOWN)) + "|"]
            for label, row in variants[name].items():
                cells = [_cell(row[m], today=True) for m in SHOWN]
                lines += [f"| {label} | {row['n']} | " + " | ".join(cells) + " |"]
        lines += [""]
    return "\n".join(lines) + "\n"


def _cell(entry: Sequence[float], today: bool = False) -> str:
    base, mean, low, high = entry
    sure = "**" if low > 0 or high < 0 else ""  # the interval excludes 0
    change = f"{sure}{mean:+.3f}{sure} [{low:+.3f}, {high:+.3f}]"
    return f"{base:.3f} {change}" if today else change


def main(argv: Sequence[str] | None = None) -> int:
    from bench.compare import CachedEmbedder
    from brain._indexes.embedder import load_embedder
    from brain._settings import model_cache_dir

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", type=Path, nargs="+", help="DUMP DATA pairs")
    parser.add_argument("--cache", type=Path, action="append", required=True)
    parser.add_argument("--variants", default=",".join(DEFAULT))
    parser.add_argument("--screen", action="store_true", help="every variant, no intervals")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--markdown", type=Path, help="the tables, for docs/lab/sessions.md")
    parser.add_argument("--detail", default="", help="variants shown by category in --markdown")
    args = parser.parse_args(argv)
    if len(args.files) % 2:
        parser.error("files come in pairs: DUMP DATA")
    pairs = list(zip(args.files[::2], args.files[1::2], strict=True))
    if len(args.cache) not in (1, len(pairs)):
        parser.error("one --cache, or one a DUMP DATA pair")
    caches = args.cache * len(pairs) if len(args.cache) == 1 else args.cache
    inner: Any = load_embedder("minilm", model_cache_dir(os.environ, Path.home()))
    names = list(VARIANTS)[1:] if args.screen else [v for v in args.variants.split(",") if v]
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        parser.error(f"no such variant: {', '.join(unknown)}")
    out: dict[str, Any] = {}
    for (dump, data), cache in zip(pairs, caches, strict=True):
        questions, sittings = questions_of(dump, data, CachedEmbedder(inner, cache))
        out[data.name] = {"sessions": session_rates(data.name, sittings)}
        if args.screen:
            out[data.name]["screen"] = screen(data.name, questions, names)
        else:
            out[data.name]["variants"] = report(data.name, questions, names, VARIANTS)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    if args.markdown:
        detail = [v for v in args.detail.split(",") if v]
        args.markdown.write_text(markdown(out, detail), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
