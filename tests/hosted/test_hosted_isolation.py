"""Tenants of one database see nothing of each other: not by id, path, query or count, and
row-level security holds even for a statement that forgot the tenant."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from brain._brain import Brain
from brain._clock import FixedClock
from brain._errors import BrainError, InvalidInput, NotFound
from brain._hosted.roles import ROLE
from brain._hosted.sql import TenantDatabase
from tests.conftest import pushed


@pytest.fixture
def pair(hosted_dsn: str, vault: Path, clock: FixedClock) -> Iterator[tuple[Brain, Brain]]:
    alice = pushed(hosted_dsn, vault, clock)
    bob = pushed(hosted_dsn, vault, clock)
    yield alice, bob
    alice.close()
    bob.close()


def test_the_other_tenant_finds_nothing_by_id_query_or_list(pair: tuple[Brain, Brain]) -> None:
    alice, bob = pair
    secret = alice.remember("Alice's quince jam recipe uses cardamom.", title="Quince jam")
    assert [h.id for h in alice.recall("quince cardamom")] == [secret.id]
    for mode in ("text", "vector", "hybrid"):
        assert bob.recall("quince cardamom jam", mode=mode) == []
    for ask in (bob.expand, bob._context.get, bob.history, bob.links):
        with pytest.raises(NotFound):
            ask(secret.id)
    with pytest.raises(NotFound):
        bob.forget(secret.id)
    with pytest.raises(NotFound):
        bob.correct(secret.id, "Bob's version")
    # Text that a query language or SQL would read as syntax is only words here.
    for hostile in (
        "quince') | ('cardamom",
        "quince & !x | (jam:*)",
        "x' OR tenant IS NOT NULL --",
        "%quince%",
        "quince?",
        "\\' ; DROP TABLE objects; --",
    ):
        for mode in ("text", "hybrid"):
            assert bob.recall(hostile, mode=mode) == [], hostile
    assert [h.id for h in alice.recall("quince') | ('cardamom", mode="text")] == [secret.id]
    assert secret.id not in [r.id for r in bob.list()]
    assert bob._context.caches.catalog.get(secret.id) is None
    assert bob._context.caches.fulltext.stored(secret.id) is None
    assert bob._context.caches.vectors.vectors([secret.id]) == {}
    # Counts do not leak: bob's are what his own vault holds, whatever alice writes.
    before = (
        bob._context.caches.catalog.count(),
        len(bob._context.caches.fulltext),
        len(bob._context.caches.vectors),
    )
    alice.remember("More of alice.", title="More")
    assert (
        bob._context.caches.catalog.count(),
        len(bob._context.caches.fulltext),
        len(bob._context.caches.vectors),
    ) == before
    assert alice.expand(secret.id).id == secret.id  # and alice still has it


def test_hostile_paths_never_reach_another_tenant_or_the_disk(pair: tuple[Brain, Brain]) -> None:
    alice, bob = pair
    note = alice.remember("Alice only.", title="Private plans")
    for path in (
        note.path,
        f"../{note.path}",
        f"/{note.path}",
        "../../etc/passwd",
        f".brain/{note.path}",
        f"main/../../{note.path}",
    ):
        with pytest.raises((FileNotFoundError, InvalidInput)):
            bob._context.store.read_bytes(path)
    assert not bob._context.store.exists(note.path)
    with pytest.raises(BrainError):
        bob.remember("x", title="t", node="../../other")
    assert alice._context.store.read_bytes(note.path)  # where it is, for its owner


def test_row_level_security_holds_for_a_query_without_the_tenant(
    pair: tuple[Brain, Brain], hosted_dsn: str
) -> None:
    alice, bob = pair
    alice.remember("Alice's note.", title="Alice")
    db = TenantDatabase(hosted_dsn, bob.root.name)
    try:
        # No WHERE at all: the policy adds the tenant.
        tenants = db.execute("SELECT DISTINCT tenant FROM objects").fetchall()
        assert tenants == [(bob.root.name,)]
        for table in ("vault_files", "files", "texts", "vectors", "relations", "node_counts"):
            named = db.value(f"SELECT count(*) FROM {table} WHERE tenant = ?", (alice.root.name,))
            assert named == 0, table
        # Writing a row for another tenant is refused by the policy's check.
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            db.execute(
                "INSERT INTO info (key, value, tenant) VALUES ('x', 'y', ?)", (alice.root.name,)
            )
    finally:
        db.close()
    # The role itself is neither a superuser nor able to skip the policies.
    with psycopg.connect(hosted_dsn) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s", (ROLE,)
        ).fetchone()
        assert row == (False, False, False)
        forced = conn.execute(
            "SELECT count(*) FROM pg_class WHERE relname IN ('objects', 'vault_files') "
            "AND relrowsecurity AND relforcerowsecurity"
        ).fetchone()
        assert forced == (2,)


def test_an_unknown_user_or_a_bad_name_is_one_clear_error(hosted_dsn: str) -> None:
    from brain._hosted.tenant import open_tenant

    with pytest.raises(BrainError, match="no user"):
        open_tenant(hosted_dsn, f"nobody{uuid.uuid4().hex[:6]}")
    with pytest.raises(InvalidInput):
        open_tenant(hosted_dsn, "../alice")
