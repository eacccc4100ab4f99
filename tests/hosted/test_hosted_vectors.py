"""Vector search of one tenant among many: the tenant's true nearest, never fewer than it has.

pgvector filters after an HNSW scan: the tenant's policy keeps one row in a hundred of a shared
index, and a scan that stops early (ef_search, max_scan_tuples) returns too few or the wrong
ones. Small here, so the test makes the scan short; at 1M rows the defaults do the same
(docs/lab/hosted.md, "100 tenants × 10k memories").
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from bench.http_servers import fresh_database
from brain._hosted import schema
from brain._hosted.search import PgVectors
from brain._hosted.sql import TenantDatabase

DIM = 256


def unit(rng: np.random.Generator, count: int) -> np.ndarray:
    v = rng.standard_normal((count, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def crowded(pg_dsn: str) -> Iterator[tuple[str, np.ndarray]]:
    """40 tenants of 100 vectors and one, `few`, of 12: its vectors."""
    dsn = fresh_database(pg_dsn)
    schema.init(dsn)
    rng = np.random.default_rng(5)
    for n in range(40):
        db = TenantDatabase(dsn, f"crowd{n}")
        PgVectors(db, DIM, "hashing").upsert([f"c{n}-{i}" for i in range(100)], unit(rng, 100))
        db.close()
    mine = unit(rng, 12)
    db = TenantDatabase(dsn, "few")
    PgVectors(db, DIM, "hashing").upsert([f"f{i}" for i in range(12)], mine)
    db.close()
    with schema.connect(dsn) as admin:
        admin.execute("ANALYZE vectors")
    yield dsn, mine


def short_scans(db: TenantDatabase) -> None:
    """What a big shared index does to a small tenant, at this size: a short HNSW scan, and a
    planner that takes the index whenever it can (as it does at 1M rows). For the rest of the
    session's transaction, which the caller holds open."""
    for setting in (
        "hnsw.ef_search = 10",
        "hnsw.max_scan_tuples = 40",
        "enable_seqscan = off",
        "enable_bitmapscan = off",
        "enable_sort = off",
    ):
        db.execute(f"SET LOCAL {setting}")


def test_a_small_tenant_gets_its_exact_nearest_from_a_shared_hnsw_index(
    crowded: tuple[str, np.ndarray],
) -> None:
    dsn, mine = crowded
    db = TenantDatabase(dsn, "few")
    with db.session():
        short_scans(db)
        vectors = PgVectors(db, DIM, "hashing")
        rng = np.random.default_rng(11)
        for query in unit(rng, 5):
            exact = [f"f{i}" for i in np.argsort(-(mine @ query), kind="stable")[:10]]
            found = vectors.search(query, 10)
            assert [oid for oid, _ in found] == exact
            scores = [s for _, s in found]
            assert scores == sorted(scores, reverse=True)
        assert len(vectors.search(unit(rng, 1)[0], 50)) == 12  # all it has, no more, no less
    db.close()


def test_a_search_among_allowed_ids_is_exact_too(crowded: tuple[str, np.ndarray]) -> None:
    dsn, mine = crowded
    db = TenantDatabase(dsn, "few")
    allowed = {f"f{i}" for i in range(0, 12, 2)}
    query = unit(np.random.default_rng(3), 1)[0]
    order = [f"f{i}" for i in np.argsort(-(mine @ query), kind="stable")]
    with db.session():
        short_scans(db)
        found = PgVectors(db, DIM, "hashing").search(query, 4, allowed)
    assert [oid for oid, _ in found] == [oid for oid in order if oid in allowed][:4]
    db.close()
