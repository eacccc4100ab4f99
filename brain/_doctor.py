"""Looking without touching: `brain doctor` for the person; usage and diagnostics for a model."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._errors import BrainError, BrokenNote
from brain._git import history as githistory
from brain._indexes import catchup
from brain._indexes.catalog import REBUILT
from brain._indexes.copies import Holders
from brain._indexes.rows import FileRow
from brain._model import KINDS, STATUSES, Note, Visibility, content_hash, is_id, parse_iso
from brain._notes import relations
from brain._settings import SETTINGS_FILE
from brain._sources import documents
from brain._upkeep import dictionaries
from brain._vault import editors, leftovers, portable, synced
from brain._vault.archive import is_archived
from brain._vault.paths import COLD_DIR

if TYPE_CHECKING:
    from brain._context import Context


VAULT_README = "README.md"  # the vault's own, from vault-template/ (`brain init`)


@dataclass(frozen=True)
class DoctorReport:
    broken: tuple[tuple[str, str], ...] = ()  # (path, reason)
    unknown: tuple[str, ...] = ()  # files on disk the caches do not know
    changed: tuple[str, ...] = ()  # files changed since the caches saw them
    missing: tuple[str, ...] = ()  # cached files no longer on disk
    stale: tuple[str, ...] = ()  # problems with the caches themselves
    cycles: tuple[str, ...] = ()  # `supersedes` fields that loop (hand edits)
    dangling: tuple[str, ...] = ()  # relations or `supersedes` naming no note
    conflicts: tuple[str, ...] = ()  # files holding git conflict markers (docs/git.md)
    links: tuple[str, ...] = ()  # symbolic links in the vault: skipped, never followed
    copies: tuple[str, ...] = ()  # files holding the id of another file (a copy)
    renewed: tuple[str, ...] = ()  # copies given an id of their own (`copy_of`): for the record
    leftovers: tuple[str, ...] = ()  # temp files of killed writes (`brain sleep` removes them)
    rebuilt: str | None = None  # when and why the caches last rebuilt themselves (no problem)
    unread: tuple[str, ...] = ()  # Markdown files outside every partition: never read (no problem)
    fields: tuple[str, ...] = ()  # brain's own fields holding what brain cannot use (hand edits)
    not_files: tuple[str, ...] = ()  # named as notes but no file (a folder): skipped by every walk
    cold_text: tuple[str, ...] = ()  # plain Markdown in the cold tier: never read
    unmerged: tuple[str, ...] = ()  # deleted on one side of a merge, changed on the other
    synced: tuple[str, ...] = ()  # file-sync tools copying `.brain/` to other machines
    sync_copies: tuple[str, ...] = ()  # a sync tool's conflict copies: both machines changed it
    unportable: tuple[str, ...] = ()  # names a clone on macOS or Windows cannot hold
    nested: tuple[str, ...] = ()  # another vault (its brain.yaml) in a folder of this one
    daily: tuple[str, ...] = ()  # the editor's daily notes in a partition of their own (no problem)

    @property
    def ok(self) -> bool:
        return not (
            self.broken
            or self.unknown
            or self.changed
            or self.missing
            or self.stale
            or self.cycles
            or self.dangling
            or self.conflicts
            or self.links
            or self.copies
            or self.leftovers
            or self.fields
            or self.not_files
            or self.cold_text
            or self.unmerged
            or self.synced
            or self.sync_copies
            or self.unportable
            or self.nested
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "broken": [{"path": p, "reason": r} for p, r in self.broken],
            "unknown": list(self.unknown),
            "changed": list(self.changed),
            "missing": list(self.missing),
            "stale": list(self.stale),
            "cycles": list(self.cycles),
            "dangling": list(self.dangling),
            "conflicts": list(self.conflicts),
            "links": list(self.links),
            "copies": list(self.copies),
            "renewed": list(self.renewed),
            "leftovers": list(self.leftovers),
            "rebuilt": self.rebuilt,
            "unread": list(self.unread),
            "fields": list(self.fields),
            "not_files": list(self.not_files),
            "cold_text": list(self.cold_text),
            "unmerged": list(self.unmerged),
            "synced": list(self.synced),
            "sync_copies": list(self.sync_copies),
            "unportable": list(self.unportable),
            "nested": list(self.nested),
            "daily": list(self.daily),
        }


def examine(brain: Context) -> DoctorReport:
    """Look without touching: broken notes, files the caches don't know, stale caches."""
    walked: list[tuple[str, os.stat_result]] = []
    found = catchup.compare(brain.store, brain.caches.catalog, folders=walked)
    broken, unknown, changed = [], [], []
    seen = {rel for rel, _st, _row in found.on_disk}
    parsed = []
    for rel, _st, row in found.on_disk:
        data = brain.store.read_bytes(rel)
        try:
            note = brain.store.parse(rel, data)
        except BrokenNote as exc:
            broken.append((rel, exc.message))
            continue
        if not editors.drawing(note.meta):  # a drawing is no note (vault/editors.py)
            parsed.append(note)
        if row is None:
            unknown.append(rel)
        elif row.error is not None:
            broken.append((rel, row.error))
        elif row.hash != content_hash(data):
            changed.append(rel)
    # A broken file deleted (a forgotten note's copy, as doctor advised) left nothing cached.
    catalog = brain.caches.catalog
    missing = sorted(p for p in found.missing if (row := catalog.file(p)) is None or not row.error)
    stale = []
    brain.flush(vectors=False)
    objects = brain.caches.catalog.count()
    in_text = len(brain.caches.fulltext)
    if objects != in_text:
        stale.append(
            f"full-text index holds {in_text} objects, the catalog {objects}; run `brain reindex`"
        )
    try:
        brain.caches.fulltext.everything()  # its stored texts, which only a read meets
    except BrainError as exc:
        stale.append(f"{exc.message}; {exc.hint}")
    if retiring := dictionaries.pending(brain):
        stale.append(
            f"cold-tier dictionaries {', '.join(map(str, sorted(retiring)))} hold a trace of a "
            "forgotten note and are not yet replaced; run `brain reindex`"
        )
    cycles, dangling = relations.check(parsed, brain.caches.catalog)
    conflicts = githistory.conflict_markers(brain.root, sorted(seen))
    links = [
        f"{rel}: a symbolic link leading {where} the vault; skipped, never followed"
        for rel, where in brain.store.links()
    ]
    copies, renewed = _copies(brain, parsed)
    # A sync tool's copy of a file brain writes anew is a leftover too; said with the notes'.
    found_left = leftovers.find(brain.root, brain.clock.now().timestamp())
    left = [rel for rel in found_left if not synced.generated_copy(rel)]
    copies_of = sorted(seen) + [rel for rel in found_left if synced.generated_copy(rel)]
    rebuilt = brain.caches.catalog.info(REBUILT)
    return DoctorReport(
        tuple(broken),
        tuple(unknown),
        tuple(changed),
        tuple(missing),
        tuple(stale),
        tuple(cycles),
        tuple(dangling),
        tuple(conflicts),
        tuple(links),
        tuple(copies),
        tuple(renewed),
        tuple(left),
        rebuilt,
        tuple(_unread(brain)),
        tuple(odd for note in parsed for odd in _odd_fields(note)),
        tuple(_not_files(brain)),
        tuple(_cold_text(brain)),
        tuple(
            f"{rel}: deleted on one side of the merge in progress, changed on the other (no "
            "conflict markers); `brain git status` says whether a brain forget settles it at the "
            "next command, else keep it (`git add`) or let it go (`git rm`)"
            for rel in githistory.deleted_in_merge(brain.root)
        ),
        tuple(synced.exposed(brain.root)),
        tuple(synced.conflict_copies(copies_of)),
        tuple(portable.names(brain.root)),
        tuple(_nested(brain.root, walked)),
        tuple(_daily(brain)),
    )


