"""Half against single precision for stored vectors: recall@10 and scan time, side by side.

    python -m bench.halfprec [--sizes 20000 100000] [--queries 200]

Clustered synthetic unit vectors (384 dimensions: 2,000 centres, each vector a centre plus
noise), exact scans on one thread: faiss's `IndexFlatIP` (float32) against its fp16 scalar
quantiser (what brain stores), alternating in one process; recall@10 of fp16 against float32.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from typing import Any

from bench.metrics import percentile


def main(argv: Sequence[str] | None = None) -> int:
    import faiss
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20000, 100000])
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(0)
    out: list[dict[str, Any]] = []
    for n in args.sizes:
        centres = rng.standard_normal((2000, 384)).astype(np.float32)
        x = centres[rng.integers(0, 2000, n)] + 0.3 * rng.standard_normal((n, 384))
        x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
        q = x[rng.integers(0, n, args.queries)] + 0.1 * rng.standard_normal((args.queries, 384))
        q = np.ascontiguousarray(q, dtype=np.float32)
        ids = np.arange(n, dtype=np.int64)
        single = faiss.IndexIDMap2(faiss.IndexFlatIP(384))
        half = faiss.IndexIDMap2(
            faiss.IndexScalarQuantizer(
                384, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT
            )
        )
        single.add_with_ids(x, ids)
        half.add_with_ids(x, ids)
        times: dict[str, list[float]] = {"single": [], "half": []}
        hits = 0
        for i in range(len(q)):
            found = {}
            for name, index in (("single", single), ("half", half)):
                start = time.perf_counter()
                found[name] = set(index.search(q[i : i + 1], 10)[1][0].tolist())
                times[name].append((time.perf_counter() - start) * 1000)
            hits += len(found["single"] & found["half"])
        out.append(
            {
                "vectors": n,
                "recall_at_10": round(hits / (10 * len(q)), 4),
                **{f"{k}_p50_ms": round(percentile(v, 50), 2) for k, v in times.items()},
                "load": round(os.getloadavg()[0], 2),
            }
        )
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
