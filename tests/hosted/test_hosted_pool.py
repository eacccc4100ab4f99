"""Tenants borrow a process's pooled connections a transaction at a time: what a tenant sets
ends with its transaction, a bulk block's failing write is undone alone, and a pool that
stays busy says so instead of hanging."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from brain._clock import FixedClock
from brain._hosted import writer
from brain._hosted.pool import Pool, PoolBusy
from brain._hosted.sql import TenantDatabase
from brain._hosted.writer import BulkInterrupted
from tests.conftest import pushed


def test_a_write_that_fails_inside_bulk_is_undone_alone(
    hosted_dsn: str, vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = pushed(hosted_dsn, vault, clock)
    db = brain._context.caches.catalog.tenant_db  # type: ignore[attr-defined]
    real = db.executemany

    def executemany(sql: str, rows: Iterable[Any]) -> None:
        rows = list(rows)
        if "INTO texts" in sql and any("Crate 2" in str(row) for row in rows):
            raise OSError("the disk went away")  # after the note's file row, before its text
        real(sql, rows)

    monkeypatch.setattr(db, "executemany", executemany)
    with pytest.raises(OSError), brain.bulk():
        for n in range(3):
            brain.remember(f"Crate {n} holds {n} quince jars.", title=f"Crate {n}")
    monkeypatch.undo()
    titles = {note.title for note in brain.list(kind="titled")}
    assert {"Crate 0", "Crate 1"} <= titles and "Crate 2" not in titles
    stored = db.value(
        "SELECT count(*) FROM vault_files WHERE convert_from(data, 'UTF8') LIKE ?", ("%Crate 2%",)
    )
    assert stored == 0  # no row of the failed write, not even the file written before the error
    brain.close()


def test_a_bulk_block_whose_connection_is_killed_keeps_its_committed_batches_and_says_so(
    hosted_dsn: str, vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection lost inside `bulk()` took every write of the block with it and raised
    psycopg's OperationalError; now the block commits a batch at a time (as the files
    catalog does), so it loses the unfinished batch only, and says which writes it kept."""
    brain = pushed(hosted_dsn, vault, clock)
    db = brain._context.caches.catalog.tenant_db  # type: ignore[attr-defined]
    monkeypatch.setattr(writer, "BATCH_SECONDS", 3600.0)  # each batch ends where the test says
    with pytest.raises(BulkInterrupted) as caught, brain.bulk():
        for n in range(3):
            brain.remember(f"Crate {n} holds {n} quince jars.", title=f"Crate {n}")
        monkeypatch.setattr(writer, "BATCH_SECONDS", 0.0)
        brain.remember("Crate 3 holds three quince jars.", title="Crate 3")  # commits 0-3
        monkeypatch.setattr(writer, "BATCH_SECONDS", 3600.0)
        for n in (4, 5):
            brain.remember(f"Crate {n} holds {n} quince jars.", title=f"Crate {n}")
        pid = db.lent.info.backend_pid
        with psycopg.connect(hosted_dsn, autocommit=True) as other:
            # The next batch holds the writer lock again (taken before its first write).
            held = other.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (pid,)
            ).fetchone()
            assert held == (1,)
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        brain.remember("Crate 6 holds six quince jars.", title="Crate 6")
    said = str(caught.value)
    assert "lost inside a bulk block" in said and "its first 4 writes are kept" in said
    assert "the 2 after them (and the one under way) were not" in said
    assert "write again from write 5" in caught.value.hint
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    titles = {note.title for note in brain.list(kind="titled", limit=50)}
    assert titles >= {f"Crate {n}" for n in range(4)}
    assert not titles & {"Crate 4", "Crate 5", "Crate 6"}
    # The writer lock was taken again after the committed batch, and the brain writes on.
    brain.remember("Crate 7 holds seven quince jars.", title="Crate 7")
    assert "Crate 7" in {note.title for note in brain.list(kind="titled", limit=50)}
    brain.close()


def test_nothing_a_tenant_sets_outlives_its_transaction(hosted_dsn: str) -> None:
    pool = Pool(hosted_dsn, 1)
    db = TenantDatabase(pool, "alice")
    assert db.value("SELECT current_setting('brain.tenant')") == "alice"
    assert db.value("SELECT current_user") == "brain_tenant"
    with pool.connection() as conn:  # the same connection, lent next to anyone
        row = conn.execute(
            "SELECT current_setting('brain.tenant', true), current_user, "
            "current_setting('hnsw.iterative_scan', true)"
        ).fetchone()
        assert row is not None and row[0] in (None, "") and row[1] != "brain_tenant"
        assert row[2] != "strict_order"
        held = conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        ).fetchone()
        assert held == (0,)
    pool.close()


def test_a_writers_lock_ends_with_its_transaction(
    hosted_dsn: str, vault: Path, clock: FixedClock
) -> None:
    brain = pushed(hosted_dsn, vault, clock)
    brain.remember("The shed key hangs by the door.", title="Shed key")
    with psycopg.connect(hosted_dsn, autocommit=True) as admin:
        left = admin.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
            "WHERE l.locktype = 'advisory' AND a.datname = current_database()"
        ).fetchone()
    assert left == (0,)  # taken per transaction: none stays on a connection between calls
    brain.close()


def test_a_pool_busy_for_its_whole_wait_says_so(hosted_dsn: str) -> None:
    pool = Pool(hosted_dsn, 1, wait=0.2)
    taken = pool.take()
    with pytest.raises(PoolBusy) as busy:
        pool.take()
    assert "all 1 database connections" in busy.value.message and busy.value.hint
    pool.give(taken)
    with pool.connection() as conn:  # given back: lent again
        assert conn.execute("SELECT 1").fetchone() == (1,)
    pool.close()


def test_a_pool_never_holds_more_than_its_size(hosted_dsn: str) -> None:
    pool = Pool(hosted_dsn, 3)
    seen: list[int] = []

    def work(n: int) -> None:
        db = TenantDatabase(pool, f"user{n % 5}")
        for _ in range(20):
            db.value("SELECT pg_sleep(0.001)")
            seen.append(pool.held)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert max(seen) <= 3 and len(seen) == 160
    pool.close()