def _nested(root: Path, walked: list[tuple[str, os.stat_result]]) -> list[str]:
    """Another vault moved, copied or cloned into a folder of this one (`brain init` refuses
    to make one there). Every walk leaves it out (vault/tree.py), so its notes are neither
    recalled nor written here; an editor opened on this vault still shows them as its own.
    One stat per folder the walk went into, and per top-level folder (never walked then)."""
    try:
        top = [e.name for e in os.scandir(root) if e.is_dir(follow_symlinks=False)]
    except OSError:
        top = []
    shown = sorted(n for n in top if not n.startswith("."))
    folders = dict.fromkeys([*shown, *(rel for rel, _st in walked)])
    return [
        f"{rel}: another vault (its {SETTINGS_FILE}) inside this one; this vault leaves its "
        "files alone (none is recalled or written here), but an editor opened here shows "
        "them as this vault's: move it out of this vault"
        for rel in folders
        if rel and (root / rel / SETTINGS_FILE).is_file()
    ]


def _daily(brain: Context) -> list[str]:
    """The editor's daily-notes folder at the vault's top, in a folder of its own: every
    top-level folder is a partition, so its notes are recalled only from that partition."""
    if not brain.capabilities.hand_edits:
        return []
    said = []
    partitions = brain.store.partitions()
    for folder, setting in editors.daily_folders(brain.root):
        top = folder.split("/")[0]
        if top not in partitions or (brain.root / top / "Knowledge").is_dir():
            continue  # not there yet, or in a partition brain made (`main/Daily`): recalled
        said.append(
            f"{folder}: the editor's daily notes folder ({setting}) is a partition of its own, "
            f"{top!r}: recall in {brain.settings.default_partition!r} never finds its notes. "
            f"To recall them with the rest, set the folder to "
            f"{brain.settings.default_partition}/{folder} in Obsidian (Settings → Daily notes → "
            f"New file location) and move the notes there; or ask with `--partition {top}`"
        )
    return said


