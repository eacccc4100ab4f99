"""Note files on disk: find, read, write atomically, delete. No caches here."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from brain._errors import BrokenNote, InvalidInput
from brain._model import LOCAL_ONLY, Note
from brain._streams import held
from brain._vault import notefile
from brain._vault.cold import ColdCodec, hot_path, is_cold
from brain._vault.editors import aside, drawing_name, template_folders
from brain._vault.files import (
    atomic_write,
    discard,
    fsync_dir,
    make_durable,
    remove_file,
    write_temp,
)
from brain._vault.paths import CACHE_DIR, COLD_DIR, inside, spelled_as

# Top-level folders that are not partitions.
RESERVED_TOP = {CACHE_DIR, COLD_DIR, LOCAL_ONLY}
Folders = list[tuple[str, os.stat_result]]  # folders a walk looked into, each with its stat


class NoteStore:
    """The Markdown files of one vault, addressed by vault-relative POSIX paths."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cold = ColdCodec(root)
        # The editor's templates (vault/editors.py): moulds of notes, never walked as notes.
        self.aside = template_folders(root)
        # Inside `grouped()`: the notes written and not yet renamed into place, by path, each
        # with its temp file and the path it goes to.
        self._group: dict[str, tuple[Path, Path]] | None = None

    # a group of writes made durable together (bulk blocks) ------------------------
    @contextlib.contextmanager
    def grouped(self) -> Iterator[None]:
        """Inside: each note written goes to a temp file, not yet synced; `commit_group` makes
        the group durable with one sync and renames each into place. It runs when the block
        ends (after an error too: what was written whole is kept), before the catalog commits
        (Context.bulk), and before anything here but a write, a read, `exists` or `stat` (which
        see the group): whatever lists, moves or deletes files sees them in place.

        A crash loses the group's notes (their temp files are never renamed; `brain sleep`
        clears them away later) and never leaves a torn or empty note in place.
        """
        if self._group is not None:  # nested: the outer block commits
            yield
            return
        self._group = {}
        try:
            yield
        finally:
            try:
                self.commit_group()
            finally:
                self._group = None

    def commit_group(self) -> None:
        """The notes written since the last commit: on disk (one sync), then renamed into place."""
        if not self._group:
            return
        with held():  # renamed into place or removed, every one: a stop waits for the end
            group = list(self._group.values())
            self._group.clear()
            try:
                make_durable([tmp for tmp, _ in group])
            except BaseException:
                for tmp, _ in group:
                    discard(tmp)
                raise
            for done, (tmp, target) in enumerate(group):
                try:
                    os.replace(tmp, target)
                except BaseException:
                    for rest, _ in group[done:]:
                        discard(rest)
                    raise
        for folder in dict.fromkeys(target.parent for _, target in group):
            fsync_dir(folder)  # once each (or once at the end of the block)

    def _pending(self, rel: str) -> Path | None:
        """The temp file holding a note written in this group, if it is one."""
        if not self._group:
            return None
        found = self._group.get(rel)
        return found[0] if found else None

    def partitions(self) -> list[str]:
        return sorted(
            entry.name
            for entry in os.scandir(self.root)
            if entry.is_dir(follow_symlinks=False)
            and not entry.name.startswith(".")
            and entry.name not in RESERVED_TOP
            and not aside(entry.name, self.aside)
        )

    def walk(self, folders: Folders | None = None) -> Iterator[tuple[str, os.stat_result]]:
        """Every note file with its stat, in a stable order; symlinks are never followed.

        Local-only notes (git-ignored `local-only/<partition>/…`) are part of the vault too,
        and so are the compressed notes of the cold tier (`cold/…/*.md.zst`). `folders`, if
        given, receives each folder looked into (and the vault and `local-only` folders) with
        its stat, taken before it is listed, so a later change to it always shows.
        """
        self.commit_group()
        if folders is not None:
            for rel in ("", LOCAL_ONLY):
                with contextlib.suppress(OSError):
                    if stat.S_ISDIR((st := os.lstat(self.root / rel)).st_mode):
                        folders.append((rel, st))
        for partition in self.partitions():
            yield from self._walk_root(partition, ".md", folders)
            yield from self._walk_root(f"{LOCAL_ONLY}/{partition}", ".md", folders)
        yield from self._walk_root(COLD_DIR, ".md.zst", folders)

    def walk_folder(
        self, rel: str, folders: Folders | None = None
    ) -> Iterator[tuple[str, os.stat_result]]:
        """The note files at any depth below one folder of the vault, as `walk()` finds them."""
        self.commit_group()
        if aside(rel, self.aside):
            return
        yield from self._walk(rel, ".md.zst" if rel.split("/")[0] == COLD_DIR else ".md", folders)

    def _walk_root(
        self, rel: str, suffix: str, folders: Folders | None
    ) -> Iterator[tuple[str, os.stat_result]]:
        # A link where a folder of notes should be (`local-only`, `cold`) is never followed:
        # what it leads to is not the vault. Below a root, entries are checked one by one.
        if not self._linked(rel):
            yield from self._walk(rel, suffix, folders)

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
            if not self._linked(rel):
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

    def _linked(self, rel: str) -> bool:
        """Whether any folder on the way from the vault root to rel is a symbolic link."""
        parts = rel.split("/")
        return any(self.root.joinpath(*parts[: i + 1]).is_symlink() for i in range(len(parts)))

    def stat_note(self, rel: str) -> os.stat_result | None:
        """The stat of one file as `walk()` would see it: None when it is gone, not a regular
        file, or reached through a symbolic link (no link is followed, file or folder)."""
        self.commit_group()
        folder = rel.rpartition("/")[0]
        try:
            if folder and (self._linked(folder) or aside(folder, self.aside)):
                return None
            if drawing_name(rel):  # an Excalidraw drawing (vault/editors.py): not a note
                return None
            st = os.lstat(self.root / rel)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        return st if stat.S_ISREG(st.st_mode) else None

    def stat_folder(self, rel: str) -> os.stat_result | None:
        """A folder's own stat (no link followed): None when it is gone or not a folder."""
        try:
            st = os.lstat(self.root / rel)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        return st if stat.S_ISDIR(st.st_mode) else None

    def entries(self, rel: str) -> list[os.DirEntry[str]]:
        """One folder's entries, names starting with a dot left out (as every walk does)."""
        self.commit_group()
        try:
            return [e for e in os.scandir(self.root / rel) if not e.name.startswith(".")]
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []

    def _walk(
        self, rel: str, suffix: str = ".md", folders: Folders | None = None
    ) -> Iterator[tuple[str, os.stat_result]]:
        try:
            if folders is not None:
                folders.append((rel, os.lstat(self.root / rel)))
            entries = sorted(os.scandir(self.root / rel), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            if folders is not None and folders and folders[-1][0] == rel:
                folders.pop()
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

    def path(self, rel: str) -> Path:
        """The absolute path of a note, for any use: the group is in place first."""
        self.commit_group()
        return inside(self.root, rel)

    def stat(self, rel: str) -> os.stat_result:
        """The stat of a file just written (its size and mtime fingerprint the caches). A
        note still in the group: its temp file's, the same inode, size and mtime once renamed."""
        return (self._pending(rel) or inside(self.root, rel)).stat()

    def read_walked(self, rel: str) -> tuple[bytes, os.stat_result]:
        """A file `walk()` listed, read with the stat of what was read. No path is resolved
        (two resolves a file were a fifth of a reindex): the walk followed no link, and the
        file itself is opened refusing one. Gone, or no longer a regular file: FileNotFoundError."""
        self.commit_group()
        try:
            fd = os.open(self.root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if isinstance(exc, FileNotFoundError | NotADirectoryError) or exc.errno == errno.ELOOP:
                raise FileNotFoundError(rel) from None
            raise
        with open(fd, "rb") as handle:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FileNotFoundError(rel)
            return handle.read(), st

    def names(self, folder: str) -> list[str]:
        """The names of the entries of one folder (none if it is not there)."""
        try:
            return [entry.name for entry in os.scandir(self.path(folder))]
        except InvalidInput:
            return []
        except OSError as exc:  # a name too long for the file system is never there either
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG):
                return []
            raise

    def read_bytes(self, rel: str) -> bytes:
        """The file as stored (a cold note: its compressed frame)."""
        pending = self._pending(rel)
        return (pending or inside(self.root, rel)).read_bytes()

    def note_bytes(self, rel: str) -> bytes:
        """The Markdown bytes of a note, hot or cold."""
        return self.markdown(rel, self.read_bytes(rel))

    def markdown(self, rel: str, data: bytes) -> bytes:
        """Stored bytes → Markdown bytes (a damaged cold file raises ColdFileError)."""
        return self.cold.decompress(data, rel) if is_cold(rel) else data

    def read(self, rel: str) -> Note:
        return self.parse(rel, self.read_bytes(rel))

    def parse(self, rel: str, data: bytes) -> Note:
        """Stored bytes → a note; broken front-matter or a damaged cold file raise BrokenNote."""
        return parse_markdown(rel, self.markdown(rel, data))

    def broken_with_id(self, paths: Iterable[str], note_id: str) -> tuple[str, BrokenNote] | None:
        return broken_with_id(self, paths, note_id)

    def write(self, note: Note) -> bytes:
        """Write a note atomically; returns the bytes written (for hashing)."""
        return self.write_bytes(note.path, rendered(note))

    def write_bytes(self, rel: str, markdown: bytes) -> bytes:
        """Store a note's exact Markdown (compressed under `cold/`); returns the stored bytes."""
        data = self.cold.compress(markdown) if is_cold(rel) else markdown
        if self._group is None:
            atomic_write(self.path(rel), data)
            return data
        target = inside(self.root, rel)
        with held():  # a stop waits until the temp file is in the group its end commits
            tmp = write_temp(target, data, durable=False)
            replaced = self._group.pop(rel, None)  # written twice in one group: the last counts
            if replaced is not None:
                discard(replaced[0])
            self._group[rel] = (tmp, target)
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

    def move_folder(self, old: str, new: str) -> list[tuple[str, str]]:
        """Rename a folder in one step; returns (old, new) of each file moved, when a walk
        would not find them (here it does: none are named)."""
        os.replace(self.path(old), self.path(new))
        fsync_dir(self.path(new).parent)
        return []

    def is_folder(self, rel: str) -> bool:
        try:  # folders are made as a group's notes are written: they are all in place
            return inside(self.root, rel).is_dir()
        except InvalidInput:
            return False

    def folder_named(self, parent: str, name: str) -> str | None:
        """The sub-folder of `parent` called `name`, as spelled on disk, or the one folder whose
        name differs from it only in case; None if none. Listed without committing the group
        (folders are in place as a group's notes are written), and never through a link."""
        try:
            with os.scandir(inside(self.root, parent)) as found:
                folders = [e.name for e in found if e.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError, InvalidInput):
            return None
        return spelled_as(folders, name)

    def exists(self, rel: str) -> bool:
        """Whether a note file is there; a path that leads out of the vault (through a link)
        holds no note of it."""
        if self._pending(rel) is not None:
            return True
        try:
            return inside(self.root, rel).is_file()
        except InvalidInput:
            return False


class Exists(Protocol):
    """A store that can say whether a path is taken (either storage's)."""

    def exists(self, rel: str) -> bool: ...


def free_hot_path(store: Exists, cold: str) -> str:
    """Where a cold note goes back to: its old path, or a free neighbour if that is taken."""
    hot = hot_path(cold)
    stem, n = hot[: -len(".md")], 2
    while store.exists(hot):
        hot = f"{stem} {n}.md"
        n += 1
    return hot


class Readable(Protocol):
    """A store's reads that `broken_with_id` needs (either storage's)."""

    def read_bytes(self, rel: str) -> bytes: ...
    def markdown(self, rel: str, data: bytes) -> bytes: ...
    def parse(self, rel: str, data: bytes) -> Note: ...


def parse_markdown(rel: str, markdown: bytes) -> Note:
    """A note's Markdown bytes → the note; bad UTF-8 or broken front-matter raise BrokenNote."""
    try:
        text = markdown.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BrokenNote(f"{rel}: not valid UTF-8 (byte {exc.start})") from None
    return notefile.parse(text, rel)


def rendered(note: Note) -> bytes:
    """A note as the Markdown bytes either storage keeps; a path not of a note is refused."""
    if not note.path.endswith(".md") and not is_cold(note.path):
        raise InvalidInput(f"note path {note.path!r} must end in .md")
    return notefile.render(note).encode("utf-8")


def broken_with_id(
    store: Readable, paths: Iterable[str], note_id: str
) -> tuple[str, BrokenNote] | None:
    """The first of these files whose front-matter, unparseable, still names this id."""
    for rel in paths:
        try:
            data = store.read_bytes(rel)
            markdown = store.markdown(rel, data)
        except (FileNotFoundError, BrokenNote):
            continue  # gone, or a cold file that cannot be read back: no id to see
        if not notefile.names_id(markdown, note_id):
            continue
        try:
            store.parse(rel, data)
        except BrokenNote as exc:
            return rel, exc
    return None
