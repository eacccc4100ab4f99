"""Recall@10 of a kept vault's IVF index against exact search, at several lists probed.

    python -m bench.ivf_probe --vault DIR [--nprobe 16 24 32 48 64 96] [--queries 300]

DIR: a vault kept by `bench.scale --keep` whose vectors are in an IVF index (above
approximate.THRESHOLD, after `brain sleep` or the benchmark's rebuild). The queries are
bench/scale.py's, embedded by the vault's own embedder; the truth is an exact inner-product
scan of the same (half-precision) vectors. One thread, as a recall searches.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path

from bench.scale import queries
from brain import open_vault
from brain._indexes import approximate


def main(argv: Sequence[str] | None = None) -> int:
    import faiss
    import numpy as np

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--nprobe", type=int, nargs="+", default=[16, 24, 32, 48, 64, 96])
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    brain = open_vault(args.vault)
    if brain._context.embedder is None:
        raise SystemExit(f"{args.vault}: brain.yaml names no embedder")
    raw = brain._context.caches.vectors._ensure()
    if approximate.kind(raw) != approximate.IVF:
        raise SystemExit(f"{args.vault}: the vectors are in a flat index; run `brain sleep`")
    matrix, fids = approximate.contents(raw)
    exact = faiss.IndexFlatIP(matrix.shape[1])
    exact.add(matrix)
    vectors = np.asarray(brain._context.embedder.embed(queries(args.queries)), dtype=np.float32)
    _, rows = exact.search(vectors, 10)
    truth = [set(fids[row].tolist()) for row in rows]
    faiss.omp_set_num_threads(1)
    ivf = faiss.extract_index_ivf(raw)
    print(f"{int(raw.ntotal)} vectors, {int(ivf.nlist)} lists, load {os.getloadavg()[0]:.1f}")
    print("| lists probed | recall@10 | ms a query |\n|---:|---:|---:|")
    for nprobe in args.nprobe:
        ivf.nprobe = nprobe
        hits = 0
        start = time.perf_counter()
        for vector, wanted in zip(vectors, truth, strict=True):
            _, labels = raw.search(vector.reshape(1, -1), 10)
            hits += len(set(labels[0].tolist()) & wanted)
        took = (time.perf_counter() - start) * 1000 / len(vectors)
        print(f"| {nprobe} | {hits / (10 * len(vectors)):.4f} | {took:.3f} |")
    brain.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
