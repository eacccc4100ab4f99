"""Note files on disk: read, write atomically, delete (the walks: vault/tree.py). No caches."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from brain._errors import BrokenNote, InvalidInput
from brain._model import Note
from brain._streams import held
from brain._vault import notefile
from brain._vault.cold import ColdCodec, hot_path, is_cold
from brain._vault.editors import template_folders, top_folders
from brain._vault.files import (
    atomic_write,
    discard,
    fsync_dir,
    make_durable,
    remove_file,
    write_temp,
)
from brain._vault.paths import inside, spelled_as
from brain._vault.tree import Folders, Tree, Walked


class NoteStore:
    """The Markdown files of one vault, addressed by vault-relative POSIX paths."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cold = ColdCodec(root)
        # The editor's templates (vault/editors.py): moulds of notes, never walked as notes;
        # its attachments and drawings folders: never partitions. Read once, at the open.
        self.tree = Tree(root, template_folders(root), top_folders(root))
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
        return self.tree.partitions()

    def walk(self, folders: Folders | None = None) -> Walked:
        """Every note file with its stat, in a stable order; symlinks are never followed.

        Local-only notes (git-ignored `local-only/<partition>/…`) are part of the vault too,
        and so are the compressed notes of the cold tier (`cold/…/*.md.zst`). `folders`, if
        given, receives each folder looked into (and the vault and `local-only` folders) with
        its stat, taken before it is listed, so a later change to it always shows.
        """
        self.commit_group()
        yield from self.tree.walk(folders)

    def walk_folder(self, rel: str, folders: Folders | None = None) -> Walked:
        """The note files at any depth below one folder of the vault, as `walk()` finds them."""
        self.commit_group()
        yield from self.tree.walk_folder(rel, folders)

    def links(self) -> list[tuple[str, str]]:
        return self.tree.links()

    def not_files(self) -> list[str]:
        return self.tree.not_files()

    def stat_note(self, rel: str) -> os.stat_result | None:
        """The stat of one file as `walk()` would see it (vault/tree.py), the group in place."""
        self.commit_group()
        return self.tree.stat_note(rel)

    def stat_folder(self, rel: str) -> os.stat_result | None:
        return self.tree.stat_folder(rel)

    def entries(self, rel: str) -> list[os.DirEntry[str]]:
        """One folder's entries as every walk sees them, the group in place."""
        self.commit_group()
        return self.tree.entries(rel)

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
