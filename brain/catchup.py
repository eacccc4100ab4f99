"""Catching the caches up with the files: hand edits, new files, deletions, breakage."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from brain.errors import BrainError, BrokenNote
from brain.model import LOCAL_ONLY, Note, content_hash, iso, new_id
from brain.vault.paths import COLD_DIR
from brain.vault.store import RESERVED_TOP

if TYPE_CHECKING:
    from brain.brain import Brain


@dataclass(frozen=True)
class CatchUp:
    """What a catch-up with the files found: hand edits, new files, deletions, breakage."""

    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()


def catch_up_paths(brain: Brain, rels: Iterable[str]) -> CatchUp:
    """Catch up these files only (the watcher's paths): one stat each, read and hashed only
    when (size, mtime) changed, so the cost follows the change, not the vault's size."""
    todo, gone = [], []
    for rel in sorted(set(rels)):
        if not is_note_path(rel):
            continue
        row = brain.caches.catalog.file(rel)
        try:
            st: os.stat_result | None = os.lstat(brain.store.path(rel))
        except (FileNotFoundError, NotADirectoryError, BrainError):
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):  # gone, or a symlink (never followed)
            if row is not None:
                gone.append(rel)
        elif row is None or (row.mtime_ns, row.size) != (st.st_mtime_ns, st.st_size):
            todo.append(rel)
    if not todo and not gone:
        return CatchUp()
    with brain.lock.hold():
        return brain._apply(todo, gone)


def is_note_path(rel: str) -> bool:
    """Whether a vault-relative path is where `NoteStore.walk()` finds notes."""
    parts = rel.split("/")
    if len(parts) < 2 or any(not p or p.startswith(".") or p == ".." for p in parts):
        return False
    if parts[0] == COLD_DIR:
        return rel.endswith(".md.zst")
    if parts[0] == LOCAL_ONLY:
        parts = parts[1:]
    return len(parts) >= 2 and parts[0] not in RESERVED_TOP and rel.endswith(".md")


def apply_files(brain: Brain, todo: Sequence[str], gone: Sequence[str]) -> CatchUp:
    """Drop what vanished, index what changed; lock held."""
    changed, broken, removed = [], [], []
    for rel in gone:
        row = brain.caches.catalog.file(rel)
        if row is None or brain.store.exists(rel):
            continue
        if row.note_id:
            brain.caches.drop_note(row.note_id, rel)
        else:
            brain.caches.catalog.drop_file(rel)
        removed.append(rel)
    for rel in todo:
        outcome = index_file(brain, rel)
        if outcome == "broken":
            broken.append(rel)
        elif outcome == "changed":
            changed.append(rel)
    return CatchUp(tuple(changed), tuple(removed), tuple(broken))


def index_file(brain: Brain, rel: str) -> str:
    """Bring one file's cache entries in step: `changed`, `same`, `broken` or `gone`."""
    path = brain.store.path(rel)
    try:
        data = path.read_bytes()
        st = path.stat()
    except FileNotFoundError:
        return "gone"
    known = brain.caches.catalog.file(rel)
    if known is not None and known.hash == content_hash(data) and known.error is None:
        brain.caches.catalog.put_file(known.__class__(
            rel, known.note_id, known.hash, st.st_mtime_ns, st.st_size, None))  # fmt: skip
        return "same"
    try:
        note = brain.store.parse(rel, data)
    except BrokenNote as exc:
        brain.caches.put_broken(rel, data, st, exc.message)
        return "broken"
    if not note.id:
        note = adopt(note, brain.clock.now())
        data = brain.store.write(note)
        st = path.stat()
    other = brain.caches.catalog.get(note.id)
    if other is not None and other.path != rel and brain.store.exists(other.path):
        reason = f"{rel}: id {note.id} is also used by {other.path}; give one of them a new id"
        brain.caches.put_broken(rel, data, st, reason)
        return "broken"
    brain.caches.put_note(note, data, st)
    return "changed"


def adopt(note: Note, now: datetime) -> Note:
    """A Markdown file written by hand gets an id; the fields the person wrote are kept
    (first, in their order) and only the missing ones are added."""
    stamp = iso(now)
    defaults = {"title": Path(note.path).stem, "kind": "titled", "status": "active",
                "created": stamp, "touched": stamp, "source": {"via": "hand"}}  # fmt: skip
    meta = {"id": new_id(now), **dict(note.meta)}
    for key, value in defaults.items():
        meta.setdefault(key, value)
    return Note(meta=meta, body=note.body, path=note.path)
