"""Forget on PostgreSQL: the rows go at once, and `brain hosted sleep` vacuums what they left."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import psycopg

from bench.http_servers import fresh_database
from brain._clock import FixedClock
from brain._hosted import schema
from brain._hosted.upkeep import sleep_all
from brain._vault.journal import Event
from tests.conftest import pushed


def test_a_forgotten_note_is_gone_at_once_and_sleep_vacuums_its_rows(
    pg_dsn: str, vault: Path, clock: FixedClock
) -> None:
    dsn = fresh_database(pg_dsn)  # its own statistics: no other test's tables
    schema.init(dsn)
    brain = pushed(dsn, vault, clock, user="ann")
    kept = brain.remember("The boiler was serviced in May.", title="Boiler")
    note = brain.remember("The safe's code is quince seven.", title="Safe code")
    brain.forget(note.id, "auto")
    brain.close()
    with psycopg.connect(dsn, autocommit=True) as admin:  # the owner: no policy hides a row
        for table, column in (("objects", "note_id"), ("texts", "id"), ("vectors", "id")):
            ids = [r[0] for r in admin.execute(f"SELECT {column} FROM {table}")]
            assert note.id not in ids and kept.id in ids, table
        stored = b"".join(r[0] for r in admin.execute("SELECT data FROM vault_files"))
        assert b"quince seven" not in stored and b"serviced in May" in stored
        before = dict(
            admin.execute("SELECT relname, last_vacuum FROM pg_stat_user_tables").fetchall()
        )
        assert all(before[t] is None for t in schema.TENANT_TABLES)

        sleep_all(dsn, clock, done=None)

        after = {
            str(name): (last, int(dead))
            for name, last, dead in admin.execute(
                "SELECT relname, last_vacuum, n_dead_tup FROM pg_stat_user_tables"
            )
        }
    for table in schema.TENANT_TABLES:
        last, dead = after[table]
        assert last is not None, f"{table} was not vacuumed"
        assert dead == 0, f"{table} keeps {dead} dead tuples"


def test_a_dry_run_sleep_vacuums_nothing(pg_dsn: str, vault: Path, clock: FixedClock) -> None:
    dsn = fresh_database(pg_dsn)
    schema.init(dsn)
    pushed(dsn, vault, clock, user="bob").close()
    sleep_all(dsn, clock, dry_run=True, done=None)
    with psycopg.connect(dsn, autocommit=True) as admin:
        rows = admin.execute("SELECT relname, last_vacuum FROM pg_stat_user_tables").fetchall()
    assert all(last is None for name, last in rows if name in schema.TENANT_TABLES)


def test_the_journal_drops_the_last_entry_equal_to_an_event(
    pg_dsn: str, vault: Path, clock: FixedClock
) -> None:
    dsn = fresh_database(pg_dsn)
    schema.init(dsn)
    brain = pushed(dsn, vault, clock, user="cid")
    journal = brain._context.journal
    aged = Event("2026-12-02T10:31:00Z", "aged", "01A", "Tea", "main", "normal", "a → b")
    other = Event("2026-12-02T10:32:00Z", "moved", "01A", "Tea", "main", "normal", "hot → cold")
    for event in (aged, other, aged):
        journal.append(event)
    journal.drop([aged, replace(other, id="01B")])
    assert list(journal.events()) == [aged, other]
    brain.close()
