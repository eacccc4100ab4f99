"""Push a files vault into the database for a user, pull it back out: byte for byte."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from brain import _settings as settings_mod
from brain._clock import Clock
from brain._errors import InvalidInput
from brain._hosted.pool import Pool, admin
from brain._hosted.schema import HostedError, check_schema
from brain._hosted.sql import TenantDatabase
from brain._hosted.store import PgStore
from brain._hosted.tokens import check_name
from brain._model import LOCAL_ONLY
from brain._vault.files import atomic_write
from brain._vault.paths import CACHE_DIR, COLD_DIR, check_segment

# Never pushed: the caches and machine-local state, git's own folder, what stays on this machine.
_KEPT_HOME = {CACHE_DIR, ".git", LOCAL_ONLY}


@dataclass(frozen=True)
class Transfer:
    user: str
    files: int
    notes: int
    bytes: int


def vault_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Every regular file of a vault that belongs in the database, by path; no link followed."""
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        rel_folder = here.relative_to(root).as_posix()
        if rel_folder == ".":
            dirs[:] = [d for d in dirs if d not in _KEPT_HOME]
        dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink())
        for name in sorted(files):
            path = here / name
            if path.is_symlink() or not path.is_file():
                continue
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            if rel.startswith(COLD_DIR + "/") and rel.endswith(".md.zst"):
                raise InvalidInput(
                    f"{root}: {rel} is in the cold tier, which a hosted brain does not keep",
                    "bring the notes back first: `brain tier` with `tiers: {cold: false}`",
                )
            yield rel, path


def push(
    dsn: str | Pool,
    root: Path,
    user: str,
    clock: Clock,
    *,
    key: bytes | None = None,
    new: bool = False,
) -> Transfer:
    """Replace the user's vault in the database by this one (the user is made if new), then
    build its catalog, full text, vectors and node statistics, all in one transaction.
    `new`: refuse a user who exists, checked under her writer lock (two servers meeting a
    new user at once make her once); `key`: as for `open_tenant`."""
    from brain._hosted.tenant import open_tenant

    check_name(user)  # as `user add` and `user delete` take it: no brain without a way in
    settings_mod.load(root)  # a vault, and a valid one, before anything is replaced
    files = list(vault_files(root))
    with admin(dsn) as conn:
        check_schema(conn)
    db = TenantDatabase(dsn, user, key)
    store = PgStore(db, root)
    total = 0
    db.begin()
    ok = False
    try:
        db.execute("SELECT pg_advisory_xact_lock(hashtextextended('brain:' || ?, 0))", (user,))
        if new and db.known():
            raise InvalidInput(f"user {user!r} already exists", "choose another name")
        db.execute("INSERT INTO tenants (name) VALUES (?) ON CONFLICT DO NOTHING", (user,))
        for table in _TENANT_TABLES:
            db.execute(f"DELETE FROM {table}")
        for rel, path in files:
            data = path.read_bytes()
            total += len(data)
            store.write_bytes(rel, data)
        ok = True
    finally:
        db.end(ok=ok)
        db.close()
    brain = open_tenant(dsn, user, clock=clock, key=key)
    try:
        notes = brain.reindex()
    finally:
        brain.close()
    return Transfer(user, len(files), notes, total)


_TENANT_TABLES = (
    "vault_files",
    "info",
    "files",
    "objects",
    "relations",
    "node_notes",
    "node_counts",
    "node_terms",
    "texts",
    "vectors",
    "journal",
)  # one list


def create(
    dsn: str | Pool,
    user: str,
    clock: Clock,
    *,
    embedder: str | None = None,
    key: bytes | None = None,
) -> Transfer:
    """A new user's brain, made from the vault template as `brain init` makes one (refused
    if the user exists: `push` replaces, this never does)."""
    import tempfile

    from brain._vault.template import init_vault

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "vault"
        init_vault(root, clock.now())
        if embedder is not None:  # e.g. `hashing` for tests and benchmarks
            settings = root / settings_mod.SETTINGS_FILE
            text = settings.read_text(encoding="utf-8")
            settings.write_text(
                re.sub(r"^embedder: \S+", f"embedder: {embedder}", text, flags=re.M)
            )
        return push(dsn, root, user, clock, key=key, new=True)


def pull(dsn: str, dest: Path, user: str, *, key: bytes | None = None) -> Transfer:
    """Write the user's vault out of the database into a new or empty folder."""
    check_segment(user, "user")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InvalidInput(f"{dest} is not an empty folder", "pull into a new folder")
    with admin(dsn) as conn:
        check_schema(conn)
    db = TenantDatabase(dsn, user, key)
    count = total = 0
    try:
        if not db.known():
            raise HostedError(f"no user {user!r} in the database", "check the name")
        for rel, data in PgStore(db, dest).every_file():
            target = dest / rel
            if dest.resolve() not in target.resolve().parents:
                raise HostedError(f"a stored path leads outside {dest}: {rel!r}")
            atomic_write(target, data)
            count += 1
            total += len(data)
    finally:
        db.close()
    return Transfer(user, count, 0, total)
