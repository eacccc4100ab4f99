"""Two files, one id (a copy): which keeps the id, and the copy's own new id."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from brain._indexes.handmade import moved_aside
from brain._model import Note, new_id, parse_iso

if TYPE_CHECKING:
    from brain._indexes.rows import FileRow

Claim = tuple[str, str]  # a file holding an id: (its `created` as written, its path)
_NEVER = datetime.max.replace(tzinfo=UTC)
_LAST_ULID_SECOND = 2**48 // 1000


class Holders:
    """Which file held each id before a pass over the files (a catch-up or a rebuild), so a
    copy never takes the id from the note that held it first.

    A rebuild is given the catalog's holders from before it was cleared (`before`). A
    catch-up asks the catalog itself: its holder of an id held it before the pass unless the
    pass has indexed that file since; each file the pass indexes is `saw`ed first with the id
    the catalog knew it by (or, for a file renamed, the id its inode was known by).
    """

    def __init__(self, before: Mapping[str, str] | None = None) -> None:
        self._before = before
        self._seen: dict[str, str | None] = {}  # path → the id it held before this pass
        self._gone: dict[int, str] = {}  # inode → id, of the files gone in this pass
        self._went: dict[str, str] = {}  # id → the path it went from in this pass

    def went(self, row: FileRow) -> None:
        """A known file gone from its path: if its inode turns up elsewhere, it was moved."""
        if row.note_id and row.inode:
            self._gone[row.inode] = row.note_id
        if row.note_id:
            self._went[row.note_id] = row.path

    def moved_from(self, note_id: str) -> str | None:
        """Where this id was before the pass, for a file that holds it now: the file gone
        from there in this pass, or (a rebuild) the catalog's holder before it was cleared."""
        if self._before is not None:
            return self._before.get(note_id)
        return self._went.get(note_id)

    def saw(self, rel: str, known: FileRow | None, inode: int) -> None:
        """The file at rel, about to be indexed, as the catalog knew it (None: not at all)."""
        if rel not in self._seen:
            self._seen[rel] = known.note_id if known is not None else self._gone.get(inode)

    def held(self, note_id: str, rel: str) -> bool:
        """Whether the file at rel held this id before the pass."""
        if self._before is not None:
            return self._before.get(note_id) == rel
        return self._seen.get(rel, note_id) == note_id

    def keeps(self, note_id: str, mine: Claim, theirs: Claim) -> bool:
        """Whether `mine` keeps an id `theirs` (the catalog's holder now) holds too: the one
        that held it first keeps it, by the catalog, then by `created`, then by path."""
        if self.held(note_id, theirs[1]):
            return False
        if self.held(note_id, mine[1]):
            return True
        return _first(mine) < _first(theirs)


def _first(claim: Claim) -> tuple[datetime, bool, str]:
    """A claim's place in line: the earlier `created` first; one missing or unreadable (a
    hostile copy may write anything there) after every readable one; then a file at its own
    name before one at a correction's `(superseded <day>)` name (a correction stopped, or a
    copy taken, between its two writes holds the note in both); then the path."""
    try:
        when = parse_iso(claim[0]) if claim[0] else _NEVER
    except (ValueError, OverflowError):
        when = _NEVER
    return when, moved_aside(claim[1]), claim[1]


def renew(note: Note, original: str, now: datetime) -> Note:
    """A copy of a note, given an id of its own; `copy_of` names the note it was copied from.

    The id is made from the note's `created` and the copy's path, not drawn at random: a
    file-sync tool (synced.py) brings its conflict copy to every machine, where each brain
    renews it, and the same id written alike on each is no new conflict. A copy of a
    corrected note is not a version of it: its `supersedes` goes (with the status line a
    revert would restore), or the older version would have two next ones and every walk of
    the chain would refuse."""
    try:
        moment = parse_iso(note.created) if note.created else now
    except (ValueError, OverflowError):
        moment = now
    if not 0 <= moment.timestamp() < _LAST_ULID_SECOND:  # a ULID's 48 bits of milliseconds
        moment = now
    seed = f"{original}\0{note.path}".encode()
    return note.with_meta(
        id=new_id(moment, seed), copy_of=original, supersedes=None, prior_status_line=None
    )
