"""Catch-up by folders: what changed, from the folders the last full walk recorded."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brain._model import LOCAL_ONLY
from brain._vault.paths import COLD_DIR

if TYPE_CHECKING:
    from brain._indexes.ports import CatalogPort, NotesPort
    from brain._vault.tree import Folders


@dataclass(frozen=True)
class FolderCheck:
    """The files out of step as the folders that changed since the last walk show them."""

    todo: tuple[str, ...]  # new files, or files replaced by another (a new inode)
    gone: tuple[str, ...]  # files the catalog knows that are no longer there
    seen: tuple[tuple[str, int, int], ...]  # folders listed: (path, mtime_ns, inode) to record
    dropped: tuple[str, ...]  # folders gone from disk, to forget with all below them
    stated: int  # folders stat'ed (every recorded one)
    files: int  # files stat'ed beyond the listings (rows of a catalog made before inodes)


def by_folders(store: NotesPort, catalog: CatalogPort) -> FolderCheck | None:
    """What changed, from the folders alone: one stat per folder recorded by the last walk,
    and a listing (no stat per file: the inode comes with the listing) of those whose mtime
    or inode moved. None when only a full walk can tell: nothing recorded, or the vault's top
    or `local-only` folder changed (a partition made, renamed or removed).

    A file created, deleted or renamed into place (an editor's safe save) changes its
    folder's mtime; a file rewritten in place (same inode) does not: that is what this check
    cannot see, and why a full walk still runs now and then (HandEdits.catch_up).
    """
    known = catalog.folders()
    if not known:
        return None
    changed = sorted(rel for rel, stamp in known.items() if _stamp(store, rel) != stamp)
    if "" in changed or LOCAL_ONLY in changed:
        return None
    found = _Found()
    for rel in changed:
        if any(rel.startswith(f"{d}/") for d in found.dropped):
            continue
        st = store.stat_folder(rel)  # before listing: a change after it shows next time
        if st is None:
            found.dropped.append(rel)
            found.gone += catalog.files_under(rel)
            continue
        found.seen.append((rel, st))
        listed = _list_folder(store, catalog, rel, known, found)
        _drop_unlisted(catalog, rel, known, listed, found)
    stamps = tuple((rel, st.st_mtime_ns, st.st_ino) for rel, st in found.seen)
    return FolderCheck(
        tuple(found.todo),
        tuple(dict.fromkeys(found.gone)),
        stamps,
        tuple(found.dropped),
        len(known),
        found.files,
    )


@dataclass
class _Found:
    """What `by_folders` has found so far (FolderCheck's fields, being gathered)."""

    todo: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    seen: Folders = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    files: int = 0


def _list_folder(
    store: NotesPort,
    catalog: CatalogPort,
    rel: str,
    known: dict[str, tuple[int, int]],
    found: _Found,
) -> set[str]:
    """List one changed folder: its new folders' files and its new or replaced notes are to
    do, the notes it no longer holds are gone. Returns what it listed."""
    inodes = catalog.inodes_in(rel)  # the files right in it: path → inode (0: not known)
    suffix = ".md.zst" if rel.split("/")[0] == COLD_DIR else ".md"
    listed: set[str] = set()
    for entry in store.entries(rel):
        child = f"{rel}/{entry.name}"
        if entry.is_dir(follow_symlinks=False):
            listed.add(child)
            if child not in known:  # a new folder: everything in it is new
                found.todo += [r for r, _st in store.walk_folder(child, found.seen)]
        elif entry.name.endswith(suffix) and entry.is_file(follow_symlinks=False):
            listed.add(child)
            if _out_of_step(catalog, child, entry, inodes.get(child), found):
                found.todo.append(child)
    found.gone += [p for p in inodes if p not in listed]
    return listed


def _out_of_step(
    catalog: CatalogPort, child: str, entry: os.DirEntry[str], inode: int | None, found: _Found
) -> bool:
    """Whether a listed note is new or replaced: by its inode, else by its size and mtime."""
    if inode == 0:  # known before inodes were kept: size and mtime decide
        found.files += 1
        row = catalog.file(child)
        return row is None or not row.matches(entry.stat(follow_symlinks=False))
    return inode is None or inode != entry.inode()


def _drop_unlisted(
    catalog: CatalogPort,
    rel: str,
    known: dict[str, tuple[int, int]],
    listed: set[str],
    found: _Found,
) -> None:
    """The recorded folders right under `rel` that its listing no longer holds are gone."""
    for sub in known:
        if sub.startswith(f"{rel}/") and "/" not in sub[len(rel) + 1 :] and sub not in listed:
            found.dropped.append(sub)
            found.gone += catalog.files_under(sub)


def _stamp(store: NotesPort, rel: str) -> tuple[int, int] | None:
    st = store.stat_folder(rel)
    return None if st is None else (st.st_mtime_ns, st.st_ino)
