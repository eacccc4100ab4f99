"""The files vault's factory: its parts, built from vault/, indexes/ and git/."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from brain.git.autocommit import Autocommit
from brain.indexes.caches import Caches
from brain.indexes.embedder import Embedder
from brain.indexes.nodeindex import NodeIndex
from brain.indexes.sparse import SparseEncoder
from brain.model import Steps
from brain.settings import Settings
from brain.vault.files import WriterLock, keep_private
from brain.vault.journal import Journal
from brain.vault.paths import CACHE_DIR
from brain.vault.store import NoteStore


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
