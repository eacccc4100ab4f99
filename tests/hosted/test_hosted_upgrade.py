"""Rolling upgrades: a server of this version keeps serving a database a later version only
added to, stops with a clear error at one that changed what it relies on, and an older
`brain hosted init` on a newer database changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import psycopg
import pytest

from bench.http_servers import add_user, call, connect, fresh_database, start
from brain._brain import open_vault
from brain._clock import FixedClock
from brain._hosted.schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    HostedError,
    check_schema,
    init,
    schema_state,
)
from brain._hosted.tenant import open_tenant
from tests.conftest import pushed

N = SCHEMA_VERSION
Steps = dict[int, Callable[[], list[str]]]


def later(*extra: tuple[int, str]) -> Steps:
    """This version's migrations and, after them, what a later version would add."""
    steps: Steps = dict(MIGRATIONS)
    for version, statement in extra:
        steps[version] = lambda statement=statement: [statement]  # type: ignore[misc]
    return steps


EXPAND = (N + 1, "ALTER TABLE objects ADD COLUMN IF NOT EXISTS later_field text")
CONTRACT = (N + 2, "ALTER TABLE objects DROP COLUMN later_field")


def test_a_server_of_this_version_serves_a_database_a_later_version_only_added_to(
    pg_dsn: str,
) -> None:
    db = fresh_database(pg_dsn)
    init(db)
    token = add_user(db, "alice")
    assert init(db, later(EXPAND), {N + 1: N}) == N + 1  # the next version, expanding
    with psycopg.connect(db) as conn:
        assert schema_state(conn) == (N + 1, N)
        check_schema(conn)  # this version: still served
        check_schema(conn, N + 1)  # and the next
    assert init(db) == N + 1  # this version's init on the newer database: nothing applied
    server = start(db, None)  # a real server of this version, beside one of the next

    async def main() -> None:
        async with connect(server.url, token) as mcp:
            note = await call(mcp, "remember", {"text": "The ferry leaves at nine."})
            hits = (await call(mcp, "recall", {"query": "ferry leaves"}))["hits"]
            assert hits[0]["id"] == note["id"]

    try:
        anyio.run(main)
    finally:
        server.stop()


def test_a_server_stops_at_a_version_that_changed_what_it_relies_on(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    init(db)
    init(db, later(EXPAND, CONTRACT), {N + 1: N})  # N + 2 names no older server: contracting
    with psycopg.connect(db) as conn:
        assert schema_state(conn) == (N + 2, N + 2)
        with pytest.raises(HostedError, match=f"version {N + 2} or later; this brain has {N}"):
            check_schema(conn)
        check_schema(conn, N + 2)
    with pytest.raises(AssertionError, match="upgrade brain on this server"):
        start(db, None)  # refused before it listens, in one line


def test_a_database_behind_this_version_is_refused_until_init(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    init(db, {v: MIGRATIONS[v] for v in MIGRATIONS if v < N})
    with psycopg.connect(db) as conn, pytest.raises(HostedError, match="run `brain hosted init"):
        check_schema(conn)
    init(db)
    with psycopg.connect(db) as conn:
        check_schema(conn)


def test_a_database_made_before_the_rule_reads_as_serving_only_its_own_version(
    pg_dsn: str,
) -> None:
    db = fresh_database(pg_dsn)
    init(db)
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("ALTER TABLE brain_migrations DROP COLUMN serves_from")
        assert schema_state(conn) == (N, N)
        check_schema(conn)
    assert init(db) == N  # and init adds the column back without applying anything


def test_texts_written_before_the_glyph_and_word_columns_are_found_by_them_after_init(
    pg_dsn: str, vault: Path, clock: FixedClock
) -> None:
    """Versions 5 and 6 add generated columns (glyphs; words apart, glyph_terms): adding one
    computes every row already written, so a database brought up to them serves none stale
    (brain/_indexes/glyphs.py, glued.py)."""
    db = fresh_database(pg_dsn)
    init(db)
    seeding = open_vault(vault, clock=clock)
    seeding.remember("東京の天気は今日は晴れです。桜がきれいでした。", title="Tokyo diary")
    seeding.remember("Pythonでデータ分析をしました。", title="Data analysis")
    seeding.remember("ฉันชอบแมวมากที่สุด", title="Cats")
    seeding.close()
    pushed(db, vault, clock, user="alice").close()
    with psycopg.connect(db, autocommit=True) as conn:  # the database as version 4 left it
        for column in ("glyphs", "words", "glyph_terms"):
            conn.execute(f"ALTER TABLE texts DROP COLUMN {column}")
        for function in ("brain_glyphs", "brain_apart", "brain_glyph_terms"):
            conn.execute(f"DROP FUNCTION {function}(text)")
        conn.execute("DELETE FROM brain_migrations WHERE version >= 5")
    assert init(db) == N == 8
    brain = open_tenant(db, "alice", clock=clock)
    try:
        for query, title in (("桜", "Tokyo diary"), ("python", "Data analysis"), ("แมว", "Cats")):
            hit = brain.recall(query, mode="text")[0]  # its neighbours after it
            assert (hit.title, hit.band) == (title, "strong"), query
        with psycopg.connect(db) as conn:  # version 5's column, for its servers: computed too
            row = conn.execute("SELECT count(*) FROM texts WHERE glyphs <> ''::tsvector")
            assert row.fetchone() == (2,)
    finally:
        brain.close()


def test_a_memory_an_older_server_wrote_is_dated_updated_as_created_after_version_8(
    pg_dsn: str, vault: Path, clock: FixedClock
) -> None:
    """Version 8 adds objects.updated; a row written without it (NULL) reads as `created`."""
    db = fresh_database(pg_dsn)
    init(db)
    seeding = open_vault(vault, clock=clock)
    note = seeding.remember("The harbour ferry leaves at nine", title="Ferry")
    seeding.close()
    pushed(db, vault, clock, user="alice").close()
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("UPDATE objects SET updated = NULL")
    brain = open_tenant(db, "alice", clock=clock)
    try:
        [hit] = [h for h in brain.recall("harbour ferry") if h.id == note.id]
        assert hit.updated == hit.created == note.created
    finally:
        brain.close()
