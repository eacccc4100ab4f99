"""Pure retrieval metrics of the LoCoMo protocol (Maharana et al., ACL 2024).

Conventions (all per question, then averaged):

- A ranking is a sequence of ``dia_id`` strings, best first. Duplicate ids count once:
  only the first occurrence is kept and the ranking is collapsed (later items move up a
  rank), so a system returning the same turn twice neither gains nor loses by it.
- ``hit@k``: 1 if any gold id is in the top k, else 0 (k = 1, 5, 10).
- ``recall_all@10``: 1 if every gold id is in the top 10, else 0.
- ``ndcg@10``: binary gain, DCG = sum of 1/log2(rank+1) over gold ids in the top 10
  (rank from 1), divided by the ideal DCG over min(10, |gold|) ranks.
- ``mrr``: 1/rank of the first gold id in the returned list, 0 if none is returned (no
  cut-off other than the list's own length).
- ``session_hit@5``: each result maps to its session ``D<n>`` (the part before ``:``; an
  id that is not ``D<n>:<m>`` is its own session, which is never gold); take the first 5
  distinct sessions in rank order; 1 if any is a session of a gold id.

LongMemEval's own retrieval metrics (Wu et al., ICLR 2025; its ``src/retrieval/eval_utils.py``),
so figures compare with the paper's tables (:func:`score_longmemeval`): ``recall_any@k`` (any
gold in the top k), ``recall_all@k`` (every gold in the top k) and ``ndcg_any@k``, at message
(``turn_``) and session (``session_``) level, k = 5 and 10. Their nDCG gives ranks 1 and 2 the
same gain (DCG = rel_1 + sum over i >= 2 of rel_i / log2 i), unlike ours; the session ranking is
the message ranking with each message mapped to its session, first occurrence kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import TypedDict

METRICS: tuple[str, ...] = (
    "hit@1",
    "hit@5",
    "hit@10",
    "recall_all@10",
    "ndcg@10",
    "mrr",
    "session_hit@5",
)
POOLED_CATEGORIES: frozenset[int] = frozenset({1, 2, 3, 4})
LME_METRICS: tuple[str, ...] = tuple(
    f"{level}_{name}@{k}"
    for level in ("turn", "session")
    for k in (5, 10)
    for name in ("recall_any", "recall_all", "ndcg_any")
)

_SESSION = re.compile(r"(D\d+):\d+")


class Aggregate(TypedDict):
    """Result of :func:`aggregate` (a plain dict at runtime)."""

    pooled: dict[str, float]
    by_category: dict[str, dict[str, float]]
    count: dict[str, int]


def session_of(dia_id: str) -> str:
    """Map ``D3:7`` to ``D3``; an id of any other shape is returned unchanged."""
    match = _SESSION.fullmatch(dia_id)
    return match.group(1) if match else dia_id


def dedupe(ranked: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each id, preserving order."""
    seen: set[str] = set()
    out: list[str] = []
    for item in ranked:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def _dcg(ranks: Iterable[int]) -> float:
    return sum(1.0 / math.log2(rank + 1) for rank in ranks)


def score_question(ranked_dia_ids: Sequence[str], gold: frozenset[str]) -> dict[str, float]:
    """Score one ranking against its gold ids; returns every metric in ``METRICS``."""
    if not gold:
        raise ValueError("gold must not be empty (questions without evidence are skipped)")
    ranking = dedupe(ranked_dia_ids)
    gold_ranks = [rank for rank, dia_id in enumerate(ranking, start=1) if dia_id in gold]
    first = gold_ranks[0] if gold_ranks else None
    in_top10 = [rank for rank in gold_ranks if rank <= 10]

    sessions = dedupe(session_of(dia_id) for dia_id in ranking)[:5]
    gold_sessions = {session_of(dia_id) for dia_id in gold}

    ideal = _dcg(range(1, min(10, len(gold)) + 1))
    return {
        "hit@1": float(first is not None and first <= 1),
        "hit@5": float(first is not None and first <= 5),
        "hit@10": float(first is not None and first <= 10),
        "recall_all@10": float(len(in_top10) == len(gold)),
        "ndcg@10": _dcg(in_top10) / ideal,
        "mrr": 1.0 / first if first is not None else 0.0,
        "session_hit@5": float(any(s in gold_sessions for s in sessions)),
    }


