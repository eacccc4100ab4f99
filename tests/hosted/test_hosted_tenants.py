"""The tenant providers: each model, dense and learned-sparse, is loaded once per process."""

from __future__ import annotations

from pathlib import Path

from brain._clock import FixedClock
from brain._hosted.schema import init as init_schema
from brain._hosted.tenants import FilesTenants, PgTenants
from brain._indexes.sparse import HashingSparse


def test_files_tenants_share_one_embedder_and_one_sparse_encoder(
    tmp_path: Path, clock: FixedClock
) -> None:
    tenants = FilesTenants(tmp_path / "users", embedder="hashing", clock=clock)
    for user in ("alice", "bob"):  # made from the template, then told which encoders
        tenants.open(user).close()
        with (tmp_path / "users" / user / "brain.yaml").open("a") as settings:
            settings.write("sparse: hashing\n")
    alice, bob = tenants.open("alice"), tenants.open("bob")
    assert alice._context.embedder is bob._context.embedder and alice._context.embedder is not None
    assert (
        isinstance(alice._context.sparse, HashingSparse)
        and alice._context.sparse is bob._context.sparse
    )
    alice.close()
    bob.close()
    tenants.close()


def test_postgres_tenants_with_a_named_model_share_its_sparse_encoder(
    pg_dsn: str, clock: FixedClock, tmp_path: Path
) -> None:
    from bench.http_servers import fresh_database

    db = fresh_database(pg_dsn)
    init_schema(db)
    tenants = PgTenants(db, embedder="hashing", clock=clock)
    alice, bob = tenants.open("alice"), tenants.open("bob")
    assert (
        alice._context.embedder is bob._context.embedder
        and alice._context.sparse is bob._context.sparse
    )
    assert alice._context.sparse is None  # the hashing model's default: no learned-sparse terms
    alice.close()
    bob.close()
    tenants.close()
