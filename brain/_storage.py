"""The files vault's factory (its parts, from vault/, indexes/ and git/); notes grouped in bulk."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from brain._git.autocommit import Autocommit
from brain._indexes.caches import Caches
from brain._indexes.embedder import Embedder
from brain._indexes.nodeindex import NodeIndex
from brain._indexes.ports import CatalogPort, NotesPort
from brain._indexes.sparse import SparseEncoder
from brain._model import Steps
from brain._settings import Settings
from brain._vault.files import WriterLock, keep_private
from brain._vault.journal import Journal
from brain._vault.paths import CACHE_DIR
from brain._vault.store import NoteStore


@dataclass(frozen=True)
class FilesParts:
    """A files vault opened: its notes, writer lock, journal, git recording and caches."""

    store: NoteStore
    lock: WriterLock
    journal: Journal
    changes: Autocommit
    caches: Caches
    node_index: NodeIndex


def files_parts(
    root: Path,
    settings: Settings,
    *,
    embedder: Embedder | None,
    sparse: SparseEncoder | None,
    steps: Steps | None,
) -> FilesParts:
    """Every part of a vault of files, the caches under `.brain/` (made private)."""
    keep_private(root / CACHE_DIR)
    lock = WriterLock(root / CACHE_DIR / "writer.lock")
    lock.steps = steps  # a wait for another process's write is said
    caches = Caches(root / CACHE_DIR, embedder=embedder, sparse_encoder=sparse, steps=steps)
    node_index = NodeIndex(root, caches.catalog)
    caches.listeners.append(node_index.on_change)
    return FilesParts(
        store=NoteStore(root),
        lock=lock,
        journal=Journal(root / CACHE_DIR / "events.jsonl"),
        changes=Autocommit(root, settings, lock),
        caches=caches,
        node_index=node_index,
    )


@contextlib.contextmanager
def grouped(store: NotesPort, catalog: CatalogPort, *, at_once: bool = False) -> Iterator[None]:
    """Inside a bulk block (Context.bulk), of either storage: note files made durable a group
    at a time, each group before the catalog commits the rows that name its files (`at_once`:
    each file put in place as it is written)."""
    if at_once:
        yield
        return
    with store.grouped():
        catalog.before_commit.append(store.commit_group)
        try:
            yield
        finally:
            catalog.before_commit.remove(store.commit_group)
