"""Usage (counts and sizes) and diagnostics (is everything in step?) of one partition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brain.sources import documents
from brain.vault.archive import is_archived

if TYPE_CHECKING:
    from brain.context import Context


def usage(brain: Context) -> dict[str, Any]:
    """How many notes of each kind and status this partition holds, and their size on disk."""
    brain.catch_up()
    by_kind, by_status, size = brain.caches.catalog.usage(
        brain.partition, normal_only=brain.for_model
    )
    return {
        "partition": brain.partition,
        "notes": sum(by_kind.values()),
        "bytes": int(size),
        "by_kind": dict(sorted(by_kind.items())),
        "by_status": dict(sorted(by_status.items())),
    }


def diagnostics(brain: Context) -> dict[str, Any]:
    """Health without touching anything: caches in step, broken notes, connectors, retrievers."""
    # Only this partition's shared tree: a model learns nothing about other partitions or
    # about the person's local-only files, not even how many there are.
    prefix = brain.partition + "/"
    known = {p: row for p, row in brain.caches.catalog.files().items() if p.startswith(prefix)}
    out_of_step = 0
    seen = set()
    for rel, st in brain.store.walk():
        if not rel.startswith(prefix):
            continue
        seen.add(rel)
        row = known.get(rel)
        if row is None or row.mtime_ns != st.st_mtime_ns or row.size != st.st_size:
            out_of_step += 1
    out_of_step += sum(1 for p in known if p not in seen)
    brain.flush()  # apply queued cache changes, so the counts compare like with like
    objects = brain.caches.catalog.count()
    in_text = len(brain.caches.fulltext)
    broken = sum(1 for f in brain.caches.catalog.broken_files() if f.path.startswith(prefix))
    connectors = brain.settings.raw.get("connectors") or {}
    names = ["text"] + (["vector"] if brain.embedder is not None else [])
    return {
        "partition": brain.partition,
        "archived": is_archived(brain.root, brain.partition),
        "caches_fresh": out_of_step == 0 and objects == in_text,
        "files_out_of_step": out_of_step,
        "fulltext_matches_catalog": objects == in_text,
        "broken_notes": broken,
        # Connectors are confirmed by the person at a terminal; a model can only see the count.
        "connectors_declared": len(connectors) if isinstance(connectors, dict) else 0,
        "pending_connectors": _pending(brain),
        "retrievers": names,
        "embedder": brain.settings.embedder,
        "model_loaded": bool(getattr(brain.embedder, "loaded", brain.embedder is not None)),
    }


def _pending(brain: Context) -> int:
    """Connectors declared in brain.yaml that wait for the person's confirmation."""
    return sum(1 for status in documents.statuses(brain) if status.state == "pending")