def _not_files(brain: Context) -> list[str]:
    """A note file replaced by a folder of its name (an editor, a script, a slip): brain
    reads no note there, so it is said with what to do; nothing is moved or removed."""
    said = []
    for rel in brain.store.not_files():
        what = "a folder" if brain.store.stat_folder(rel) is not None else "not a regular file"
        said.append(
            f"{rel}: {what} where a note file of that name belongs; no note is read there. "
            "Rename it (what is inside stays where it is), then put the note back (under git: "
            f"`git log -- '{rel}'` shows its last text)"
        )
    return said


def _cold_text(brain: Context) -> list[str]:
    """Plain `.md` files in the cold tier (a cold note unpacked by hand to read or edit it):
    the cold tier is read only as `.md.zst` frames, so their text is in no note."""
    if not brain.capabilities.hand_edits:
        return []
    said = []
    for folder, dirs, names in os.walk(brain.root / COLD_DIR):
        dirs.sort()
        for name in sorted(n for n in names if n.endswith(".md")):
            rel = (Path(folder) / name).relative_to(brain.root).as_posix()
            hot = rel.removeprefix(f"{COLD_DIR}/")
            said.append(
                f"{rel}: a plain Markdown file in the cold tier, which brain reads only as "
                "`.md.zst` frames: no note holds its text. To edit a cold note, `brain tier move "
                f"ID hot` first; to keep this file as it is, move it to {hot}"
            )
    return said


def _a_time(text: str) -> bool:
    try:
        parse_iso(text)
    except ValueError:
        return False
    return True


def _odd_fields(note: Note) -> list[str]:
    """Brain's own fields a hand edit (an editor's properties pane) left holding what brain
    cannot use: an id no command can name, a title that is not text, a kind or status brain
    does not know, a time that is not one. Each is read as it stands, so it is said here."""
    meta, odd = note.meta, []
    if note.id and not is_id(note.id):
        odd.append(f"id {note.id!r} is not a brain id (26 letters and digits): no command names it")
    if "title" in meta and not isinstance(meta["title"], str):
        odd.append(f"title is {type(meta['title']).__name__}, not text")
    for field, known in (("kind", KINDS), ("status", STATUSES)):
        if field in meta and meta[field] not in known:
            odd.append(f"{field} {meta[field]!r} is none of {', '.join(known)}")
    for field in ("created", "touched"):
        if field in meta and not _a_time(str(meta[field])):
            odd.append(f"{field} {str(meta[field])!r} is not a date and time (2026-12-07T09:30Z)")
    return [f"{note.path}: {said}" for said in odd]


def _unread(brain: Context) -> list[str]:
    """Markdown files at the vault's top level (where Obsidian puts a new note and a daily
    note unless told otherwise): outside every partition, so no command reads them."""
    if not brain.capabilities.hand_edits:
        return []
    try:
        names = sorted(entry.name for entry in os.scandir(brain.root) if entry.is_file())
    except OSError:
        return []
    return [name for name in names if name.endswith(".md") and name != VAULT_README]


