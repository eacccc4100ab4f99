"""The vault's folders as every walk sees them: partitions, the note files below, what is set
aside. Folders are listed and files stat'ed here; no note is read or written.

Left out of every walk: names starting with a dot, symbolic links (never followed), the
editor's own folders (vault/editors.py), and a folder holding a `brain.yaml` of its own below
the vault's top: another vault moved, copied or cloned in, whose notes are its brain's, not
this one's (`brain doctor` names it).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from brain._model import LOCAL_ONLY
from brain._settings import SETTINGS_FILE
from brain._vault.editors import aside, drawing_name
from brain._vault.paths import CACHE_DIR, COLD_DIR

# Top-level folders that are not partitions.
RESERVED_TOP = {CACHE_DIR, COLD_DIR, LOCAL_ONLY}
Folders = list[tuple[str, os.stat_result]]  # folders a walk looked into, each with its stat
Walked = Iterator[tuple[str, os.stat_result]]  # note files, each with its stat


class Tree:
    """The folders of one vault, addressed by vault-relative POSIX paths."""

    def __init__(self, root: Path, aside: tuple[str, ...], not_partitions: tuple[str, ...]):
        self.root = root
        self.aside = aside  # the editor's templates and scripts: never walked, at any depth
        # Top-level folders the editor fills with its own files (attachments, drawings).
        self.not_partitions = not_partitions

    def partitions(self) -> list[str]:
        return sorted(
            entry.name
            for entry in os.scandir(self.root)
            if entry.is_dir(follow_symlinks=False)
            and not entry.name.startswith(".")
            and entry.name not in RESERVED_TOP
            and not aside(entry.name, self.aside)
            and not self._editors(entry.name)
            and not self.vault_at(entry.name)
        )

    def _editors(self, name: str) -> bool:
        """Whether a top-level folder is one the editor keeps its attachments or drawings in.
        A partition brain made there (its `Knowledge` folder) stays one: its notes are read."""
        return name in self.not_partitions and not (self.root / name / "Knowledge").is_dir()

    def vault_at(self, rel: str) -> bool:
        """Whether a folder below the vault's top holds another vault (its own brain.yaml)."""
        return bool(rel) and (self.root / rel / SETTINGS_FILE).is_file()

    def walk(self, folders: Folders | None = None) -> Walked:
        """Every note file with its stat, in a stable order (NoteStore.walk)."""
        if folders is not None:
            for rel in ("", LOCAL_ONLY):
                with contextlib.suppress(OSError):
                    if stat.S_ISDIR((st := os.lstat(self.root / rel)).st_mode):
                        folders.append((rel, st))
        for partition in self.partitions():
            yield from self._walk_root(partition, ".md", folders)
            yield from self._walk_root(f"{LOCAL_ONLY}/{partition}", ".md", folders)
        yield from self._walk_root(COLD_DIR, ".md.zst", folders)

    def walk_folder(self, rel: str, folders: Folders | None = None) -> Walked:
        """The note files at any depth below one folder of the vault, as `walk()` finds them."""
        if aside(rel, self.aside):
            return
        yield from self._walk(rel, ".md.zst" if rel.split("/")[0] == COLD_DIR else ".md", folders)

    def _walk_root(self, rel: str, suffix: str, folders: Folders | None) -> Walked:
        # A link where a folder of notes should be (`local-only`, `cold`) is never followed:
        # what it leads to is not the vault. Below a root, entries are checked one by one.
        if not self.linked(rel):
            yield from self._walk(rel, suffix, folders)

    def _walk(self, rel: str, suffix: str = ".md", folders: Folders | None = None) -> Walked:
        try:
            if folders is not None:
                folders.append((rel, os.lstat(self.root / rel)))
            entries = sorted(os.scandir(self.root / rel), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            if folders is not None and folders and folders[-1][0] == rel:
                folders.pop()
            return
        # Another vault's folder: recorded (a brain.yaml taken away changes its mtime, and the
        # check by folders then lists it), never entered. Its listing costs no extra stat.
        if _holds_vault(rel, entries):
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            child = f"{rel}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if not aside(child, self.aside):
                    yield from self._walk(child, suffix, folders)
            elif (
                entry.name.endswith(suffix)
                and not drawing_name(entry.name)  # vault/editors.py: a drawing, not a note
                and entry.is_file(follow_symlinks=False)
            ):
                yield child, entry.stat(follow_symlinks=False)

    def entries(self, rel: str) -> list[os.DirEntry[str]]:
        """One folder's entries as every walk sees them: names starting with a dot left out,
        and none at all in another vault's folder."""
        try:
            found = list(os.scandir(self.root / rel))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []
        return [] if _holds_vault(rel, found) else [e for e in found if not e.name.startswith(".")]

    def links(self) -> list[tuple[str, str]]:
        """Symbolic links in the vault's folders, each with whether it leads `inside` or
        `outside` the vault. Every walk skips them; doctor names them."""
        found: list[str] = []
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                found.append(entry.name)
            elif entry.is_dir(follow_symlinks=False):
                found += self._links_below(entry.name)
        real_root = os.path.realpath(self.root)
        return [
            (
                rel,
                "inside"
                if os.path.realpath(self.root / rel).startswith(real_root + os.sep)
                else "outside",
            )
            for rel in sorted(found)
        ]

    def _links_below(self, rel: str) -> list[str]:
        try:
            entries = list(os.scandir(self.root / rel))
        except OSError:
            return []
        if _holds_vault(rel, entries):  # another vault's links are its own
            return []
        found = []
        for entry in sorted(entries, key=lambda e: e.name):
            child = f"{rel}/{entry.name}"
            if entry.is_symlink():
                found.append(child)
            elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                found += self._links_below(child)
        return found

    def not_files(self) -> list[str]:
        """What is named as a note (`*.md`, `*.md.zst` in the cold tier) but is no file: a
        folder (a note replaced by one), a pipe, a device. Walks pass them by; doctor names
        them. Links are left to `links()`."""
        roots = [(r, ".md") for p in self.partitions() for r in (p, f"{LOCAL_ONLY}/{p}")]
        found: list[str] = []
        for rel, suffix in [*roots, (COLD_DIR, ".md.zst")]:
            if not self.linked(rel):
                found += self._not_files_below(rel, suffix)
        return sorted(found)

    def _not_files_below(self, rel: str, suffix: str) -> list[str]:
        found = []
        for entry in self.entries(rel):
            child = f"{rel}/{entry.name}"
            if entry.is_symlink() or aside(child, self.aside):
                continue
            if entry.name.endswith(suffix) and not entry.is_file(follow_symlinks=False):
                found.append(child)
            if entry.is_dir(follow_symlinks=False):
                found += self._not_files_below(child, suffix)
        return found

    def linked(self, rel: str) -> bool:
        """Whether any folder on the way from the vault root to rel is a symbolic link."""
        parts = rel.split("/")
        return any(self.root.joinpath(*parts[: i + 1]).is_symlink() for i in range(len(parts)))

    def stat_note(self, rel: str) -> os.stat_result | None:
        """The stat of one file as `walk()` would see it: None when it is gone, not a regular
        file, reached through a symbolic link (no link is followed, file or folder), or in
        another vault's folder. Two stats per folder on the way: the watcher's cost follows
        the change, not the vault."""
        folder = rel.rpartition("/")[0]
        try:
            if folder and (self.linked(folder) or aside(folder, self.aside)):
                return None
            if drawing_name(rel):  # an Excalidraw drawing (vault/editors.py): not a note
                return None
            if folder and self._in_vault(folder):
                return None
            st = os.lstat(self.root / rel)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        return st if stat.S_ISREG(st.st_mode) else None

    def _in_vault(self, folder: str) -> bool:
        """Whether this folder, or one on the way to it, holds another vault."""
        parts = folder.split("/")
        return any(self.vault_at("/".join(parts[: i + 1])) for i in range(len(parts)))

    def stat_folder(self, rel: str) -> os.stat_result | None:
        """A folder's own stat (no link followed): None when it is gone or not a folder."""
        try:
            st = os.lstat(self.root / rel)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        return st if stat.S_ISDIR(st.st_mode) else None


def _holds_vault(rel: str, entries: list[os.DirEntry[str]]) -> bool:
    """Whether a listed folder below the vault's top holds a brain.yaml file (another vault)."""
    return bool(rel) and any(
        e.name == SETTINGS_FILE and e.is_file(follow_symlinks=False) for e in entries
    )
