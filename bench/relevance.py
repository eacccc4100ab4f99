"""The relevance floor's trade-off: questions asked of their own vault and of another one.

On LoCoMo-format data (LoCoMo: Maharana et al., ACL 2024, CC BY-NC 4.0; LongMemEval: Wu et al.,
ICLR 2025, in lme-dev.json), each sample's vault is asked its own questions (positives: the
ordinary protocol of bench/locomo.py) and the next sample's questions (negatives: no evidence
there; a negative whose evidence text the vault holds verbatim is left out and counted). Every
recall runs with no floor and keeps each hit's relevance (recall/relevance.py), so one run gives
the whole curve: per floor, the share of negatives answered "nothing relevant" and hit@1 and
hit@10 of the positives with the floor applied.

    python -m bench.relevance FILE --out OUT.json [--embedder minilm|hashing]
        [--cache-embeddings PATH] [--samples N]
    python -m bench.relevance --curve OUT.json [PART2.json …]   (the curve again, of all parts)

Each run also gives hit@1 and hit@10 at the chosen floor (relevance.FLOOR) against no floor,
with a paired bootstrap interval.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.compare import CachedEmbedder, paired_bootstrap
from bench.locomo import K, Results, _ingest, _vault
from bench.locomo_data import Sample, load
from brain._indexes.embedder import Embedder, load_embedder
from brain._recall import relevance
from brain._settings import model_cache_dir

CHOSEN = relevance.FLOOR  # before `run` sets it aside
FLOORS = [round(0.05 * n, 2) for n in range(20)]


def _asked(brain: Any, question: str, owner: dict[str, tuple[str, str]], sample: str) -> Any:
    """One recall's hits: (gold key, relevance, vector cosine) each, best first."""
    hits = brain.recall(question, k=K, explain=True)
    out = []
    for h in hits:
        found = owner.get(h.id)
        vector = (h.explain or {}).get("retrievers", {}).get("vector") or {}
        cosine = None
        if vector.get("score") is not None:
            cosine = vector["score"] - (vector.get("neighbours") or 0.0)
        dia = found[1] if found and found[0] == sample else None
        out.append([dia, round(h.relevance, 4), None if cosine is None else round(cosine, 4)])
    return out


def run(
    samples: Sequence[Sample], embedder: Embedder, out: Path, part: slice = slice(None)
) -> dict[str, Any]:
    """Each vault (of `part`) asked its own questions and the next sample's; the records so
    far are written to `out` after each vault, so a long run can be read before it ends."""
    relevance.FLOOR = 0.0  # every hit kept: the floors are applied to the records
    records: list[dict[str, Any]] = []
    contaminated = 0
    for i in range(len(samples))[part]:
        sample = samples[i]
        other = samples[(i + 1) % len(samples)]
        texts = {t.memory_text for t in sample.turns}
        theirs = {t.dia_id: t.memory_text for t in other.turns}
        with _vault(embedder, sample.turns[0].created) as (brain, clock):
            owner = _ingest(brain, clock, sample, Results(["hybrid"]))
            for q in sample.questions:
                hits = _asked(brain, q.question, owner, sample.sample_id)
                records.append(
                    {
                        "kind": "own",
                        "category": q.category,
                        "gold": sorted(q.gold),
                        "hits": hits,
                        "question": q.question,
                        "vault": sample.sample_id,
                    }
                )
            for q in other.questions:
                if any(theirs[d] in texts for d in q.gold):
                    contaminated += 1  # the evidence is here too: not a negative
                    continue
                hits = _asked(brain, q.question, owner, sample.sample_id)
                records.append(
                    {
                        "kind": "other",
                        "category": q.category,
                        "hits": hits,
                        "question": q.question,
                        "vault": sample.sample_id,
                    }
                )
        print(f"  {sample.sample_id}: {len(sample.turns)} memories", file=sys.stderr)
        out.write_text(json.dumps({"records": records, "left_out_negatives": contaminated}))
    return {"records": records, "left_out_negatives": contaminated}


def curve(records: Sequence[dict[str, Any]], categories: frozenset[int]) -> list[dict[str, Any]]:
    """Per floor: negatives answered "nothing relevant", positives' hit@1 and hit@10."""
    own = [r for r in records if r["kind"] == "own" and r["category"] in categories]
    other = [r for r in records if r["kind"] == "other" and r["category"] in categories]
    rows = []
    for floor in FLOORS:

        def shown(hits: list[list[Any]], floor: float = floor) -> list[list[Any]]:
            return hits if any(h[1] >= floor for h in hits) else []

        kept = [(shown(r["hits"]), set(r["gold"])) for r in own]
        rows.append(
            {
                "floor": floor,
                "nothing_relevant_other": _mean([not shown(r["hits"]) for r in other]),
                "nothing_relevant_own": _mean([not hits for hits, _ in kept]),
                "hit@1": _mean([bool(h) and h[0][0] in gold for h, gold in kept]),
                "hit@10": _mean([_found(h, gold) for h, gold in kept]),
                "questions": [len(own), len(other)],
            }
        )
    return rows