def _copies(brain: Context, parsed: list[Note]) -> tuple[list[str], list[str]]:
    """Files that share an id (a copy not yet given its own), and copies already renewed."""
    by_id: dict[str, list[Note]] = {}
    renewed = []
    for note in parsed:
        if note.id:
            by_id.setdefault(note.id, []).append(note)
        if note.meta.get("copy_of"):
            original = str(note.meta["copy_of"])
            kept = brain.caches.catalog.get(original)
            holder = f"{kept.path} kept the id {original}" if kept else f"the id was {original}"
            renewed.append(
                f"{note.path}: a copy ({holder}); this file got its own id {note.id} "
                "(remove `copy_of` from it once checked)"
            )
    copies = []
    for note_id, holders in by_id.items():
        if len(holders) < 2:
            continue
        known = brain.caches.catalog.get(note_id)
        rule = Holders({note_id: known.path} if known is not None else {})
        keeper = holders[0]
        for other in holders[1:]:
            if rule.keeps(note_id, (other.created, other.path), (keeper.created, keeper.path)):
                keeper = other
        copies += [
            f"{n.path}: holds the id {note_id} of {keeper.path} (a copy?); the next "
            "catch-up (any command) gives it an id of its own"
            for n in holders
            if n is not keeper
        ]
    return sorted(copies), sorted(renewed)


# for a model: one partition's usage and health (the MCP tools `usage` and `diagnostics`) ----
def usage(brain: Context) -> dict[str, Any]:
    """How many notes of each kind and status this partition holds, and their size on disk."""
    brain.catch_up()
    by_kind, by_status, size = brain.caches.catalog.usage(
        brain.partition, normal_only=brain.for_model
    )
    return {
        "partition": brain.partition,
        "notes": sum(by_kind.values()),
        "bytes": int(size),
        "by_kind": dict(sorted(by_kind.items())),
        "by_status": dict(sorted(by_status.items())),
    }


def diagnostics(brain: Context) -> dict[str, Any]:
    """Health without touching anything: caches in step, broken notes, connectors, retrievers."""
    # Only this partition's shared tree: a model learns nothing about other partitions or
    # about the person's local-only files, not even how many there are.
    prefix = brain.partition + "/"
    found = catchup.compare(brain.store, brain.caches.catalog, prefix)
    rows = {rel: row for rel, _st, row in found.on_disk}
    out_of_step = sum(1 for rel in found.out_of_step if not _hidden(brain, rel, rows[rel]))
    out_of_step += sum(
        1 for p in found.missing if not _hidden(brain, p, brain.caches.catalog.file(p))
    )
    brain.flush()  # apply queued cache changes, so the counts compare like with like
    objects = brain.caches.catalog.count()
    in_text = len(brain.caches.fulltext)
    broken = sum(1 for f in brain.caches.catalog.broken_files() if f.path.startswith(prefix))
    connectors = brain.settings.raw.get("connectors") or {}
    names = ["text"] + (["vector"] if brain.embedder is not None else [])
    names += ["sparse"] if brain.caches.sparse_on else []
    return {
        "partition": brain.partition,
        "archived": is_archived(brain.store, brain.partition),
        "caches_fresh": out_of_step == 0 and objects == in_text,
        "files_out_of_step": out_of_step,
        "fulltext_matches_catalog": objects == in_text,
        "broken_notes": broken,
        # Connectors are confirmed by the person at a terminal; a model can only see the count.
        "connectors_declared": len(connectors) if isinstance(connectors, dict) else 0,
        "pending_connectors": _pending(brain),
        "retrievers": names,
        "embedder": brain.settings.embedder,
        "model_loaded": bool(getattr(brain.embedder, "loaded", brain.embedder is not None)),
    }


def _hidden(brain: Context, rel: str, row: FileRow | None) -> bool:
    """Whether a file out of step is a note hidden from a model (as cached, or as it reads now);
    a model is told nothing of those, not even that they changed."""
    if not brain.for_model:
        return False
    cached = brain.caches.catalog.get(row.note_id) if row and row.note_id else None
    if cached is not None and not brain.shows(cached):
        return True
    try:
        return brain.store.read(rel).visibility != Visibility.NORMAL
    except (OSError, BrainError):
        return False  # gone, or broken: it has no visibility to keep (doctor names it)


def _pending(brain: Context) -> int:
    """Connectors declared in brain.yaml that wait for the person's confirmation."""
    return sum(1 for status in documents.statuses(brain) if status.state == "pending")
