"""Late interaction with the MiniLM brain already ships: does scoring a memory token by token
against the question (each question token's best match among the memory's tokens, as ColBERT
scores) rank today's best DEPTH better than today's hybrid order? Offline, measurement only.

    python -m bench.late DUMP DATA [DUMP DATA ...] --cache PATH [--variants a,b] [--cost N]

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) and LongMemEval (Wu et al., ICLR 2025; MIT):
evaluation only. DUMP is bench/rank_features.py's dump of today's best 50. Each of a question's
best DEPTH memories ("<speaker>: <text>", as bench/locomo.py writes it) and the question are run
through the shipped MiniLM graph (ONNX, its last hidden state: one 384-d state a word piece,
256 pieces at most); both sides' states are unit length and [CLS]/[SEP] are left out. A
memory's late score is the mean over the question's pieces of the best cosine among the
memory's pieces; `idf` weighs each question piece by its rarity among the pieces of the
sample's memories (a name counts for more than "what"). Each variant reorders the DEPTH hits
(the rest stay) and is compared with today's order on the top 10 (bench/pairs.py `report`:
paired bootstrap 95% intervals, pooled and by category). States are kept by text hash in
`--cache` (SQLite); a rerun encodes nothing. `--cost N`: the median ms to compute one
question's DEPTH memories' states, over N questions a file, uncached.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.locomo_data import load
from bench.pairs import RRF_K, Question, arguments, measured, texts_of
from brain._indexes import onnxrun, shipped
from brain._indexes.textrun import TOKEN_BUDGET, TextRunner

DEPTH = 20
SPECIAL = frozenset({101, 102})  # [CLS], [SEP] in MiniLM's vocabulary


@dataclass
class Hit:
    key: str | None
    score: float
    alone: float = 0.0  # cos(question, memory), mean-pooled: what the vector retriever sees
    late: float = 0.0  # mean over question pieces of the best cosine among the memory's
    late_idf: float = 0.0  # the same, each question piece weighed by its idf


class States:
    """Token states of texts through the shipped MiniLM graph, kept by text hash."""

    def __init__(self, cache: Path) -> None:
        folder = shipped.folder("minilm", shipped.MODELS)
        self.runner = TextRunner(folder / "model.onnx", folder / "tokenizer.json")
        self.db = sqlite3.connect(cache)
        self.db.execute("CREATE TABLE IF NOT EXISTS states (h TEXT PRIMARY KEY, ids BLOB, s BLOB)")

    def ids(self, text: str) -> list[int]:
        return [i for i in self.runner.tokenizer.encode(text).ids if i not in SPECIAL]

    def of(self, texts: Sequence[str]) -> dict[str, tuple[Any, Any]]:
        """Each text's (piece ids, unit states), special pieces left out."""
        import numpy as np

        out: dict[str, tuple[Any, Any]] = {}
        missing = []
        for text in dict.fromkeys(texts):
            row = self.db.execute(
                "SELECT ids, s FROM states WHERE h = ?", (_hash(text),)
            ).fetchone()
            if row is None:
                missing.append(text)
                continue
            ids = np.frombuffer(row[0], dtype=np.int32)
            out[text] = (ids, np.frombuffer(row[1], dtype=np.float16).reshape(len(ids), -1))
        for text, (ids, states) in zip(missing, self.compute(missing), strict=True):
            self.db.execute(
                "INSERT OR REPLACE INTO states VALUES (?, ?, ?)",
                (_hash(text), ids.astype(np.int32).tobytes(), states.astype(np.float16).tobytes()),
            )
            out[text] = (ids, states)
        self.db.commit()
        return out

    def compute(self, texts: Sequence[str]) -> list[tuple[Any, Any]]:
        import numpy as np

        if not texts:
            return []
        encodings = self.runner.tokenizer.encode_batch(list(texts))
        batches = onnxrun.by_tokens([len(e.ids) for e in encodings], TOKEN_BUDGET)
        out: list[tuple[Any, Any]] = [None] * len(texts)  # type: ignore[list-item]
        for rows in batches:
            feeds = onnxrun.padded([encodings[i] for i in rows])
            feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
            accepted = {k: v for k, v in feeds.items() if k in self.runner.inputs}
            (result,) = self.runner.session.run(["token_embeddings"], accepted)
            for n, i in enumerate(rows):
                ids = np.array(encodings[i].ids, dtype=np.int32)
                keep = ~np.isin(ids, list(SPECIAL))
                states = result[n, : len(ids)][keep]
                states = states / np.maximum(np.linalg.norm(states, axis=1, keepdims=True), 1e-12)
                out[i] = (ids[keep], states.astype(np.float32))
        return out


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def late_scores(
    question: tuple[Any, Any], memory: tuple[Any, Any], idf: dict[int, float]
) -> tuple[float, float]:
    """(plain, idf-weighted) mean over the question's pieces of each one's best cosine."""
    import numpy as np

    q_ids, q_states = question
    _, m_states = memory
    if len(q_ids) == 0 or len(m_states) == 0:
        return 0.0, 0.0
    best = (q_states.astype(np.float32) @ m_states.astype(np.float32).T).max(axis=1)
    weights = np.array([idf.get(int(i), max(idf.values(), default=1.0)) for i in q_ids])
    return float(best.mean()), float((best * weights).sum() / max(weights.sum(), 1e-9))


