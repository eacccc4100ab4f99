"""A tenant's vault files in PostgreSQL: the exact bytes of every file, by vault-relative path."""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from brain._errors import BrokenNote, InvalidInput
from brain._hosted.sql import TenantDatabase
from brain._model import Note
from brain._vault import notefile
from brain._vault.cold import ColdCodec, is_cold
from brain._vault.paths import CACHE_DIR, spelled_as
from brain._vault.store import broken_with_id, parse_markdown, rendered
from brain._vault.tree import RESERVED_TOP, Folders


def clean(rel: str) -> str:
    """A vault-relative path as stored, refused if it could name anything outside the vault."""
    if not rel or "\\" in rel or "\0" in rel or rel.startswith("/"):
        raise InvalidInput(f"path {rel!r} leads outside the vault")
    norm = posixpath.normpath(rel)
    if norm == "." or norm.startswith("../") or norm == ".." or norm.split("/")[0] == CACHE_DIR:
        raise InvalidInput(f"path {rel!r} leads outside the vault")
    return norm


def _stat(size: int, stamp: int) -> os.stat_result:
    """A file's fingerprint as the caches keep it: its size and the time it was written."""
    seconds = stamp / 1e9
    return os.stat_result(
        (
            stat.S_IFREG | 0o600,
            0,
            0,
            1,
            0,
            0,
            size,
            0,
            int(seconds),
            int(seconds),
            0.0,
            seconds,
            seconds,
            0,
            stamp,
            stamp,
        )
    )  # the stat fields in their order


