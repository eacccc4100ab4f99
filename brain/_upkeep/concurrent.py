"""Two machines changed one note: what a merge keeps, so that neither side's change is lost.

One note corrected on both machines: each correction wrote its new version at the note's path,
so git sees two edits of one file. The `note` merge driver (every Markdown file git merges with
changes on both sides) orders the two corrections by creation time (then id, so both clones
agree): the later one stays current at the path and now supersedes the earlier one, which
becomes a version in its history, marked superseded as a correction marks it. git's driver
writes one file, so the earlier version waits under .brain/ (`aftermerge`) until the merge is
over; the next brain command writes it beside the note and commits it. Anything else (a hand
edit on either side) falls back to git's line merge, conflict markers and all.

Also here, the other half of a dated note's merge: relations to the id it did not keep are
repointed to the one it kept.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path, PurePosixPath

from brain._context import Context
from brain._errors import BrainError, BrokenNote
from brain._git import aftermerge
from brain._git.merge import line_merge, merges_cleanly
from brain._mergedids import moment
from brain._model import Note, Relation, Status, parse_iso
from brain._notes.corrections import CORRECTABLE, PRIOR_FIELD, history_path, supersede
from brain._upkeep.fieldmerge import merge_fields
from brain._vault import notefile

DATED = ("dated", "log")  # the kinds a dated merge joins


def merge_note(base: Path, ours: Path, theirs: Path, rel: str, cwd: Path) -> int:
    """The `note` merge driver: merge into `ours`; 0 when clean, 1 when conflicted."""
    try:
        texts = [p.read_text(encoding="utf-8") for p in (base, ours, theirs)]
        both = corrected_on_both(*texts, rel=rel)
    except (BrokenNote, UnicodeDecodeError, FileNotFoundError):
        both = None
    if both is None:
        return _lines_or_fields(base, ours, theirs, rel)
    current, earlier = both
    if not aftermerge.leave(cwd, {"kind": "version", "path": rel, "text": earlier}):
        return line_merge(base, ours, theirs)  # nowhere to keep the earlier one: git's way
    ours.write_text(current, encoding="utf-8")
    return 0


def _lines_or_fields(base: Path, ours: Path, theirs: Path, rel: str) -> int:
    """git's line merge when it is clean; else, when the sides are brain's own changes of one
    note (a relation, a field, a paragraph added, a correction), merged field by field
    (`fieldmerge`); else git's conflict."""
    if not merges_cleanly(base, ours, theirs):
        try:
            texts = [p.read_text(encoding="utf-8") for p in (base, ours, theirs)]
            merged = merge_fields(*texts, rel=rel)
        except (BrokenNote, UnicodeDecodeError, FileNotFoundError):
            merged = None
        if merged is not None:
            ours.write_text(merged, encoding="utf-8")
            return 0
    return line_merge(base, ours, theirs)


def corrected_on_both(base: str, ours: str, theirs: str, *, rel: str) -> tuple[str, str] | None:
    """For two corrections of the base note: the later one, now superseding the earlier, and
    the earlier one marked superseded. None when the sides are anything else."""
    if not base.strip() or not ours.strip() or not theirs.strip():
        return None
    old, a, b = (notefile.parse(t, rel) for t in (base, ours, theirs))
    if len({old.id, a.id, b.id}) != 3 or not (a.id and b.id and a.supersedes and b.supersedes):
        return None
    if a.kind not in CORRECTABLE or b.kind not in CORRECTABLE:
        return None
    if Status.SUPERSEDED in (a.status, b.status):
        return None
    earlier, later = sorted((a, b), key=lambda n: (n.created, n.id or ""))
    marked, prior = supersede(earlier)
    edges = [
        r for r in later.relations if not (r.type == "corrects" and r.target == later.supersedes)
    ]
    edges.append(Relation("corrects", str(earlier.id)))
    current = later.with_meta(
        supersedes=earlier.id,
        relations=[r.to_yaml() for r in edges],
        **{PRIOR_FIELD: prior},
    )
    return notefile.render(current), notefile.render(marked)