def idf_of(states: States, texts: Sequence[str]) -> dict[int, float]:
    """Each piece's idf among a sample's memories."""
    df: Counter[int] = Counter()
    for text in texts:
        df.update(set(states.ids(text)))
    n = len(texts)
    return {piece: math.log((n + 1) / (count + 0.5)) for piece, count in df.items()}


def questions_of(dump: Path, data: Path, states: States) -> list[Question]:
    """The dump's questions, each best DEPTH with its late scores."""
    import numpy as np

    text, _ = texts_of(data)
    idf = {s.sample_id: idf_of(states, [t.memory_text for t in s.turns]) for s in load(data)}
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    wanted = [q["question"] for q in lines]
    for q in lines:
        wanted += [text[(q["sample"], h["key"])] for h in q["hits"][:DEPTH] if h["key"]]
    got = states.of(wanted)
    out = []
    for q in lines:
        q_state = got[q["question"]]
        q_mean = q_state[1].mean(axis=0)
        q_mean = q_mean / max(float(np.linalg.norm(q_mean)), 1e-12)
        head = []
        for h in q["hits"][:DEPTH]:
            hit = Hit(h["key"], h["f"]["score"])
            if h["key"] is not None:
                m_state = got[text[(q["sample"], h["key"])]]
                hit.late, hit.late_idf = late_scores(q_state, m_state, idf[q["sample"]])
                m_mean = m_state[1].astype(np.float32).mean(axis=0)
                hit.alone = float(q_mean @ m_mean / max(float(np.linalg.norm(m_mean)), 1e-12))
            head.append(hit)
        tail = [h["key"] for h in q["hits"][DEPTH:]]
        out.append(Question(q["category"], frozenset(q["gold"]), head, tail))  # type: ignore[arg-type]
    return out


Variant = Callable[[list[Any]], list[Any]]


def fused(signal: Callable[[Hit], float]) -> Variant:
    """Reciprocal-rank fusion of today's order with the order by `signal`."""

    def run(head: list[Hit]) -> list[Hit]:
        by = sorted(range(len(head)), key=lambda i: -signal(head[i]))
        place = {i: r for r, i in enumerate(by, start=1)}
        fusion = {i: 1 / (RRF_K + i + 1) + 1 / (RRF_K + place[i]) for i in range(len(head))}
        return [head[i] for i in sorted(range(len(head)), key=lambda i: -fusion[i])]

    return run


