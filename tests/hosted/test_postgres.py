"""The test PostgreSQL is real: pgvector's cosine distance and text search answer."""

from __future__ import annotations

import psycopg


def test_the_test_database_has_pgvector_and_text_search(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("create extension if not exists vector")
        distance = conn.execute("select '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
        found = conn.execute(
            "select to_tsvector('english', 'the launch moved') @@ plainto_tsquery('launches')"
        ).fetchone()
    assert distance == (1.0,)
    assert found == (True,)
