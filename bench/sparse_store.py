"""The learned-sparse index's bytes per memory, old row format against new, and its rankings.

    python -m bench.sparse_store --memories 10000 --queries 300 [--terms F.npz] [--encoder E]

Encodes bench/scale.py's memories with SPLADE (`--encoder hashing`: the test encoder) once
(`--terms F.npz` keeps them for the next run), then stores the same terms twice, side by
side: in schema 1's rows (TEXT id primary key in a rowid table, the hex hash, int32 ids and
float32 weights in two blobs) and in `SparseIndex` as it is now (one blob of uint16 ids and
fp16 weights, an 8-byte hash, WITHOUT ROWID); both vacuumed, measured with `dbstat`. Then,
for each query, the top 10 of an exact float32 dot product against the top 10 the index
returns: the share of queries whose ten are the same ids in the same order, and as a set.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.scale import memories, queries
from brain._indexes.objects import text_hash
from brain._indexes.postings import SparseIndex
from brain._indexes.sparse import VOCABULARY, load_sparse
from brain._model import new_id
from brain._settings import model_cache_dir


def encode(texts: Sequence[str], name: str, cache: Path | None) -> list[Any]:
    """Each text's (term ids, weights), from `cache` if it holds them for these texts."""
    if cache is not None and cache.exists():
        data = np.load(cache)
        if int(data["count"]) == len(texts) and str(data["encoder"]) == name:
            ids, weights, sizes = data["ids"], data["weights"], data["sizes"]
            cuts = np.cumsum(sizes)[:-1]
            return list(zip(np.split(ids, cuts), np.split(weights, cuts), strict=True))
    encoder = load_sparse(name, model_cache_dir(os.environ, Path.home()))
    assert encoder is not None
    out: list[Any] = []
    for start in range(0, len(texts), 256):
        out.extend(encoder.encode(texts[start : start + 256]))
    if cache is not None:
        np.savez(
            cache,
            count=len(texts),
            encoder=name,
            sizes=[len(t[0]) for t in out],
            ids=np.concatenate([t[0] for t in out]),
            weights=np.concatenate([t[1] for t in out]),
        )
    return out


def table_bytes(path: Path) -> dict[str, int]:
    db = sqlite3.connect(path)
    try:
        db.execute("VACUUM")
        rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    finally:
        db.close()
    return {str(name): int(size) for name, size in rows} | {"file": path.stat().st_size}


def old_format(path: Path, rows: Sequence[tuple[str, str, Any]]) -> None:
    """Schema 1's table, written as that code wrote it."""
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE terms (object_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL,"
        " ids BLOB NOT NULL, weights BLOB NOT NULL)"
    )
    with db:
        db.executemany(
            "INSERT INTO terms VALUES (?, ?, ?, ?)",
            [(o, h, i.astype("<i4").tobytes(), w.astype("<f4").tobytes()) for o, h, (i, w) in rows],
        )
    db.close()


def rankings(
    index: SparseIndex, terms: Sequence[Any], ids: Sequence[str], asked: Sequence[Any]
) -> dict[str, Any]:
    """Top 10 of the exact float32 scores against the index's, per query."""
    # The same posting lists as the index's, but of the float32 weights the encoder gave.
    all_ids = np.concatenate([t for t, _ in terms])
    owners = np.repeat(np.arange(len(terms)), [len(t) for t, _ in terms])
    order = np.argsort(all_ids, kind="stable")
    rows_by_term, weights_by_term = owners[order], np.concatenate([w for _, w in terms])[order]
    start = np.searchsorted(all_ids[order], np.arange(VOCABULARY + 1))
    same_order = same_set = 0
    overlap = 0.0
    for q_ids, q_weights in asked:
        scores = np.zeros(len(terms), dtype=np.float64)
        for term, weight in zip(q_ids.tolist(), q_weights.tolist(), strict=True):
            lo, hi = start[term], start[term + 1]
            np.add.at(scores, rows_by_term[lo:hi], weights_by_term[lo:hi] * np.float32(weight))
        hits = np.flatnonzero(scores > 0)
        exact = sorted(((ids[r], float(scores[r])) for r in hits), key=lambda h: (-h[1], h[0]))
        want = [oid for oid, _ in exact[:10]]
        got = [oid for oid, _ in index.search((q_ids, q_weights), 10)]
        same_order += got == want
        same_set += set(got) == set(want)
        overlap += len(set(got) & set(want)) / max(len(want), 1)
    n = len(asked)
    return {
        "queries": n,
        "top10_same_order": round(same_order / n, 4),
        "top10_same_set": round(same_set / n, 4),
        "top10_overlap": round(overlap / n, 4),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--encoder", default="splade")
    parser.add_argument("--terms", type=Path, help="keep the encoded terms here (npz)")
    args = parser.parse_args(argv)
    texts = [m.text for m in memories(args.memories)]
    start = time.perf_counter()
    terms = encode(texts, args.encoder, args.terms)
    took = time.perf_counter() - start
    ids = [new_id_for(n) for n in range(len(texts))]
    rows = [(oid, text_hash(text), t) for oid, text, t in zip(ids, texts, terms, strict=True)]
    per_memory = sum(len(t[0]) for t in terms) / len(terms)
    report: dict[str, Any] = {
        "memories": len(texts),
        "encoder": args.encoder,
        "encode_s": round(took, 1),
        "terms_per_memory": round(per_memory, 1),
        "load": round(os.getloadavg()[0], 2),
    }
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old.sqlite"
        old_format(old, rows)
        index = SparseIndex(Path(tmp) / "new", args.encoder)
        for start in range(0, len(rows), 256):
            index.upsert(rows[start : start + 256])
        index.compact()
        sizes = {"schema 1": table_bytes(old), "schema 2": table_bytes(index.path)}
        report["bytes_per_memory"] = {
            name: {part: round(size / len(texts), 1) for part, size in parts.items()}
            for name, parts in sizes.items()
        }
        encoder = load_sparse(args.encoder, model_cache_dir(os.environ, Path.home()))
        assert encoder is not None
        asked = encoder.encode(queries(args.queries))
        report["rankings"] = rankings(index, terms, ids, asked)
        index.close()
    print(json.dumps(report, indent=2))
    return 0


def new_id_for(n: int) -> str:
    """Object ids shaped as brain's (ULIDs), in order."""
    from datetime import UTC, datetime, timedelta

    base = datetime(2026, 1, 1, tzinfo=UTC)
    return new_id(base + timedelta(milliseconds=n))


if __name__ == "__main__":
    raise SystemExit(main())
