"""The catalog's rows as values: an object (note or chunk), its brief, a relation, a file."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class ObjectRow:
    """One recallable object: a note, or a chunk of one (`<note id>#<n>`)."""

    id: str
    note_id: str
    path: str
    partition: str
    node: str
    title: str
    norm_title: str
    kind: str
    status: str
    visibility: str
    created: str
    touched: str
    parent: str | None
    supersedes: str | None
    defining: str | None
    tags: tuple[str, ...]
    source: dict[str, Any]
    heading_path: tuple[str, ...]
    text_hash: str
    updated: str = ""  # Note.updated: its text last written or said again ("": as created)

    def values(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.note_id,
            self.path,
            self.partition,
            self.node,
            self.title,
            self.norm_title,
            self.kind,
            self.status,
            self.visibility,
            self.created,
            self.touched,
            self.parent,
            self.supersedes,
            self.defining,
            json.dumps(list(self.tags)),
            json.dumps(self.source, sort_keys=True),
            json.dumps(list(self.heading_path)),
            self.text_hash,
            self.updated or self.created,
        )

    @classmethod
    def from_sql(cls, row: Sequence[Any]) -> ObjectRow:
        values = list(row)
        values[15] = tuple(json.loads(values[15]))
        values[16] = json.loads(values[16])
        values[17] = tuple(json.loads(values[17]))
        values[19] = values[19] or values[10]  # a hosted row from before `updated`: created
        return cls(*values)


class Brief(NamedTuple):
    """The few fields ranking and filtering need, read without decoding JSON. A tuple: a recall
    reads hundreds (at 10k memories ~700), and a frozen dataclass took 4x as long to make."""

    id: str
    partition: str
    node: str
    status: str
    visibility: str
    kind: str
    created: str
    defining: str | None


@dataclass(frozen=True)
class RelationRow:
    """One typed edge as the catalog holds it (the truth is the source note's front-matter)."""

    source: str
    type: str
    target: str
    weight: float | None


@dataclass(frozen=True)
class FileRow:
    path: str
    note_id: str | None
    hash: str
    mtime_ns: int
    size: int
    error: str | None
    inode: int = 0  # 0: not known (a catalog made before inodes were kept)

    @classmethod
    def of(
        cls, path: str, note_id: str | None, digest: str, st: os.stat_result, error: str | None
    ) -> FileRow:
        """The row of a file as it was just read, at this stat."""
        return cls(path, note_id, digest, st.st_mtime_ns, st.st_size, error, st.st_ino)

    def matches(self, st: os.stat_result) -> bool:
        """Whether a file's stat is the one this row was indexed at: (size, mtime, inode)."""
        return stamp_matches((self.mtime_ns, self.size, self.inode), st)


Stamp = tuple[int, int, int]  # a file row's (mtime_ns, size, inode) alone (catalog.stamps)


def stamp_matches(stamp: Stamp, st: os.stat_result) -> bool:
    """Whether a stat is the one a row was indexed at; an inode of 0 (not known) matches any."""
    return (stamp[0], stamp[1]) == (st.st_mtime_ns, st.st_size) and stamp[2] in (0, st.st_ino)


@dataclass(frozen=True)
class Settled:
    """What a full pass over the node index files did (vault-relative paths)."""

    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexObject:
    """One recallable thing made from a note: its catalog row and its searchable text."""

    row: ObjectRow
    text: str