def lifted(weight: float, signal: Callable[[Hit], float]) -> Variant:
    """Today's score × (1 + weight × (signal − the head's mean signal))."""

    def run(head: list[Hit]) -> list[Hit]:
        real = [signal(h) for h in head if h.key is not None]
        mean = statistics.mean(real) if real else 0.0
        return sorted(head, key=lambda h: -h.score * (1 + weight * (signal(h) - mean)))

    return run


def alone(signal: Callable[[Hit], float]) -> Variant:
    return lambda head: sorted(head, key=lambda h: -signal(h))


def _late(h: Hit) -> float:
    return h.late


def _late_idf(h: Hit) -> float:
    return h.late_idf


def _cos(h: Hit) -> float:
    return h.alone


VARIANTS: dict[str, Variant] = {
    "today": lambda head: head,
    "only_cos": alone(_cos),  # controls: the mean-pooled cosine alone and fused
    "only_late": alone(_late),
    "only_late_idf": alone(_late_idf),
    "rrf_cos": fused(_cos),
    "rrf_late": fused(_late),
    "rrf_late_idf": fused(_late_idf),
    **{f"lift{w:g}_late": lifted(w, _late) for w in (0.5, 1, 2, 4)},
    **{f"lift{w:g}_late_idf": lifted(w, _late_idf) for w in (0.5, 1, 2, 4)},
    **{f"lift{w:g}_cos": lifted(w, _cos) for w in (1, 2)},
}


def separation(name: str, questions: Sequence[Question]) -> dict[str, float]:
    """How often each signal puts a gold hit above another hit of the same question's head."""
    signals: dict[str, Callable[[Any], float]] = {
        "today": lambda h: h.score,
        "cos": _cos,
        "late": _late,
        "late_idf": _late_idf,
    }
    right = dict.fromkeys(signals, 0.0)
    couples = 0
    for q in questions:
        gold = [h for h in q.head if h.key in q.gold]
        other = [h for h in q.head if h.key not in q.gold]
        for g in gold:
            for o in other:
                couples += 1
                for label, f in signals.items():
                    right[label] += 1.0 if f(g) > f(o) else 0.5 if f(g) == f(o) else 0.0
    out = {k: v / max(couples, 1) for k, v in right.items()}
    cells = "  ".join(f"{k} {v:.3f}" for k, v in out.items())
    print(f"{name} separation ({couples} couples): {cells}", file=sys.stderr)
    return out


def cost(data: Path, dump: Path, states: States, count: int) -> dict[str, float]:
    """ms to compute one question's DEPTH memories' states and late scores, uncached (median
    and 90th percentile over `count` questions), and the mean pieces a memory."""
    text, _ = texts_of(data)
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    picked = lines[:: max(1, len(lines) // count)][:count]
    states.compute(["warm up the model"] * 4)
    per_query, pieces = [], []
    for q in picked:
        batch = [text[(q["sample"], h["key"])] for h in q["hits"][:DEPTH] if h["key"]]
        start = time.perf_counter()
        done = states.compute([q["question"], *batch])
        for memory in done[1:]:
            late_scores(done[0], memory, {})
        per_query.append((time.perf_counter() - start) * 1000)
        pieces += [len(ids) for ids, _ in done[1:]]
    return {
        "query_p50_ms": statistics.median(per_query),
        "query_p90_ms": sorted(per_query)[int(0.9 * len(per_query))],
        "pieces_a_memory": statistics.mean(pieces),
    }


def main(argv: Sequence[str] | None = None) -> int:
    args, pairs, names = arguments(__doc__, list(VARIANTS), argv)
    states = States(args.cache)
    out = measured(
        pairs,
        lambda dump, data: questions_of(dump, data, states),
        names,
        VARIANTS,
        separation,
        (lambda dump, data: cost(data, dump, states, args.cost)) if args.cost else None,
    )
    if args.json:
        args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
