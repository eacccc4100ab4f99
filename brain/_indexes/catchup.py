"""Catching the caches up with the files: hand edits, new files, deletions, breakage."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from brain._errors import BrokenNote
from brain._indexes import handmade
from brain._indexes.copies import Holders, renew
from brain._indexes.folders import FolderCheck, by_folders
from brain._indexes.ports import CachesPort, CatalogPort, NotesPort
from brain._indexes.rows import FileRow, stamp_matches
from brain._model import LOCAL_ONLY, Note, content_hash, iso, parse_iso
from brain._processes import process_mark, stopped
from brain._vault import editors, forgotten
from brain._vault.paths import COLD_DIR
from brain._vault.tree import RESERVED_TOP

if TYPE_CHECKING:
    from pathlib import Path

    from brain._clock import Clock
    from brain._vault.tree import Folders


@dataclass(frozen=True)
class Comparison:
    """The one walk of the files against the catalog (catch-up, doctor and diagnostics)."""

    on_disk: tuple[tuple[str, os.stat_result, FileRow | None], ...]  # each file, its row if known
    missing: tuple[str, ...]  # files the catalog knows that are gone from disk

    @property
    def out_of_step(self) -> list[str]:
        """Files the catalog does not know, or knew at another size or time."""
        return [rel for rel, st, row in self.on_disk if row is None or not row.matches(st)]


def compare(
    store: NotesPort, catalog: CatalogPort, prefix: str = "", folders: Folders | None = None
) -> Comparison:
    """Walk the files (those under `prefix`) beside what the catalog knows of them: no reads.
    `folders` receives the folders walked, with their stats (see NoteStore.walk)."""
    known = {p: row for p, row in catalog.files().items() if p.startswith(prefix)}
    walked = store.walk(folders)
    on_disk = [(rel, st, known.get(rel)) for rel, st in walked if rel.startswith(prefix)]
    seen = {rel for rel, _st, _row in on_disk}
    return Comparison(tuple(on_disk), tuple(p for p in known if p not in seen))


@dataclass(frozen=True)
class Look:
    """What a catch-up found out of step, how it looked, and what to record once applied."""

    todo: list[str]
    gone: list[str]
    how: str  # `watcher` (trusted, nothing looked at), `folders` or `walk`
    folders: int  # folders stat'ed
    listed: int  # folders listed
    record: Callable[[], None]


def look(store: NotesPort, catalog: CatalogPort, now: datetime, *, force: bool) -> Look:
    """The files out of step, found as cheaply as may be trusted: nothing while a live watcher
    keeps the caches in step; the folders changed since a recent full walk (above
    QUICK_ABOVE files); otherwise, or when forced, the full walk."""
    if not force and watched(catalog, store.root):
        return Look([], [], "watcher", 0, 0, lambda: None)
    quick = look_by_folders(store, catalog) if not force and walked_lately(catalog, now) else None
    if quick is not None:
        return quick
    folders: Folders = []
    found = compare(store, catalog, folders=folders)
    return Look(
        found.out_of_step,
        list(found.missing),
        "walk",
        len(folders),
        len(folders),
        lambda: record_walk(catalog, folders, len(found.on_disk), now, found),
    )


def look_by_folders(store: NotesPort, catalog: CatalogPort) -> Look | None:
    """The check by folders (by_folders) as a Look; None when only a full walk can tell."""
    check = by_folders(store, catalog)
    if check is None:
        return None
    return Look(
        list(check.todo),
        list(check.gone),
        "folders",
        check.stated,
        len(check.seen),
        lambda: record_folders(catalog, check),
    )


@dataclass(frozen=True)
class Walk:
    """A full walk made aside (on another thread, through a catalog connection of its own),
    to apply later where the caches live: paths and stamps only, no rows or stats kept (at
    1M files those are a few hundred MB and seconds of the collector's time)."""

    suspects: tuple[str, ...]  # out of step or gone: to check again by stat when applied
    unknown: tuple[tuple[int, str, int, int], ...]  # rows known without an inode: fill_inodes
    files: int  # note files on disk
    folders: Folders
    when: datetime


def walk_against(store: NotesPort, catalog: CatalogPort, now: datetime) -> Walk:
    """The files beside the catalog's stamps of them (as `compare`, lighter): reads only."""
    known = catalog.stamps()
    folders: Folders = []
    suspects: list[str] = []
    unknown: list[tuple[int, str, int, int]] = []
    files = 0
    for rel, st in store.walk(folders):
        files += 1
        stamp = known.pop(rel, None)
        if stamp is None or not stamp_matches(stamp, st):
            suspects.append(rel)
        elif stamp[2] == 0:
            unknown.append((st.st_ino, rel, stamp[0], stamp[1]))
    return Walk((*suspects, *known), tuple(unknown), files, folders, now)


def paths_out_of_step(
    store: NotesPort, catalog: CatalogPort, rels: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Of these vault-relative paths (the watcher's), the note files the catalog does not
    know or knew at another size or time, and the known ones gone: one stat each, no reads,
    so the cost follows the change, not the vault's size."""
    todo, gone = [], []
    for rel in sorted(set(rels)):
        if not is_note_path(rel):
            continue
        row = catalog.file(rel)
        st = store.stat_note(rel)  # gone, or a link (never followed): None
        if st is None:
            if row is not None:
                gone.append(rel)
        elif row is None or not row.matches(st):
            todo.append(rel)
    return todo, gone


# The full walk also runs at least this often (seconds): an edit in place changes no folder.
FULL_WALK_EVERY = 300.0
# Below this many files the full walk is cheap (~0.1 s) and sees everything: always walk.
QUICK_ABOVE = 10_000
WALKED = "walked"  # info key: when the last full walk was, and how many files it found


def walked_lately(catalog: CatalogPort, now: datetime) -> bool:
    """Whether the folders recorded by the last full walk may stand in for a walk now: it
    was recent, and the vault is big enough for a walk to cost more than a look at folders."""
    when, files = _last_walk(catalog)
    if when is None:
        return False
    age = (now - when).total_seconds()
    return 0 <= age < FULL_WALK_EVERY and files >= QUICK_ABOVE


def walked_files(catalog: CatalogPort) -> int:
    """How many files the last full walk found (0: no walk recorded)."""
    return _last_walk(catalog)[1]


def _last_walk(catalog: CatalogPort) -> tuple[datetime | None, int]:
    """When the last full walk was and how many files it found, as `record_walk` wrote it."""
    when, _, files = (catalog.info(WALKED) or "").partition(" ")
    try:
        return parse_iso(when), int(files)
    except ValueError:
        return None, 0


def record_walk(
    catalog: CatalogPort,
    folders: Folders,
    files: int,
    now: datetime,
    found: Comparison | None = None,
) -> None:
    """After a full walk: its folders' stamps, when it was and how many files it found; and
    the inodes of files a catalog from before inodes knew only by size and mtime."""
    catalog.put_folders([(rel, st.st_mtime_ns, st.st_ino) for rel, st in folders], whole=True)
    catalog.set_info(WALKED, f"{iso(now)} {files}")
    if found is not None:
        catalog.fill_inodes(
            (st.st_ino, rel, st.st_mtime_ns, st.st_size)
            for rel, st, row in found.on_disk
            if row is not None and row.inode == 0
        )


WATCHER = "watcher"  # info key: the live process whose watcher keeps the caches in step


def watcher_mark(pid: int, root: Path) -> str | None:
    """The mark a live watcher leaves in the catalog: its process (pid and start time) and the
    vault folder it follows (device and inode), so a copy of the vault (`cp -r work personal`,
    its catalog copied with the mark) is not taken as followed by the original's daemon."""
    mark = process_mark(pid)
    try:
        st = root.stat()
    except OSError:
        return None
    return None if mark is None else f"{mark} {st.st_dev}:{st.st_ino}"


def watched(catalog: CatalogPort, root: Path) -> bool:
    """Whether a live watcher (the daemon's) keeps the caches in step with the files: then
    it is authoritative and a catch-up has nothing to look for (within its quiet spell)."""
    mark = catalog.info(WATCHER)
    if not mark:
        return False
    pid = mark.partition(" ")[0]
    return (
        pid.isdigit()
        and watcher_mark(int(pid), root) == mark
        and not stopped(int(pid), or_dead=True)
    )


def record_folders(catalog: CatalogPort, check: FolderCheck) -> None:
    """After a check by folders: the new stamps of those listed, and the gone forgotten."""
    if not check.seen and not check.dropped:
        return  # nothing changed: no write at all
    for rel in check.dropped:
        catalog.drop_folders(rel)
    catalog.put_folders(check.seen, whole=False)


def is_note_path(rel: str) -> bool:
    """Whether a vault-relative path is where `NoteStore.walk()` finds notes."""
    parts = rel.split("/")
    if len(parts) < 2 or any(not p or p.startswith(".") or p == ".." for p in parts):
        return False
    if parts[0] == COLD_DIR:
        return rel.endswith(".md.zst")
    if parts[0] == LOCAL_ONLY:
        parts = parts[1:]
    return (
        len(parts) >= 2
        and parts[0] not in RESERVED_TOP
        and rel.endswith(".md")
        and not editors.drawing_name(rel)
    )


@dataclass(frozen=True)
class CatchUp:
    """What a catch-up with the files found: hand edits, new files, deletions, breakage."""

    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    broken: tuple[str, ...] = ()


def apply_files(
    store: NotesPort, caches: CachesPort, clock: Clock, todo: Sequence[str], gone: Sequence[str]
) -> CatchUp:
    """Drop what vanished, index what changed; lock held."""
    changed, broken, removed = [], [], []
    holders = Holders()  # one for the pass: a copy never takes an id from its original
    for rel in gone:
        row = caches.catalog.file(rel)
        if row is None or store.stat_note(rel) is not None:
            continue  # still there as a note (a drawing's name is not a note's: editors.py)
        holders.went(row)
        if row.note_id:
            caches.drop_note(row.note_id, rel)
        else:
            caches.catalog.drop_file(rel)
        removed.append(rel)
    for start in range(0, len(todo), 1000):  # one catalog commit per 1,000 files
        with caches.catalog.transaction():
            for rel in todo[start : start + 1000]:
                outcome = index_file(store, caches, clock, rel, holders)
                if outcome == "broken":
                    broken.append(rel)
                elif outcome == "changed":
                    changed.append(rel)
    return CatchUp(tuple(changed), tuple(removed), tuple(broken))


def index_file(
    store: NotesPort,
    caches: CachesPort,
    clock: Clock,
    rel: str,
    holders: Holders | None = None,
    *,
    walked: bool = False,
) -> str:
    """Bring one file's cache entries in step: `changed`, `same`, `broken` or `gone`.

    `holders`: which file held each id before this pass (a rebuild's or a catch-up's, see
    copies.Holders); a fresh one for a file indexed alone. `walked`: rel comes from
    `store.walk()` just now.
    """
    try:
        if walked:
            data, st = store.read_walked(rel)
        else:
            data = store.read_bytes(rel)
            st = store.stat(rel)
    except FileNotFoundError:
        return "gone"
    known = caches.catalog.file(rel)
    holders = holders or Holders()
    holders.saw(rel, known, st.st_ino)
    if known is not None and known.hash == content_hash(data) and known.error is None:
        caches.catalog.put_file(known.of(rel, known.note_id, known.hash, st, None))
        return "same"
    try:
        note = store.parse(rel, data)
    except BrokenNote as exc:
        caches.put_broken(rel, data, st, exc.message)
        return "broken"
    if (alone := _left_alone(caches, note, data, st, known)) is not None:
        return alone
    if (named := _named_by_hand(store, caches, clock, holders, note, known)) is not None:
        note, data = named
        st = store.stat(rel)
    if (back := _forgotten_back(store, caches, holders, note, known)) is not None:
        caches.put_broken(rel, data, st, f"{rel}: {back}")
        return "broken"
    if known is not None and known.note_id and known.note_id != note.id:
        # The file now holds another note (moved over it, its id edited, a commit undone): the
        # one it held is gone from here, unless a file indexed before this one took it along.
        held = caches.catalog.get(known.note_id)
        if held is not None and held.path == rel:
            caches.drop_note(known.note_id)
    other = caches.catalog.get(note.id)
    if other is not None and other.path != rel and _holds(store, other.path, note.id):
        # Two files, one id: a copy. The file that held the id first keeps it; the copy gets
        # its own, written into its front-matter, as a dropped-in file does (`copy_of` says why).
        if not holders.keeps(note.id, (note.created, rel), (other.created, other.path)):
            note = renew(note, note.id, clock.now())
            data = store.write(note)
            st = store.stat(rel)
        else:
            copy = store.read(other.path)
            caches.drop_note(other.id, other.path)
            caches.put_note(note, data, st)
            copy = renew(copy, note.id, clock.now())
            copied = store.write(copy)
            caches.put_note(copy, copied, store.stat(copy.path))
            return "changed"
    caches.put_note(note, data, st)
    return "changed"


def _left_alone(
    caches: CachesPort, note: Note, data: bytes, st: os.stat_result, known: FileRow | None
) -> str | None:
    """The outcome for a file brain must not write, or None for a note: a drawing is never a
    note (vault/editors.py); an empty file is none yet (an editor may be saving it)."""
    rel = note.path
    if editors.drawing(note.meta):
        held = caches.catalog.get(known.note_id) if known is not None and known.note_id else None
        if held is not None and held.path == rel:  # read as a note before: no longer one
            caches.drop_note(held.note_id)
        caches.catalog.put_file(FileRow.of(rel, None, content_hash(data), st, None))
        return "same" if held is None else "changed"
    if not note.id and handmade.is_empty(note):
        caches.put_broken(rel, data, st, f"{rel}: {handmade.EMPTY}")
        return "broken"
    return None


def _named_by_hand(
    store: NotesPort,
    caches: CachesPort,
    clock: Clock,
    holders: Holders,
    note: Note,
    known: FileRow | None,
) -> tuple[Note, bytes] | None:
    """A file made or renamed by hand, written with its id and title (handmade.py), or None
    when it needs neither. A file whose front-matter went keeps the id it held here."""
    rel = note.path
    if not note.id:
        held = caches.catalog.get(known.note_id) if known is not None and known.note_id else None
        note = handmade.adopt(note, clock.now(), held if held and held.path == rel else None)
        return note, store.write(note)
    other = caches.catalog.get(note.id)
    before = other.path if other is not None else holders.moved_from(note.id)
    if not before or before == rel or _holds(store, before, note.id):
        return None  # not renamed, or a copy (below)
    title = handmade.renamed_title(note, before)
    if title is None:
        return None
    note = note.with_meta(title=title)
    return note, store.write(note)


def _forgotten_back(
    store: NotesPort, caches: CachesPort, holders: Holders, note: Note, known: FileRow | None
) -> str | None:
    """Why a file is kept out of the caches when it holds a note forgotten here, back from a
    backup or a copy (forgetting is for good: docs/security.md); None for any other note. Only
    an id the caches do not hold is looked up, so a walk of known notes costs nothing more."""
    if known is not None and known.note_id == note.id:
        return None
    if caches.catalog.get(note.id) is not None or holders.moved_from(note.id) is not None:
        return None
    found = forgotten.forgotten_here(store.root, note.id)
    if found is None:
        return None
    day = found.at[:10] or "an earlier day"
    return (
        f"holds a note forgotten here on {day}, back from a backup or a copy; kept out of "
        f"recall: {FORGOTTEN_BACK}"
    )


# What to do with a file that brought a forgotten note back (doctor, and a command given its id).
FORGOTTEN_BACK = (
    "delete the file to leave it forgotten, or remove its `id:` line to keep its text as a new note"
)


def _holds(store: NotesPort, rel: str, note_id: str) -> bool:
    """Whether the file at rel (as it is now, not as cached) holds this id."""
    try:
        return store.read(rel).id == note_id
    except (OSError, BrokenNote):
        return False
