"""Are a tenant's vector hits right in a big shared database? The server's list against exact.

python -m bench.hosted_exact --db DSN [--tenants 20] [--queries 10]

For a sample of the tenants of a seeded database (bench.hosted_seed), each query is embedded
as the server embeds it (hashing) and searched as the server searches (PgVectors.search, k = 10
and the 200 that recall's filtered step asks for), and as before the change: the planner's
choice for `ORDER BY <=>` with the tenant's policy (an HNSW scan of the shared index,
iterative, strict order). Both against an exact scan of the tenant's own vectors: recall@10,
hits returned, ms. Then EXPLAIN ANALYZE of the two, and of a full-text query. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from bench.metrics import percentile
from bench.scale import queries
from brain._hosted.search import PgVectors, _literal, or_query
from brain._hosted.sql import TenantDatabase
from brain._indexes.embedder import HashingEmbedder

DIM = 256
BEFORE = (
    "SELECT id FROM vectors, (SELECT %s::vector(256) AS q) query WHERE dims = 256 "
    "ORDER BY embedding::vector(256) <=> q LIMIT %s"
)
EXACT = (
    "SELECT id FROM vectors, (SELECT %s::vector(256) AS q) query WHERE dims = 256 "
    "ORDER BY cosine_distance(embedding::vector(256), q), id LIMIT %s"
)
TEXT = (
    "SELECT t.id, ts_rank_cd(t.tsv, q, 1) AS score FROM texts t JOIN objects o ON o.id = t.id, "
    "to_tsquery('english', %s) q WHERE t.tsv @@ q ORDER BY score DESC, t.id LIMIT 200"
)


def raw(db: TenantDatabase, sql: str, params: tuple[Any, ...]) -> Any:
    """psycopg's `%s` SQL, run as the tenant (TenantDatabase takes `?`)."""
    return db.execute(sql.replace("%s", "?"), params)


def plan(db: TenantDatabase, sql: str, params: tuple[Any, ...]) -> list[str]:
    rows = raw(db, "EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF) " + sql, params)
    return [str(r[0])[:160] for r in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--tenants", type=int, default=20)
    parser.add_argument("--queries", type=int, default=10)
    args = parser.parse_args()
    embedder = HashingEmbedder(DIM)
    asked = queries(args.tenants * args.queries)
    stats: dict[str, dict[str, list[float]]] = {
        name: {"recall10": [], "hits10": [], "hits200": [], "ms": []} for name in ("before", "now")
    }
    plans: dict[str, list[str]] = {}
    for t in range(args.tenants):
        name = f"t{t * (100 // args.tenants):03d}"
        db = TenantDatabase(args.db, name)
        vectors = PgVectors(db, DIM, "hashing")
        mine = args.queries
        for query in asked[t * mine : (t + 1) * mine]:
            q = embedder.embed([query])[0]
            literal = _literal(q)
            exact10 = [r[0] for r in raw(db, EXACT, (literal, 10))]
            for variant in ("before", "now"):
                begun = time.perf_counter()
                if variant == "before":
                    got10 = [r[0] for r in raw(db, BEFORE, (literal, 10))]
                    ms = (time.perf_counter() - begun) * 1000
                    got200 = raw(db, BEFORE, (literal, 200)).fetchall()
                else:
                    got10 = [oid for oid, _ in vectors.search(q, 10)]
                    ms = (time.perf_counter() - begun) * 1000
                    got200 = [(oid,) for oid, _ in vectors.search(q, 200)]
                s = stats[variant]
                s["recall10"].append(len(set(got10) & set(exact10)) / max(1, len(exact10)))
                s["hits10"].append(len(got10))
                s["hits200"].append(len(got200))
                s["ms"].append(ms)
        if t == 0:
            literal = _literal(embedder.embed([asked[0]])[0])
            plans["vectors_before"] = plan(db, BEFORE, (literal, 200))
            plans["vectors_now"] = plan(db, EXACT, (literal, 200))
            plans["text"] = plan(db, TEXT, (or_query(asked[0]),))
        db.close()
    result: dict[str, Any] = {"tenants": args.tenants, "queries_per_tenant": args.queries}
    for variant, s in stats.items():
        ms = sorted(s["ms"])
        result[variant] = {
            "recall_at_10": round(sum(s["recall10"]) / len(s["recall10"]), 4),
            "min_recall_at_10": min(s["recall10"]),
            "hits_of_10_min": min(s["hits10"]),
            "hits_of_200_min": min(s["hits200"]),
            "hits_of_200_mean": round(sum(s["hits200"]) / len(s["hits200"]), 1),
            "p50_ms": round(percentile(ms, 50), 2),
            "p95_ms": round(percentile(ms, 95), 2),
        }
    result["load"] = round(os.getloadavg()[0], 2)
    result["plans"] = plans
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