def against_no_floor(
    records: Sequence[dict[str, Any]], categories: frozenset[int], floor: float
) -> list[str]:
    """hit@1 and hit@10 of the positives with the floor against without (mean difference,
    95% paired bootstrap over the questions)."""
    own = [r for r in records if r["kind"] == "own" and r["category"] in categories]

    def scored(at: float) -> list[tuple[int, dict[str, float]]]:
        out = []
        for r in own:
            hits = r["hits"] if any(h[1] >= at for h in r["hits"]) else []
            gold = set(r["gold"])
            first = float(bool(hits) and hits[0][0] in gold)
            out.append((r["category"], {"hit@1": first, "hit@10": float(_found(hits, gold))}))
        return out

    lines = []
    for metric in ("hit@1", "hit@10"):
        mean, low, high = paired_bootstrap(
            scored(floor), scored(0.0), metric, categories=categories
        )
        lines.append(f"  {metric} at floor {floor}: {mean:+.4f} [{low:+.4f}, {high:+.4f}]")
    return lines


def _found(hits: list[list[Any]], gold: set[str]) -> bool:
    return any(h[0] in gold for h in hits[:K])


def _mean(values: Sequence[bool]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def print_curve(rows: Sequence[dict[str, Any]], title: str) -> None:
    own, other = rows[0]["questions"]
    print(f"{title}: {own} questions of their own vault, {other} of another")
    print(f"{'floor':>6}{'nothing (other)':>17}{'nothing (own)':>15}{'hit@1':>8}{'hit@10':>8}")
    for r in rows:
        print(
            f"{r['floor']:6.2f}{r['nothing_relevant_other']:17.3f}"
            f"{r['nothing_relevant_own']:15.3f}{r['hit@1']:8.3f}{r['hit@10']:8.3f}"
        )


# LoCoMo's pool is categories 1-4 (5 is adversarial); lme-dev.json's six types all count.
LOCOMO, EVERY = frozenset({1, 2, 3, 4}), frozenset(range(1, 7))


def _categories(report: dict[str, Any]) -> frozenset[int]:
    return EVERY if any(r["category"] == 6 for r in report["records"]) else LOCOMO


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("file", type=Path, nargs="?", help="a LoCoMo-format JSON file")
    parser.add_argument("--out", type=Path, help="where to write the records and the curve")
    parser.add_argument("--curve", type=Path, nargs="+", help="earlier --out files: curves only")
    parser.add_argument("--embedder", default="minilm", help="minilm (default) or hashing")
    parser.add_argument("--samples", type=int, default=0, help="only the first N samples")
    parser.add_argument(
        "--part", default=":", help="the vaults A:B of the samples (to run a file in parts)"
    )
    parser.add_argument("--cache-embeddings", type=Path, help="keep vectors by text here")
    args = parser.parse_args(argv)
    if args.curve:
        reports = [json.loads(p.read_text()) for p in args.curve]
        if len(reports) > 1:  # the parts of one file, run apart: one curve of them all
            records = [r for report in reports for r in report["records"]]
            reports = [{"records": records}]
        for path, report in zip(args.curve, reports, strict=False):
            print_curve(curve(report["records"], _categories(report)), str(path))
            print("\n".join(against_no_floor(report["records"], _categories(report), CHOSEN)))
        return 0
    if args.file is None or args.out is None:
        parser.error("give a FILE and --out, or --curve")
    try:
        samples = load(args.file)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.samples:
        samples = samples[: args.samples]
    embedder = load_embedder(args.embedder, model_cache_dir(os.environ, Path.home()))
    assert embedder is not None
    if args.cache_embeddings:
        embedder = CachedEmbedder(embedder, args.cache_embeddings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    first, _, last = args.part.partition(":")
    part = slice(int(first) if first else None, int(last) if last else None)
    report = run(samples, embedder, args.out, part)
    report["curve"] = curve(report["records"], _categories(report))
    args.out.write_text(json.dumps(report) + "\n")
    print_curve(report["curve"], str(args.file))
    print("\n".join(against_no_floor(report["records"], _categories(report), CHOSEN)))
    print(f"negatives left out (their evidence is in the vault): {report['left_out_negatives']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
