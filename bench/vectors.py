"""Exact against approximate vectors: query time and recall@10 of flat and IVF faiss indexes.

    python -m bench.vectors --sizes 10000 20000 100000 [--embedder hashing|minilm|synthetic]

Vectors are those of bench/scale.py's synthetic memories: `hashing` (fast, any size), `minilm`
(the real model; slow to embed), or `synthetic` — hashing vectors of 20k memories, each copied
with small Gaussian noise up to the size (clustered like real ones; for 1M). Queries are
bench/scale.py's, embedded the same way. One thread per query, as brain searches.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.metrics import percentile
from bench.scale import memories, queries
from brain._indexes import approximate
from brain._indexes.embedder import HashingEmbedder, load_embedder
from brain._settings import model_cache_dir


def vectors_for(count: int, embedder_name: str) -> tuple[np.ndarray, Any]:
    """`count` unit vectors and the embedder that made them (it embeds the queries too)."""
    if embedder_name == "minilm":
        embedder = load_embedder("minilm", model_cache_dir(os.environ, Path.home()))
    else:
        embedder = HashingEmbedder(384)
    assert embedder is not None
    base = count if embedder_name != "synthetic" else min(count, 20_000)
    texts = [m.text for m in memories(base)]
    matrix = np.vstack([embedder.embed(texts[i : i + 256]) for i in range(0, base, 256)])
    if base < count:
        rng = np.random.default_rng(3)
        picks = rng.integers(0, base, size=count - base)
        noisy = matrix[picks] + rng.normal(0, 0.02, size=(count - base, matrix.shape[1]))
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        matrix = np.vstack([matrix, noisy.astype(np.float32)])
    return np.ascontiguousarray(matrix, dtype=np.float32), embedder


def measure(matrix: np.ndarray, query_vectors: np.ndarray, k: int = 10) -> dict[str, Any]:
    import faiss

    faiss.omp_set_num_threads(1)
    fids = np.arange(len(matrix), dtype=np.int64)
    flat = approximate.build(matrix, fids, approximate.FLAT)
    started = time.perf_counter()
    ivf = approximate.build(matrix, fids, approximate.IVF)
    build_s = time.perf_counter() - started
    result: dict[str, Any] = {
        "vectors": len(matrix),
        "nlist": int(ivf.nlist),
        "ivf_build_s": round(build_s, 2),
    }
    truth = []
    for name, index in (("flat", flat), ("ivf", ivf)):
        params = approximate.search_params(index, None, None)
        times, found = [], []
        for row in query_vectors:
            started = time.perf_counter()
            _scores, labels = index.search(row.reshape(1, -1), k, params=params)
            times.append((time.perf_counter() - started) * 1000)
            found.append(set(labels[0].tolist()))
        if name == "flat":
            truth = found
        else:
            hits = sum(len(f & t) for f, t in zip(found, truth, strict=True))
            result["recall_at_10"] = round(hits / sum(len(t) for t in truth), 4)
        result[f"{name}_p50_ms"] = round(percentile(times, 50), 3)
        result[f"{name}_p95_ms"] = round(percentile(times, 95), 3)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000, 100_000])
    parser.add_argument("--embedder", choices=("hashing", "minilm", "synthetic"), default="hashing")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for size in args.sizes:
        matrix, embedder = vectors_for(size, args.embedder)
        query_vectors = np.asarray(embedder.embed(queries(args.queries)), dtype=np.float32)
        row = {
            "embedder": args.embedder,
            **measure(matrix, query_vectors),
            "load_average": [round(x, 2) for x in os.getloadavg()],
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
