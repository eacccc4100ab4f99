"""Note files on disk: find, read, write atomically, delete. No caches here."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

from brain.errors import BrokenNote, InvalidInput
from brain.model import LOCAL_ONLY, Note
from brain.vault import notefile
from brain.vault.files import atomic_write, remove_file
from brain.vault.paths import CACHE_DIR, COLD_DIR, inside

# Top-level folders that are not partitions.
RESERVED_TOP = {CACHE_DIR, COLD_DIR, LOCAL_ONLY}


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class NoteStore:
    """The Markdown files of one vault, addressed by vault-relative POSIX paths."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def partitions(self) -> list[str]:
        return sorted(
            entry.name
            for entry in os.scandir(self.root)
            if entry.is_dir(follow_symlinks=False)
            and not entry.name.startswith(".")
            and entry.name not in RESERVED_TOP
        )

    def walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every note file with its stat, in a stable order; symlinks are never followed.

        Local-only notes (git-ignored `local-only/<partition>/…`) are part of the vault too.
        """
        for partition in self.partitions():
            yield from self._walk(partition)
            yield from self._walk(f"{LOCAL_ONLY}/{partition}")

    def _walk(self, rel: str) -> Iterator[tuple[str, os.stat_result]]:
        try:
            entries = sorted(os.scandir(self.root / rel), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child = f"{rel}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                yield from self._walk(child)
            elif entry.name.endswith(".md") and entry.is_file(follow_symlinks=False):
                yield child, entry.stat(follow_symlinks=False)

    def path(self, rel: str) -> Path:
        return inside(self.root, rel)

    def read_bytes(self, rel: str) -> bytes:
        return self.path(rel).read_bytes()

    def read(self, rel: str) -> Note:
        return self.parse(rel, self.read_bytes(rel))

    @staticmethod
    def parse(rel: str, data: bytes) -> Note:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BrokenNote(f"{rel}: not valid UTF-8 (byte {exc.start})") from None
        return notefile.parse(text, rel)

    def write(self, note: Note) -> bytes:
        """Write a note atomically; returns the bytes written (for hashing)."""
        if not note.path.endswith(".md"):
            raise InvalidInput(f"note path {note.path!r} must end in .md")
        data = notefile.render(note).encode("utf-8")
        atomic_write(self.path(note.path), data)
        return data

    def delete(self, rel: str) -> None:
        target = self.path(rel)
        remove_file(target)
        # Tidy empty thread folders and the like, but never a partition itself.
        folder = target.parent
        root = self.root.resolve()
        while folder != root and folder.parent != root:
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent

    def exists(self, rel: str) -> bool:
        return self.path(rel).is_file()
