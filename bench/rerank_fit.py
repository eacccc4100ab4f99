"""A second-pass ranker over each question's best 50, fitted on both dev files at once and
judged on questions it was not fitted on (folds by conversation), against today's order.

    python -m bench.rerank_fit LOCOMO.jsonl LME.jsonl [--features a,b,...] [--depth 50]

The lines are bench/rank_features.py's. LoCoMo (Maharana et al., ACL 2024) and LongMemEval
(Wu et al., ICLR 2025): evaluation only. Each fold leaves out a tenth of the conversations of
both files, fits a logistic regression (pairs of a gold hit and another of the same question,
each a difference of features) on the rest, and ranks the left-out questions; every question
is ranked once by a model that never saw its conversation. Printed: per file, today and the
reranked order's metrics with paired 95% intervals, and the weights fitted on all questions.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.compare import paired_bootstrap
from bench.metrics import POOLED_CATEGORIES, score_question

FOLDS = 10
HEAD = ("hit@1", "hit@5", "hit@10", "ndcg@10", "mrr")


def _log(x: float) -> float:
    return math.log(max(x, 1e-6))


def vector(hit: dict[str, Any], place: int, top: float) -> dict[str, float]:
    """The features of one hit, as the ranker reads them."""
    f = hit["f"]
    out = {
        "place": 1.0 / math.log2(place + 2),
        "score": f["score"] / top if top > 0 else 0.0,
        "relevance": f["relevance"],
        "chars": math.log1p(f["chars"]),
        "asks": _log(f["asks"]),
        "time": _log(f["time"]),
        "answer": _log(f["answer"]),
        "speaker": _log(f["speaker"]),
        "name": _log(f["name"]),
        "context": f["context"],
        "fused": f["fused"],
        "user": f.get("user", 0.0),
    }
    for r in ("text", "vector", "sparse"):
        out[f"{r}_rr"] = f[f"{r}_rr"]
        out[f"{r}_share"] = f[f"{r}_share"]
        out[f"{r}_found"] = float(f[f"{r}_rr"] > 0)
        out[f"{r}_own"] = f[f"{r}_score"] - f[f"{r}_near"]
    out["cosine"] = out.pop("vector_own")
    return out


_DIA = re.compile(r"D(\d+):(\d+)")
_CAP = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")
_WH = ("which", "what", "where", "who")


def _step(key: str | None, by: int) -> str | None:
    m = _DIA.fullmatch(key or "")
    return f"D{m[1]}:{int(m[2]) + by}" if m else None


def around(q: dict[str, Any], texts: dict[str, str]) -> None:
    """Features of a hit from the turns beside it in the same list (the reply to a question)."""
    place = {h["key"]: i for i, h in enumerate(q["hits"]) if h["key"]}
    asked = set(re.findall(r"[a-z]+", q["question"].lower()))
    wh = q["question"].split()[0].lower() in _WH if q["question"].split() else False
    for h, x in zip(q["hits"], q["x"], strict=False):
        prev = _step(h["key"], -1)
        text = texts.get(f"{q['sample']}/{prev}", "")
        j = place.get(prev)
        x["prev_score"] = q["x"][j]["score"] if j is not None else 0.0
        x["prev_rel"] = q["x"][j]["relevance"] if j is not None else 0.0
        x["prev_asks"] = float("?" in text)
        x["prev_asks_score"] = x["prev_asks"] * x["prev_score"]
        short = h["f"]["chars"] <= 160
        x["short_reply"] = x["prev_asks_score"] * short
        x["short_reply_rel"] = x["prev_asks"] * x["prev_rel"] * short
        head = j is not None and j < 20 and q["hits"].index(h) < 20
        x["head_reply"] = x["short_reply_rel"] * head
        for limit in (250, 400, 600):
            fits = h["f"]["chars"] <= limit
            x[f"head_reply{limit}"] = x["prev_asks"] * x["prev_rel"] * fits * head
        nxt = place.get(_step(h["key"], 1))
        x["next_score"] = q["x"][nxt]["score"] if nxt is not None else 0.0
        own = texts.get(f"{q['sample']}/{h['key']}", "")
        body = own.partition(": ")[2]
        names = {w.lower() for w in _CAP.findall(body)} - asked
        x["new_names"] = float(bool(names)) * float(wh)


def load(path: Path, texts: dict[str, str], depth: int = 50) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        hits = q["hits"][:depth]
        q["hits"] = hits
        top = max((h["f"]["score"] for h in hits), default=0.0)
        q["x"] = [vector(h, i, top) for i, h in enumerate(hits)]
        around(q, texts)
        q["y"] = [int((h["key"] or "") in q["gold"]) for h in hits]
        q["keys"] = [h["key"] for h in hits]
        out.append(q)
    return out


def matrix(q: dict[str, Any], names: Sequence[str]) -> np.ndarray:
    return np.array([[x[n] for n in names] for x in q["x"]], dtype=float).reshape(-1, len(names))


def fit(questions: list[dict[str, Any]], names: Sequence[str], c: float) -> np.ndarray:
    """Weights of a linear score from pairs (a gold hit over each other hit of its question)."""
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]

    rows, labels = [], []
    for q in questions:
        y = np.array(q["y"])
        if not y.any() or y.all():
            continue
        x = matrix(q, names)
        good, bad = x[y == 1], x[y == 0]
        diff = (good[:, None, :] - bad[None, :, :]).reshape(-1, len(names))
        weight = 1.0 / len(diff)  # each question counts once, whatever its pairs
        rows.append(diff)
        labels.append(np.full(len(diff), weight))
    x = np.vstack(rows)
    w = np.concatenate(labels)
    x = np.vstack([x, -x])
    y = np.concatenate([np.ones(len(w)), np.zeros(len(w))])
    model = LogisticRegression(C=c, fit_intercept=False, max_iter=2000)
    model.fit(x, y, sample_weight=np.concatenate([w, w]))
    return np.asarray(model.coef_[0])


def reranked(q: dict[str, Any], names: Sequence[str], weights: np.ndarray) -> list[str | None]:
    if not q["x"]:
        return []
    scores = matrix(q, names) @ weights
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [q["keys"][i] for i in order]


def scored(q: dict[str, Any], keys: Sequence[str | None]) -> tuple[int, dict[str, float]]:
    found = [k for k in keys if k]
    return q["category"], score_question(found, frozenset(q["gold"]))


def folds(questions: list[dict[str, Any]]) -> dict[str, int]:
    samples = sorted({(q["file"], q["sample"]) for q in questions})
    random.Random(42).shuffle(samples)
    return {f"{f}/{s}": i % FOLDS for i, (f, s) in enumerate(samples)}


def run(all_q: list[dict[str, Any]], names: Sequence[str], c: float) -> dict[str, Any]:
    fold_of = folds(all_q)
    new: dict[int, list[str | None]] = {}
    for fold in range(FOLDS):
        train = [q for q in all_q if fold_of[f"{q['file']}/{q['sample']}"] != fold]
        weights = fit(train, names, c)
        for i, q in enumerate(all_q):
            if fold_of[f"{q['file']}/{q['sample']}"] == fold:
                new[i] = reranked(q, names, weights)
    report: dict[str, Any] = {}
    for file in sorted({q["file"] for q in all_q}):
        idx = [i for i, q in enumerate(all_q) if q["file"] == file]
        pool = POOLED_CATEGORIES if "locomo" in file else frozenset(range(1, 7))
        old = [scored(all_q[i], all_q[i]["keys"]) for i in idx]
        got = [scored(all_q[i], new[i]) for i in idx]
        rows = {}
        for m in HEAD:
            mean, low, high = paired_bootstrap(got, old, m, categories=pool)
            base = sum(s[m] for cat, s in old if cat in pool) / sum(cat in pool for cat, _ in old)
            rows[m] = (base, base + mean, mean, low, high)
        report[file] = rows
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--features", default="")
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--c", type=float, default=1.0)
    parser.add_argument("--data", type=Path, nargs="*", default=[])
    args = parser.parse_args(argv)
    from bench.locomo_data import load as load_data

    texts = {}
    for data in args.data:
        for sample in load_data(data):
            for t in sample.turns:
                texts[f"{sample.sample_id}/{t.dia_id}"] = f"{t.speaker}: {t.text}"
    all_q = [q for path in args.files for q in load(path, texts, args.depth)]
    names = args.features.split(",") if args.features else sorted(all_q[0]["x"][0])
    report = run(all_q, names, args.c)
    for file, rows in report.items():
        print(file)
        for m, (base, now, mean, low, high) in rows.items():
            print(f"  {m:<8} {base:.3f} -> {now:.3f}  {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    weights = fit(all_q, names, args.c)
    print("weights (all questions):")
    for n, w in sorted(zip(names, weights, strict=True), key=lambda t: -abs(t[1])):
        print(f"  {n:<16} {w:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
