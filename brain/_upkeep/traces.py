"""The forgetting check: any trace of a forgotten note left in the vault, `.brain/`, the cold
tier and `.git`, by the salted hashes recorded when it was forgotten (vault/forgotten.py).

Every file is read as raw bytes (SQLite free pages and write-ahead logs, index segments,
vectors, postings, reflogs and packs included); cold-tier files are read decompressed as well,
and git's objects, loose and packed, reachable or not, are read as git unpacks them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain._errors import BrainError
from brain._git.purge import objects
from brain._git.repo import is_repo
from brain._vault import forgotten
from brain._vault.cold import ColdCodec, is_cold


@dataclass(frozen=True)
class Trace:
    place: str  # a path in the vault, or a git object
    found: dict[str, int]  # id | title | text → how often

    def to_json(self) -> dict[str, Any]:
        return {"place": self.place, "found": self.found}


@dataclass(frozen=True)
class TraceReport:
    note_id: str
    forgotten_at: str
    files: int  # files read
    objects: int  # git objects read
    traces: tuple[Trace, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.note_id,
            "forgotten_at": self.forgotten_at,
            "files": self.files,
            "git_objects": self.objects,
            "traces": [t.to_json() for t in self.traces],
        }


def check(root: Path, note_id: str) -> TraceReport:
    """Look everywhere under the vault for the note's id, title and text."""
    record = forgotten.lookup(root, note_id)
    codec = ColdCodec(root)
    traces, files = [], 0
    for path in _files(root):
        rel = path.relative_to(root).as_posix()
        if rel == forgotten.FILE:
            continue  # the record itself: salted hashes, no word of the note
        try:
            data = path.read_bytes()
        except OSError:
            continue  # a socket, or a file gone meanwhile
        files += 1
        if found := record.find(data):
            traces.append(Trace(rel, found))
        if is_cold(rel):
            try:
                inner = codec.decompress(data, rel)
            except BrainError:
                continue
            if found := record.find(inner):
                traces.append(Trace(f"{rel} (decompressed)", found))
    count = 0
    if is_repo(root):
        for sha, kind, contents in objects(root):
            count += 1
            if found := record.find(contents):
                traces.append(Trace(f".git object {sha} ({kind})", found))
    return TraceReport(note_id, record.at, files, count, tuple(traces))


def _files(root: Path) -> list[Path]:
    """Every regular file under the vault, .git and .brain included; links not followed."""
    found = []
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found)