def score_longmemeval(ranked_dia_ids: Sequence[str], gold: frozenset[str]) -> dict[str, float]:
    """LongMemEval's metrics of one ranking (``LME_METRICS``), as its evaluation code has them."""
    turns = dedupe(ranked_dia_ids)
    sessions = dedupe(session_of(dia_id) for dia_id in turns)
    out: dict[str, float] = {}
    for level, ranking, wanted in (
        ("turn", turns, gold),
        ("session", sessions, frozenset(session_of(d) for d in gold)),
    ):
        for k in (5, 10):
            top = ranking[:k]
            found = set(top)
            out[f"{level}_recall_any@{k}"] = float(any(g in found for g in wanted))
            out[f"{level}_recall_all@{k}"] = float(all(g in found for g in wanted))
            ideal = _lme_dcg([1.0] * min(k, len(wanted)))
            out[f"{level}_ndcg_any@{k}"] = _lme_dcg([float(d in wanted) for d in top]) / ideal
    return out


def _lme_dcg(gains: Sequence[float]) -> float:
    """LongMemEval's DCG: rel_1 + sum over ranks i >= 2 of rel_i / log2 i."""
    return sum(g if i == 1 else g / math.log2(i) for i, g in enumerate(gains, start=1))


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    """The mean of each metric every row holds."""
    if not rows:
        return {}
    names = [name for name in rows[0] if all(name in row for row in rows)]
    return {name: sum(row[name] for row in rows) / len(rows) for name in names}


def aggregate(
    per_question: list[tuple[int, dict[str, float]]],
    pooled: frozenset[int] = POOLED_CATEGORIES,
) -> Aggregate:
    """Average per-question scores: pooled over categories 1-4 and per category.

    Returns ``{"pooled": {metric: mean}, "by_category": {"<c>": {metric: mean}},
    "count": {"pooled": n, "<c>": n_c}}``; only categories that occur appear under
    ``by_category`` (keys are strings, sorted numerically); ``pooled`` is ``{}`` when no
    question of categories 1-4 was given. Category 5 is never pooled. `pooled`: the categories
    pooled (LongMemEval's six types are all pooled).
    """
    by_cat: dict[int, list[dict[str, float]]] = {}
    for category, scores in per_question:
        by_cat.setdefault(category, []).append(scores)
    pooled_rows = [row for c in sorted(by_cat) if c in pooled for row in by_cat[c]]
    count: dict[str, int] = {"pooled": len(pooled_rows)}
    by_category: dict[str, dict[str, float]] = {}
    for category in sorted(by_cat):
        by_category[str(category)] = _mean(by_cat[category])
        count[str(category)] = len(by_cat[category])
    return {"pooled": _mean(pooled_rows), "by_category": by_category, "count": count}


def percentile(values: Iterable[float], p: float) -> float:
    """The p-th percentile (0-100) by linear interpolation between closest ranks.

    Same as numpy's default ("linear"): position (n-1)*p/100 in the sorted values.
    Raises ``ValueError`` on an empty input or p outside [0, 100].
    """
    data = sorted(values)
    if not data:
        raise ValueError("percentile of an empty sequence")
    if not 0.0 <= p <= 100.0:
        raise ValueError(f"percentile p must be within [0, 100], got {p}")
    position = (len(data) - 1) * p / 100.0
    low = math.floor(position)
    high = min(low + 1, len(data) - 1)
    fraction = position - low
    return data[low] + (data[high] - data[low]) * fraction
