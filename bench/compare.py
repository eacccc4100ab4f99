"""Paired bootstrap of two benchmark runs, question by question, and a text cache of vectors."""

from __future__ import annotations

import hashlib
import random
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.metrics import LME_METRICS, METRICS, POOLED_CATEGORIES

if TYPE_CHECKING:
    from brain._indexes.embedder import Embedder, Vectors
    from brain._indexes.sparse import SparseEncoder, Terms

Scored = Sequence[tuple[int, dict[str, float]]]  # (category, metrics) per question, in order


HEADLINE = ("hit@10", "ndcg@10", "session_hit@5")


def paired_bootstrap(
    new: Scored,
    old: Scored,
    metric: str,
    *,
    categories: frozenset[int] = POOLED_CATEGORIES,
    rounds: int = 2000,
    seed: int = 14,
) -> tuple[float, float, float]:
    """Mean of new − old over the questions of these categories (default: pooled 1-4) and its
    95% interval, resampling questions with replacement; both runs hold the same questions."""
    if len(new) != len(old):
        raise ValueError(f"runs differ: {len(new)} questions against {len(old)}")
    if any(a[0] != b[0] for a, b in zip(new, old, strict=True)):
        raise ValueError("runs differ: the questions are not the same, in the same order")
    diffs = [
        a[1][metric] - b[1][metric] for a, b in zip(new, old, strict=True) if a[0] in categories
    ]
    if not diffs:
        raise ValueError("no pooled question in common")
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds))
    return sum(diffs) / n, means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def compare(
    new: dict[str, Any],
    old: dict[str, Any],
    config: str,
    baseline: str,
    pool: frozenset[int] = POOLED_CATEGORIES,
) -> list[str]:
    """One line per metric both runs hold: config of this run against a config of the
    baseline run, over the categories pooled; then the headline metrics per category."""
    lines = []
    ours, theirs = _scored(new["configs"][config]), _scored(old["configs"][baseline])
    held = [m for m in (*METRICS, *LME_METRICS) if m in ours[0][1] and m in theirs[0][1]]
    for metric in held:
        mean, low, high = paired_bootstrap(ours, theirs, metric, categories=pool)
        lines.append(f"  {metric:<24} {_interval(mean, low, high)}")
    for category in sorted({c for c, _ in ours if c in pool}):
        cells = []
        for metric in HEADLINE:
            found = paired_bootstrap(ours, theirs, metric, categories=frozenset({category}))
            cells.append(f"{metric} {_interval(*found)}")
        lines.append(f"  cat {category}: " + "  ".join(cells))
    return lines


def _interval(mean: float, low: float, high: float) -> str:
    sure = "*" if low > 0 or high < 0 else " "  # the interval excludes 0
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]{sure}"


def _scored(data: dict[str, Any]) -> list[tuple[int, dict[str, float]]]:
    if "questions" not in data:
        raise ValueError("the baseline holds no per-question scores: rerun it with this bench")
    return [(int(c), s) for c, s in data["questions"]]


class CachedEmbedder:
    """An embedder whose vectors are kept by text hash between benchmark runs (the vault's own
    cache is by object id, and every run makes new ids). Not for ingest-rate figures."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        path.parent.mkdir(parents=True, exist_ok=True)
        # Vaults embed on a thread of their own while they write (indexes/pipeline.py): one
        # connection, shared under a lock.
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.lock = threading.Lock()
        self.db.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, vector BLOB)")

    def embed(self, texts: Sequence[str]) -> Vectors:
        with self.lock:
            return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        keys = [hashlib.sha256(f"{self.name}/{self.dim}\0{t}".encode()).hexdigest() for t in texts]
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT key, vector FROM v WHERE key IN ({marks})"
            found.update(self.db.execute(sql, chunk))
        missing = [i for i, k in enumerate(keys) if k not in found]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if missing:
            fresh = self.inner.embed([texts[i] for i in missing])
            rows = [(keys[i], fresh[j].astype("<f4").tobytes()) for j, i in enumerate(missing)]
            self.db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
            self.db.commit()
            found.update(rows)
        for i, key in enumerate(keys):
            out[i] = np.frombuffer(found[key], dtype="<f4")
        return out


class CachedSparse:
    """A sparse encoder whose terms are kept by text hash beside the cached vectors (SPLADE is
    the slowest part of ingesting LongMemEval's long messages). Not for ingest-rate figures."""

    def __init__(self, inner: SparseEncoder | None, path: Path) -> None:
        assert inner is not None, "no sparse encoder to cache"
        self.inner = inner
        self.name = inner.name
        self.db = sqlite3.connect(path, check_same_thread=False)
        self.lock = threading.Lock()
        self.db.execute("CREATE TABLE IF NOT EXISTS s (key TEXT PRIMARY KEY, terms BLOB, w BLOB)")

    def __getattr__(self, name: str) -> Any:  # the encoder's other parts (`loaded`, …)
        return getattr(self.inner, name)

    def encode(self, texts: Sequence[str]) -> list[Terms]:
        import numpy as np

        from brain._indexes import sparse

        with self.lock:
            tag = f"{self.name}/int8={sparse.INT8}"
            keys = [hashlib.sha256(f"{tag}\0{t}".encode()).hexdigest() for t in texts]
            found: dict[str, tuple[bytes, bytes]] = {}
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                sql = f"SELECT key, terms, w FROM s WHERE key IN ({','.join('?' * len(chunk))})"
                found.update((k, (t, w)) for k, t, w in self.db.execute(sql, chunk))
            missing = [i for i, k in enumerate(keys) if k not in found]
            if missing:
                fresh = self.inner.encode([texts[i] for i in missing])
                rows = [
                    (keys[i], t.astype("<i4").tobytes(), w.astype("<f4").tobytes())
                    for i, (t, w) in zip(missing, fresh, strict=True)
                ]
                self.db.executemany("INSERT OR REPLACE INTO s VALUES (?, ?, ?)", rows)
                self.db.commit()
                found.update((k, (t, w)) for k, t, w in rows)
            return [
                (np.frombuffer(found[k][0], "<i4").copy(), np.frombuffer(found[k][1], "<f4").copy())
                for k in keys
            ]


def shipped_encoders(cached: Path | None) -> tuple[Any, Any]:
    """The default MiniLM embedder and the sparse encoder a vault takes from its settings, or,
    with `cached` (a --cache-embeddings file), both behind that cache, SPLADE for the sparse."""
    import os

    from brain._indexes.embedder import load_embedder
    from brain._indexes.sparse import load_sparse
    from brain._settings import model_cache_dir

    models = model_cache_dir(os.environ, Path.home())
    embedder: Any = load_embedder("minilm", models)
    if cached is None:
        return embedder, "settings"
    return CachedEmbedder(embedder, cached), CachedSparse(load_sparse("splade", models), cached)
