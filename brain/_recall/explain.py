"""Why a memory came back: its rank and score per retriever, and what context and priors added
(read in a terminal as one line: hitview.describe)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from brain._indexes.catalog import Brief
from brain._recall.question import Question
from brain._recall.rank import STATUS_PRIOR, WEIGHTS, Scale, Then, share


def explain(
    retrievers: Sequence[Any],
    lists: dict[str, list[tuple[str, float]]],
    fused: Sequence[tuple[str, float]],
    contexted: Sequence[tuple[str, float]],
    rows: dict[str, Brief],
    ids: Sequence[str],
    scaled: dict[str, Scale] | None = None,
    then: Then | None = None,
) -> dict[str, dict[str, Any]]:
    """For each of `ids`: per retriever its rank (1 = best, None: not found), score, weight,
    what neighbour context added and what it added to the fused score (`share`: weight ×
    (score − cut) / span, rank.share; 0 when not found); the fused score (the sum of the
    shares); what the memories written with it added (`context`); the status prior it was
    multiplied by."""
    own = {r.name: r.last.own for r in retrievers if getattr(r, "last", None) is not None}
    places = {
        name: {oid: (n, score) for n, (oid, score) in enumerate(ranked, 1)}
        for name, ranked in lists.items()
    }
    fused_of, context_of = dict(fused), dict(contexted)
    out: dict[str, dict[str, Any]] = {}
    for oid in ids:
        per: dict[str, Any] = {}
        for name, found in places.items():
            rank, score = found.get(oid, (None, None))
            entry: dict[str, Any] = {"rank": rank, "score": _round(score)}
            if len(lists) > 1:
                entry["weight"] = WEIGHTS.get(name, 1.0)
                if scaled and name in scaled:
                    there = (then or {}).get(name)
                    part = share(scaled[name], oid, score, there) if score is not None else 0.0
                    entry["share"] = _round(entry["weight"] * part)
            if score is not None and name in own:  # what neighbour context added
                entry["neighbours"] = _round(score - own[name].get(oid, 0.0))
            per[name] = entry
        base = fused_of.get(oid, 0.0)
        status = rows[oid].status if oid in rows else "active"
        out[oid] = {
            "retrievers": per,
            "fused": _round(base),
            "context": _round(context_of.get(oid, base) - base),
            "prior": STATUS_PRIOR.get(status, 1.0),
        }
    return out


def what_stages_did(
    why: dict[str, dict[str, Any]],
    question: Question,
    stages: dict[str, dict[str, float]],
    rows: dict[str, Brief],
    only_when: bool,
    lifted: Sequence[str],
) -> None:
    """Add to each memory's entry what the priors after fusion did to it (`stages`: a stage
    → a memory → its factor, or what it added for a reply), each only where it ran.
    `only_when`: the question asked only when; `lifted`: the names whose words were lifted."""
    window, wants = question.window, question.wants
    for oid, entry in why.items() if window is not None else ():  # what the time did
        entry["time"] = stages["time"].get(oid, 1.0)
        entry["time_said"] = window.said if window is not None else None
        if only_when and window is not None:  # ranked by when it was written first
            tier = window.tier(rows[oid].created) if oid in rows else 2
            entry["time_first"] = ("said then", "just after", "another time")[tier]
    for oid, entry in why.items() if wants is not None else ():  # what the question asked
        entry["answer"] = stages["answer"].get(oid, 1.0)
        entry["answer_asked"] = wants.name if wants is not None else None
    for oid, entry in why.items() if stages["asks"] else ():  # what a memory asks, not tells
        entry["asks"] = round(stages["asks"].get(oid, 1.0), 4)
    for oid, entry in why.items() if stages["speaker"] else ():  # the asker's own words
        entry["speaker"] = stages["speaker"].get(oid, 1.0)
    for oid, entry in why.items() if stages["reply"] else ():  # a reply to the question before
        entry["reply"] = round(stages["reply"].get(oid, 0.0), 4)
    for oid, entry in why.items() if stages["opens"] else ():  # the opening of its sitting
        entry["opens"] = stages["opens"].get(oid, 1.0)
    for oid, entry in why.items() if stages["name"] else ():  # what the name prior multiplied
        entry["name"] = stages["name"].get(oid, 1.0)
        entry["name_said"] = list(lifted)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