class PgStore:
    """The notes (ports.NotesPort) as the `vault_files` rows of one tenant. Nobody edits them
    by hand, so the caches never walk them to catch up; a note's row carries its id, kind,
    status, visibility and dates beside its bytes. No cold tier: `markdown` is the bytes."""

    def __init__(self, db: TenantDatabase, root: Path) -> None:
        self.root = root  # names the vault in messages: nothing is on disk
        self.cold = ColdCodec(root)  # holds no dictionary: nothing is ever compressed here
        self.db = db

    @contextlib.contextmanager
    def grouped(self) -> Iterator[None]:
        yield  # each row is written in the writer lock's transaction: nothing to put in place

    def commit_group(self) -> None:
        """Nothing waits to be put in place."""

    def stat_folder(self, rel: str) -> os.stat_result | None:
        return None  # rows have no folders to stat: no catch-up looks at them

    def entries(self, rel: str) -> list[os.DirEntry[str]]:
        return []  # (as above)

    def walk_folder(
        self, rel: str, folders: Folders | None = None
    ) -> Iterator[tuple[str, os.stat_result]]:
        """The note rows below one folder, as `walk()` finds them."""
        prefix = clean(rel) + "/"
        return ((path, st) for path, st in self.walk(folders) if path.startswith(prefix))

    def read(self, rel: str) -> Note:
        return self.parse(rel, self.read_bytes(rel))

    def note_bytes(self, rel: str) -> bytes:
        return self.read_bytes(rel)

    def markdown(self, rel: str, data: bytes) -> bytes:
        return data

    def parse(self, rel: str, data: bytes) -> Note:
        return parse_markdown(rel, data)

    def broken_with_id(self, paths: Iterable[str], note_id: str) -> tuple[str, BrokenNote] | None:
        return broken_with_id(self, paths, note_id)

    def write(self, note: Note) -> bytes:
        """Store a note's row; returns the bytes written (for hashing)."""
        return self.write_bytes(note.path, rendered(note))

    def partitions(self) -> list[str]:
        rows = self.db.execute(
            "SELECT DISTINCT split_part(path, '/', 1) FROM vault_files WHERE strpos(path, '/') > 0"
        )
        return sorted(
            str(name) for (name,) in rows if not name.startswith(".") and name not in RESERVED_TOP
        )

    def walk(self, folders: Folders | None = None) -> Iterator[tuple[str, os.stat_result]]:
        """Every note file of the partitions, by path (local-only notes are never stored).

        Rows have no folders, so `folders` receives none: nothing is edited here by hand,
        and no catch-up looks at folders (`Capabilities.hand_edits`)."""
        partitions = set(self.partitions())
        rows = self.db.execute(
            "SELECT path, length(data), stamp FROM vault_files WHERE path LIKE ? ORDER BY path",
            ("%.md",),
        ).fetchall()
        for rel, size, stamp in rows:
            parts = str(rel).split("/")
            if parts[0] in partitions and not any(p.startswith(".") for p in parts):
                yield str(rel), _stat(int(size), int(stamp))

    def links(self) -> list[tuple[str, str]]:
        return []  # rows hold no symbolic links

    def not_files(self) -> list[str]:
        return []  # nor folders named as notes

    def stat_note(self, rel: str) -> os.stat_result | None:
        row = self.db.execute(
            "SELECT length(data), stamp FROM vault_files WHERE path=?", (clean(rel),)
        ).fetchone()
        return _stat(int(row[0]), int(row[1])) if row else None

    def stat(self, rel: str) -> os.stat_result:
        found = self.stat_note(rel)
        if found is None:
            raise FileNotFoundError(rel)
        return found

    def path(self, rel: str) -> Path:
        return self.root / clean(rel)

    def names(self, folder: str) -> list[str]:
        prefix = clean(folder) + "/"
        rows = self.db.execute(
            "SELECT DISTINCT split_part(substr(path, ?), '/', 1) FROM vault_files "
            "WHERE path >= ? AND path < ?",
            (len(prefix) + 1, prefix, prefix[:-1] + "0"),
        )
        return sorted(str(name) for (name,) in rows)

    def folder_named(self, parent: str, name: str) -> str | None:
        """As the files' store: a folder here is the paths below it (listed only when no folder
        has exactly this name: a new node, or one named in another case)."""
        if self.is_folder(f"{parent}/{name}"):
            return name
        prefix = clean(parent) + "/"
        rows = self.db.execute(
            "SELECT DISTINCT split_part(substr(path, ?), '/', 1) FROM vault_files "
            "WHERE path >= ? AND path < ? AND strpos(substr(path, ?), '/') > 0",
            (len(prefix) + 1, prefix, prefix[:-1] + "0", len(prefix) + 1),
        )
        return spelled_as([str(folder) for (folder,) in rows], name)

    def read_bytes(self, rel: str) -> bytes:
        row = self.db.execute("SELECT data FROM vault_files WHERE path=?", (clean(rel),)).fetchone()
        if row is None:
            raise FileNotFoundError(rel)
        return bytes(row[0])

    def read_walked(self, rel: str) -> tuple[bytes, os.stat_result]:
        """A row `walk()` listed, with the fingerprint of the bytes read (one statement)."""
        row = self.db.execute(
            "SELECT data, stamp FROM vault_files WHERE path=?", (clean(rel),)
        ).fetchone()
        if row is None:
            raise FileNotFoundError(rel)
        data = bytes(row[0])
        return data, _stat(len(data), int(row[1]))

    def write_bytes(self, rel: str, markdown: bytes) -> bytes:
        """Store a file's exact bytes in one statement (the cold tier stays on files)."""
        rel = clean(rel)
        if is_cold(rel):
            raise InvalidInput("a hosted brain keeps no cold tier", "set `tiers: {cold: false}`")
        meta: tuple[str | None, ...] = (None,) * 6
        if rel.endswith(".md"):
            try:
                note = notefile.parse(markdown.decode("utf-8"), rel)
                meta = (
                    note.id,
                    note.kind,
                    note.status,
                    note.visibility,
                    note.created,
                    note.touched,
                )
            except (BrokenNote, UnicodeDecodeError):
                pass
        self.db.execute(
            "INSERT INTO vault_files (path, data, note_id, kind, status, visibility, created, "
            "touched, stamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, path) DO UPDATE SET "
            "data = excluded.data, note_id = excluded.note_id, kind = excluded.kind, "
            "status = excluded.status, visibility = excluded.visibility, "
            "created = excluded.created, touched = excluded.touched, stamp = excluded.stamp, "
            "written = now()",
            (rel, markdown, *meta, time.time_ns()),
        )
        return markdown

    def delete(self, rel: str) -> None:
        self.db.execute("DELETE FROM vault_files WHERE path=?", (clean(rel),))

    def move_folder(self, old: str, new: str) -> list[tuple[str, str]]:
        """Every row below `old` to the same place below `new` (one statement)."""
        source, target = clean(old) + "/", clean(new) + "/"
        rows = self.db.execute(
            "UPDATE vault_files SET path = ? || substr(path, ?), written = now() "
            "WHERE path >= ? AND path < ? RETURNING path",
            (target, len(source) + 1, source, source[:-1] + "0"),
        ).fetchall()
        moved = [str(r[0]) for r in rows]
        return sorted((source + rel[len(target) :], rel) for rel in moved)

    def is_folder(self, rel: str) -> bool:
        prefix = clean(rel) + "/"
        return (
            self.db.execute(
                "SELECT 1 FROM vault_files WHERE path >= ? AND path < ? LIMIT 1",
                (prefix, prefix[:-1] + "0"),
            ).fetchone()
            is not None
        )

    def exists(self, rel: str) -> bool:
        try:
            rel = clean(rel)
        except InvalidInput:
            return False
        return (
            self.db.execute("SELECT 1 FROM vault_files WHERE path=?", (rel,)).fetchone() is not None
        )

    def every_file(self) -> Iterator[tuple[str, bytes]]:
        """Every stored file with its bytes, by path (what `brain hosted pull` writes out)."""
        for rel, data in self.db.execute("SELECT path, data FROM vault_files ORDER BY path"):
            yield str(rel), bytes(data)
