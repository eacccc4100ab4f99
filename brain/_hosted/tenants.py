"""Where each tenant's brain lives: the `Tenants` seam; one vault folder, or PostgreSQL.

`brain serve --http` asks a provider for a tenant's Brain when that tenant's first request
comes: the files provider keeps one vault per tenant under a root folder (a team server on one
machine), the PostgreSQL provider keeps every tenant in one database.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from pathlib import Path
from typing import Protocol

from brain._brain import Brain, open_vault
from brain._clock import Clock, SystemClock
from brain._errors import InvalidInput
from brain._hosted.pool import Pool, admin
from brain._hosted.roles import KEY_FILE, check_key, login_warning, stored_key
from brain._hosted.schema import check_schema
from brain._hosted.sql import known_tenant
from brain._hosted.tenant import open_tenant
from brain._hosted.tokens import check_name
from brain._hosted.transfer import create
from brain._indexes.embedder import Embedder, load_embedder
from brain._indexes.sparse import SparseEncoder, load_sparse
from brain._settings import SETTINGS_FILE, default_sparse
from brain._settings import load as load_settings
from brain._vault.files import WriterLock, atomic_write
from brain._vault.template import init_vault

MAX_CONNECTIONS = 10  # a server's connections to PostgreSQL unless --max-connections says
CATCH_UP_EVERY = 1.0  # seconds between walks for hand edits in a tenant's folder, as the daemon


class Tenants(Protocol):
    """Opens the Brain of one tenant; each call gives a Brain of its own, closed by the caller."""

    def open(self, tenant: str) -> Brain: ...

    def known(self, tenant: str) -> bool:
        """Whether the tenant's brain is still there (an administrator may have deleted it
        since this server opened it)."""
        ...

    def close(self) -> None: ...


class FilesTenants:
    """One vault per tenant under `root`, made from vault-template on the tenant's first use.

    Several servers may share the root (a shared disk): the vaults' own writer locks serialise
    their writes and their caches learn of each other's, as for two local processes. One
    embedder of each kind is loaded per process and shared by every tenant's Brain.
    """

    def __init__(
        self,
        root: Path,
        *,
        embedder: str | None = None,
        model_cache: Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.root = root
        self.new_embedder = embedder  # brain.yaml's `embedder` for vaults made here
        self.model_cache = model_cache or Path.home() / ".cache" / "brain" / "models"
        self.clock = clock or SystemClock()
        self._embedders: dict[str, Embedder | None] = {}
        self._sparse: dict[str, SparseEncoder | None] = {}
        # The folder holds every tenant's memory: no one else may even list the names.
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        root.chmod(0o700)
        self._creating = WriterLock(root / ".tenants.lock")
        self._loading = threading.Lock()  # a server opens tenants on several threads at once

    def open(self, tenant: str) -> Brain:
        vault = self.root / check_name(tenant)
        if not (vault / SETTINGS_FILE).is_file():
            self._create(vault)
        settings = load_settings(vault)
        name, terms = settings.embedder, settings.sparse
        with self._loading:  # each model loaded once, whichever tenant asks first
            if name not in self._embedders:
                self._embedders[name] = load_embedder(name, self.model_cache)
            if terms not in self._sparse:  # one SPLADE session per process, not one per tenant
                self._sparse[terms] = load_sparse(terms, self.model_cache)
        brain = open_vault(
            vault, clock=self.clock, embedder=self._embedders[name], sparse=self._sparse[terms]
        )
        # Other servers' writes reach this one through the shared caches; the walk of the
        # files is only for hand edits, and a long-lived server need not make it every read.
        brain.running().look_every(CATCH_UP_EVERY)
        return brain

    def known(self, tenant: str) -> bool:
        return (self.root / check_name(tenant) / SETTINGS_FILE).is_file()

    def close(self) -> None:
        self._embedders.clear()
        self._sparse.clear()

    def _create(self, vault: Path) -> None:
        # Under a lock over the root: two servers meeting a new tenant at once make one vault.
        with self._creating.hold():
            if not init_vault(vault, self.clock.now()) or self.new_embedder is None:
                return
            settings = vault / SETTINGS_FILE
            text = settings.read_text(encoding="utf-8")
            chosen = re.sub(r"^embedder: \S+", f"embedder: {self.new_embedder}", text, flags=re.M)
            atomic_write(settings, chosen)


class PgTenants:
    """Every tenant's brain in one PostgreSQL (brain/_hosted/tenant.py), made from the vault
    template on the tenant's first use, as the files provider makes a folder.

    With `embedder` named, every tenant shares one loaded model (and new brains name it in
    their brain.yaml); without, each brain loads the embedder its own brain.yaml names.
    `key` is the tenants' key (`--tenant-key`); without it, it is read from the database,
    which only a login that should not serve may do (and the log says so).
    """

    def __init__(
        self,
        source: str | Pool,
        *,
        embedder: str | None = None,
        clock: Clock | None = None,
        statement_timeout: float | None = None,
        key: bytes | None = None,
    ):
        # Every tenant borrows the server's connections a transaction at a time. A statement
        # that runs longer than `statement_timeout` (a lock held elsewhere, a frozen disk) is
        # cancelled: one tenant's call fails instead of holding a worker and a connection.
        self.pool = (
            source
            if isinstance(source, Pool)
            else Pool(source, MAX_CONNECTIONS, statement_timeout=statement_timeout)
        )
        self.new_embedder = embedder
        self.clock = clock or SystemClock()
        cache = Path.home() / ".cache" / "brain" / "models"
        self._shared = load_embedder(embedder, cache) if embedder is not None else None
        # With a shared model, its learned-sparse encoder is shared too (brain.yaml's default
        # for that model, as a new tenant's brain.yaml has it).
        self._shared_sparse = (
            load_sparse(default_sparse(embedder), cache) if embedder is not None else None
        )
        with admin(self.pool) as conn:
            check_schema(conn)  # `brain hosted init` first: said before anything listens
            self.key = stored_key(conn, KEY_FILE) if key is None else key
            check_key(conn, self.key)
            warning = login_warning(conn)
        if warning:
            logging.getLogger("brain.serve").warning(warning)

    def open(self, tenant: str) -> Brain:
        check_name(tenant)
        if not known_tenant(self.pool, tenant, self.key):
            with contextlib.suppress(InvalidInput):  # another server made it a moment ago
                create(self.pool, tenant, self.clock, embedder=self.new_embedder, key=self.key)
        if self.new_embedder is None:
            return open_tenant(self.pool, tenant, clock=self.clock, key=self.key)
        return open_tenant(
            self.pool,
            tenant,
            clock=self.clock,
            embedder=self._shared,
            sparse=self._shared_sparse,
            key=self.key,
        )

    def known(self, tenant: str) -> bool:
        return known_tenant(self.pool, check_name(tenant), self.key)

    def close(self) -> None:
        self._shared = self._shared_sparse = None
        self.pool.close()