def settle(brain: Context) -> list[str]:
    """Do what merge drivers left for after the merge (callers hold the lock, in an operation);
    says what was done, for the commit message."""
    said = []
    for entry in aftermerge.left(brain.root):
        try:
            said += _settle_one(brain, entry)
        except (BrainError, OSError, ValueError):
            # One entry brain cannot act on (a field that does not read, an archived
            # partition) must not stop every later command: the merge's files stay as git
            # made them, and git's history keeps both sides. The error is not said: it may
            # name a note the commit message should not.
            said.append(f"leave {entry.get('path') or entry.get('gone') or '?'} as merged")
    aftermerge.done(brain.root)
    return said


def _settle_one(brain: Context, entry: dict[str, str]) -> list[str]:
    if entry.get("kind") == "version":
        placed = _place(brain, entry.get("path", ""), entry.get("text", ""))
        if placed is not None:
            return [f"keep {placed.id} as an earlier version of {placed.title!r}"]
    elif entry.get("kind") == "alias":
        moved = _repoint(brain, entry.get("gone", ""), entry.get("kept", ""))
        if moved:
            return [f"repoint {moved} relation(s) from {entry['gone']} to {entry['kept']}"]
    return []


def drop_twins(brain: Context) -> list[str]:
    """Corrections made on different days: each machine kept the note's original as its own
    `<name> (superseded <day>)` file, the same bytes twice. The earliest named one stays, its
    twins go, before a walk would take one for a copy and give it an id of its own (callers
    hold the lock, in an operation, before the walk). Both clones drop the same file."""
    dropped = []
    for entry in aftermerge.left(brain.root):
        if entry.get("kind") != "version":
            continue
        where = PurePosixPath(entry.get("path", ""))
        try:
            original = notefile.parse(entry.get("text", ""), str(where)).supersedes
        except BrokenNote:
            continue
        prefix = f"{where.stem} (superseded "
        names = [n for n in brain.store.names(str(where.parent)) if n.startswith(prefix)]
        kept: bytes | None = None
        for name in sorted(names, key=lambda n: PurePosixPath(n).stem):
            rel = str(where.parent / name)
            try:
                data = brain.store.read_bytes(rel)
                if kept is None and original and brain.store.parse(rel, data).id == original:
                    kept = data
                elif data == kept:
                    brain.store.delete(rel)
                    dropped.append(rel)
            except (BrokenNote, FileNotFoundError, IsADirectoryError):
                continue
    return dropped


def _place(brain: Context, rel: str, text: str) -> Note | None:
    """Write the earlier of two corrections beside the note, if the merge kept the later one."""
    try:
        earlier = notefile.parse(text, rel)
        current = brain.store.read(rel)
    except (BrokenNote, FileNotFoundError):
        return None  # the merge was aborted or resolved by hand: git's history keeps both
    if not earlier.id or brain.caches.catalog.get(earlier.id) is not None:
        return None
    if current.supersedes != earlier.id:
        return None
    where = history_path(brain, rel, parse_iso(current.created))
    return brain.save(earlier.with_path(where))


def _repoint(brain: Context, gone: str, kept: str) -> int:
    """Relations to an id a dated merge did not keep now name the id it kept."""
    catalog = brain.caches.catalog
    day = catalog.get(kept)
    if not gone or day is None or catalog.get(gone) is not None or day.kind not in DATED:
        return 0
    # Only an id made that day: a remote that gave its day's note the id of a note it deleted
    # must not steer relations of the person's notes (their local-only ones among them).
    made, created = moment(gone), parse_iso(day.created)
    if made is None or abs(made - created) > timedelta(days=2):
        return 0
    holders = sorted({edge.source for edge in catalog.relations_to_any([gone])})
    for holder in holders:
        note = brain.get(holder)
        edges = [
            Relation(r.type, kept if r.target == gone else r.target, r.weight)
            for r in note.relations
        ]
        brain.save(note.with_meta(relations=[r.to_yaml() for r in edges]))
    return len(holders)
