"""Usage (counts and sizes) and diagnostics (is everything in step?) of one partition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brain.errors import BrainError
from brain.indexes.catalog import FileRow
from brain.partitions import is_archived

if TYPE_CHECKING:
    from brain.brain import Brain


def usage(brain: Brain) -> dict[str, Any]:
    """How many notes of each kind and status this partition holds, and their size on disk."""
    brain.catch_up()
    hide = " AND o.visibility='normal'" if brain.for_model else ""
    base = f"FROM objects o WHERE o.partition=? AND o.id=o.note_id{hide}"
    db = brain.caches.catalog.db
    by_kind = dict(
        db.execute(f"SELECT o.kind, count(*) {base} GROUP BY o.kind", (brain.partition,))
    )
    by_status = dict(
        db.execute(f"SELECT o.status, count(*) {base} GROUP BY o.status", (brain.partition,))
    )
    size = db.execute(
        "SELECT coalesce(sum(f.size), 0) FROM files f JOIN objects o ON o.id=f.note_id "
        f"WHERE o.partition=? AND o.id=o.note_id{hide}",
        (brain.partition,),
    ).fetchone()[0]
    return {
        "partition": brain.partition,
        "notes": sum(by_kind.values()),
        "bytes": int(size),
        "by_kind": dict(sorted(by_kind.items())),
        "by_status": dict(sorted(by_status.items())),
    }


def diagnostics(brain: Brain) -> dict[str, Any]:
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
            out_of_step += 0 if _hidden(brain, rel, row) else 1
    gone = [(p, row) for p, row in known.items() if p not in seen]
    out_of_step += sum(1 for p, row in gone if not _hidden(brain, p, row))
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


def _hidden(brain: Brain, rel: str, row: FileRow | None) -> bool:
    """Whether a file out of step is a note hidden from a model (as cached, or as it reads now);
    a model is told nothing of those, not even that they changed."""
    if not brain.for_model:
        return False
    cached = brain.caches.catalog.get(row.note_id) if row and row.note_id else None
    if cached is not None and not brain.shows(cached):
        return True
    try:
        return brain.store.read(rel).visibility != "normal"
    except (OSError, BrainError):
        return False  # gone, or broken: it has no visibility to keep (doctor names it)


def _pending(brain: Brain) -> int:
    """Connectors declared in brain.yaml that wait for the person's confirmation."""
    return sum(1 for status in brain.connectors() if status.state == "pending")
