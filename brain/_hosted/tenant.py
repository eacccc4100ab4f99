"""Open one tenant's brain from PostgreSQL: the same Brain, its parts in the database."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from pathlib import Path

from brain import _settings as settings_mod
from brain._brain import Brain, models
from brain._clock import Clock, SystemClock
from brain._context import Context
from brain._errors import NotFound
from brain._git.autocommit import Autocommit
from brain._hosted.caches import PgCaches
from brain._hosted.parts import IndexRows, PgJournal, PgLock
from brain._hosted.pool import Pool
from brain._hosted.schema import HostedError
from brain._hosted.sql import TenantDatabase
from brain._hosted.store import PgStore
from brain._indexes.embedder import Embedder
from brain._indexes.nodeindex import NodeIndex
from brain._indexes.ports import Capabilities
from brain._indexes.sparse import SparseEncoder
from brain._settings import SETTINGS_FILE
from brain._vault.paths import check_segment

HOSTED_ROOT = Path("/hosted")  # names a tenant's vault in messages; nothing is read there
# Rows on a server: no folder of this machine, nobody edits them by hand, the database is the
# history (no git), and every note is stored whole (no cold tier, no local-only notes).
HOSTED = Capabilities(
    folder=False, hand_edits=False, connectors=False, cold_tier=False, git=False, local_only=False
)


@dataclass
class PgStorage:
    """The `Storage` of a tenant: every part of the opened vault on one TenantDatabase, which
    borrows a connection of the pool for each transaction."""

    db: TenantDatabase
    embedder: Embedder | None
    sparse: SparseEncoder | None = None
    capabilities: Capabilities = HOSTED

    def alive(self) -> bool:
        """Whether the tenant can still reach its database (a server asks before a write)."""
        return self.db.alive()

    def session(self, *, read_only: bool = False) -> contextlib.AbstractContextManager[None]:
        """One connection and one transaction for a server's tool call (TenantDatabase.session)."""
        return self.db.session(read_only=read_only)

    def attach(self, context: Context) -> None:
        root = context.root
        context.store = store = PgStore(self.db, root)
        context.lock = PgLock(self.db)
        context.journal = PgJournal(self.db)
        context.changes = Autocommit(root, context.settings, context.lock)
        context.changes.enabled = self.capabilities.git
        context.caches = caches = PgCaches(self.db, self.embedder, self.sparse)
        context.node_index = NodeIndex(root, caches.pg_catalog, where=IndexRows(store))
        caches.listeners.append(context.node_index.on_change)
        if context.node_index.stale:
            with context.lock.hold():
                context.node_index.resume(store)


def open_tenant(
    dsn: str | Pool,
    tenant: str,
    *,
    clock: Clock | None = None,
    embedder: Embedder | str | None = "settings",
    sparse: SparseEncoder | str | None = "settings",
    partition: str | None = None,
    model_cache: Path | None = None,
    key: bytes | None = None,
) -> Brain:
    """One tenant's Brain over the database (the user must exist: `brain hosted push`). `dsn`
    may be a server's pool, whose connections the Brain borrows a transaction at a time;
    `key`: the tenants' key, else read from the database (the owner's login only)."""
    check_segment(tenant, "user")
    db = TenantDatabase(dsn, tenant, key)
    try:
        with db.session():  # the opening's reads on one connection, not one each
            if not db.known():
                raise HostedError(
                    f"no user {tenant!r} in the database", "push a vault for it first"
                )
            return _opened(db, tenant, clock, embedder, sparse, partition, model_cache)
    except BaseException:
        db.close()
        raise


def _opened(
    db: TenantDatabase,
    tenant: str,
    clock: Clock | None,
    embedder: Embedder | str | None,
    sparse: SparseEncoder | str | None,
    partition: str | None,
    model_cache: Path | None,
) -> Brain:
    store = PgStore(db, HOSTED_ROOT / tenant)
    try:
        text = store.read_bytes(SETTINGS_FILE).decode("utf-8")
    except FileNotFoundError:
        raise HostedError(
            f"user {tenant!r} has no brain.yaml in the database", "push a vault for it"
        ) from None
    loaded = settings_mod.parse(text, HOSTED_ROOT / tenant / SETTINGS_FILE)
    # The cold tier is compressed files on a disk: a database stores every note whole.
    loaded = replace(loaded, cold_tier=HOSTED.cold_tier and loaded.cold_tier)
    embedder, sparse = models(loaded, embedder, sparse, model_cache)
    context = Context(
        root=HOSTED_ROOT / tenant,
        settings=loaded,
        clock=clock or SystemClock(),
        partition=partition or "",
        embedder=embedder,
        sparse=sparse,
        storage=PgStorage(db, embedder, sparse),
    )
    if context.partition not in context.store.partitions():
        check_segment(context.partition, "partition")
        raise NotFound(f"no partition {context.partition!r} for user {tenant!r}")
    return Brain.over(context)
