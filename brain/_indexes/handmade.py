"""Files a person made, emptied or renamed in an editor (Obsidian): their id and title."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import replace
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from brain._errors import InvalidInput
from brain._model import Note, Status, is_id, iso, new_id
from brain._vault.paths import file_stem

if TYPE_CHECKING:
    from brain._indexes.rows import ObjectRow

# What an editor leaves in a file it has only just made, or is halfway through saving
# (Obsidian writes in place: the file is empty between truncating and writing, then holds
# the first dashes of the front-matter's fence). Writing an id into it then would swap the
# file under the editor, and the rest of its save would go to the old, unlinked file.
EMPTY = "an empty file; it becomes a note (given an id) once it holds text"
_HALF_FENCE = frozenset({"", "-", "--", "---"})


def is_empty(note: Note) -> bool:
    """Nothing to keep: no front-matter and no text but the start of a fence."""
    return not note.meta and note.body.strip() in _HALF_FENCE


def adopt(note: Note, now: datetime, known: ObjectRow | None = None) -> Note:
    """A Markdown file written by hand gets an id; the fields the person wrote are kept
    (first, in their order) and only the missing ones are added. `known`: the note the
    catalog knew at this path, whose front-matter the person removed: it keeps its id, kind
    and creation, so relations to it and its history still hold."""
    stamp = iso(now)
    if known is not None and not is_id(known.note_id):
        known = None  # an id typed by hand that no command could name: a new one
    defaults = {
        "title": PurePosixPath(note.path).stem,
        "kind": known.kind if known else "titled",
        "status": "active",
        "created": known.created if known else stamp,
        "touched": stamp,
        "source": {"via": "hand"},
    }
    # An empty or null `id` the person left is filled in where it stands (first otherwise).
    meta = dict(note.meta) if "id" in note.meta else {"id": None, **note.meta}
    meta["id"] = known.note_id if known else new_id(now)
    for key, value in defaults.items():
        meta.setdefault(key, value)
    return replace(note, meta=meta, raw_front=None)  # its BOM and line ends kept


_HISTORY = re.compile(r" \(superseded \d{4}-\d\d-\d\d\)( \d+)?")
_ASIDE = re.compile(_HISTORY.pattern + r"$")


def moved_aside(path: str) -> bool:
    """Whether a file has the name a correction gives the version it moves aside."""
    return _ASIDE.search(PurePosixPath(path).stem) is not None


def renamed_title(note: Note, before: str) -> str | None:
    """The title a note renamed by hand takes: its new file name, when its old one was its
    title's (Obsidian shows a note's file name as its title, and renaming there renames the
    file only); None when the title stays."""
    old, new = PurePosixPath(before), PurePosixPath(note.path)
    if old.stem == new.stem or not new.name.endswith(".md") or not old.name.endswith(".md"):
        return None  # moved to another folder, or a cold file
    aside = new.stem.startswith(old.stem) and _HISTORY.fullmatch(new.stem[len(old.stem) :])
    if note.status == Status.SUPERSEDED and aside:
        return None  # a correction moved it aside (pulled from another clone): not a rename
    try:
        stem = file_stem(note.title)
    except InvalidInput:  # a title with no characters usable in a file name
        return None
    was = unicodedata.normalize("NFC", old.stem)  # brain names files in NFC; macOS wrote NFD
    named = was == stem or re.fullmatch(re.escape(stem) + r" \d+", was)
    return new.stem if named and unicodedata.normalize("NFC", new.stem) != stem else None
