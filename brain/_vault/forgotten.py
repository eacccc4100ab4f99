"""What a forgotten note was, kept as salted hashes only, so a check can look for its traces.

At forget time the note's id, title and text fragments (runs of words) are recorded under
`.brain/forgotten.json`, each hashed with a salt made for that record: the file holds no word
of the note, and the hashes of one record cannot be matched against another's. The hashes
confirm a guess but do not reveal a text; a short title can be guessed by someone who tries
candidate titles with the salt (docs/security.md). Machine-local: deleting `.brain/` loses
the records, never a memory.

A copy of the records is kept outside the vault, in the user's state folder
(`~/.local/state/brain/forgotten/`, one file per vault id and folder), and every read takes
both: a whole older backup restored over the vault with its own `.brain/` (whose records are
older than the forget) would otherwise bring the forgotten notes back with nothing to say so.
The copy is a safety net: a state folder that cannot be written leaves the forget as it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain import _settings
from brain._errors import BrainError, NotFound
from brain._model import Note
from brain._vault.files import atomic_write
from brain._vault.paths import CACHE_DIR

FILE = f"{CACHE_DIR}/forgotten.json"
SPAN = 5  # words in a text fragment: long enough to be this note's, short enough to survive
MOST_FRAGMENTS = 4096  # a 10 MB document keeps an even spread of this many
ENOUGH_FRAGMENTS = 32  # this many distinct fragments in one place are a trace of a long text
_WORD = re.compile(r"\w+")
ULID_LENGTH = 26


def words(data: bytes) -> list[str]:
    """The words of raw bytes, as every check reads them (any encoding damage ignored)."""
    return _WORD.findall(data.decode("utf-8", "replace").casefold())


def _digest(salt: bytes, run: Iterable[str]) -> str:
    return hashlib.blake2b(" ".join(run).encode(), key=salt, digest_size=8).hexdigest()


@dataclass(frozen=True)
class Record:
    """One forgotten note: a salt and the hashes of its id, title and text fragments."""

    salt: str
    id: str
    title: tuple[int, str] | None  # its length in words, its hash
    span: int  # words in each fragment (fewer for a text shorter than SPAN)
    fragments: frozenset[str]
    at: str
    # An imported conversation's platform and id (a chat file's: its turns' hash), hashed: a
    # later import leaves it out (conversations.py) instead of bringing back what was forgotten.
    origin: str | None = None

    @classmethod
    def of(cls, note_id: str, title: str, body: str, at: str, origin: str | None = None) -> Record:
        salt = secrets.token_bytes(16)
        title_words = words(title.encode())
        text = words(body.encode())
        span = min(SPAN, len(text))
        runs = [text[i : i + span] for i in range(len(text) - span + 1)] if text else []
        if len(runs) > MOST_FRAGMENTS:
            step = len(runs) / MOST_FRAGMENTS
            runs = [runs[int(n * step)] for n in range(MOST_FRAGMENTS)]
        return cls(
            salt.hex(),
            _digest(salt, [note_id.casefold()]),
            (len(title_words), _digest(salt, title_words)) if title_words else None,
            span,
            frozenset(_digest(salt, r) for r in runs),
            at,
            _digest(salt, [origin]) if origin else None,
        )

    def came_from(self, origin: str) -> bool:
        return (
            self.origin is not None and _digest(bytes.fromhex(self.salt), [origin]) == self.origin
        )

    def names(self, note_id: str) -> bool:
        return _digest(bytes.fromhex(self.salt), [note_id.casefold()]) == self.id

    def find(self, data: bytes) -> dict[str, int]:
        """How often the id and the title occur in these bytes, and how many distinct text
        fragments (when enough of them to be this text)."""
        found = {"id": 0, "title": 0}
        matched: set[str] = set()
        text = words(data)
        salt = bytes.fromhex(self.salt)
        title_span, title = self.title or (0, "")
        for span in sorted({1, title_span, self.span} - {0}):
            for i in range(len(text) - span + 1):
                run = text[i : i + span]
                if span == 1 and len(run[0]) != ULID_LENGTH and title_span != 1:
                    continue  # a single word is looked at only as an id (or a one-word title)
                digest = _digest(salt, run)
                found["id"] += span == 1 and digest == self.id
                found["title"] += span == title_span and digest == title
                if span == self.span and digest in self.fragments:
                    matched.add(digest)
        # The text counts where more than half of its fragments are, or many: a phrase that
        # every note of a kind shares ("before the end of the month") is not a trace.
        if len(matched) * 2 > len(self.fragments) or len(matched) >= ENOUGH_FRAGMENTS:
            found["text"] = len(matched)
        return {k: v for k, v in found.items() if v}

    def to_json(self) -> dict[str, Any]:
        return {
            "salt": self.salt,
            "id": self.id,
            "title": list(self.title) if self.title else None,
            "span": self.span,
            "fragments": sorted(self.fragments),
            "at": self.at,
            **({"origin": self.origin} if self.origin else {}),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        title = data.get("title")
        return cls(
            str(data["salt"]),
            str(data["id"]),
            (int(title[0]), str(title[1])) if title else None,
            int(data.get("span", SPAN)),
            frozenset(data.get("fragments", [])),
            str(data.get("at", "")),
            str(data["origin"]) if data.get("origin") else None,
        )


def record(root: Path, note: Note, at: str) -> None:
    """Add a forgotten note's record (an imported conversation's, with where it came from).
    Callers hold the writer lock."""
    records = list(load(root))
    records.append(Record.of(note.id, note.title, note.body, at, origin_of(note.source)))
    _save(root, records)


def unrecord(root: Path, note_ids: Iterable[str]) -> set[str]:
    """Drop the records of notes that are back (an undone forget); returns the ids that had
    one. Callers hold the writer lock."""
    records, had = list(load(root)), set()
    for note_id in note_ids:
        named = [r for r in records if r.names(note_id)]
        if named:
            had.add(note_id)
            records = [r for r in records if r not in named]
    if had:
        _save(root, records)
    return had


def _save(root: Path, records: Iterable[Record]) -> None:
    data = {"version": 1, "forgotten": [r.to_json() for r in records]}
    text = json.dumps(data, indent=0) + "\n"
    atomic_write(root / FILE, text)
    if (copy := mirror(root)) is not None:
        _keep_copy(copy, text.encode())


def _keep_copy(copy: Path, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the copy is a safety net, never the forget's end
        copy.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        atomic_write(copy, data)  # a temp file of mode 0600, renamed


def load(root: Path) -> Iterator[Record]:
    """The records of the vault's file and of its copy in the state folder, each once."""
    seen: set[str] = set()
    for path in (root / FILE, mirror(root)):
        for entry in _entries(path):
            if str(entry.get("salt")) not in seen:
                seen.add(str(entry.get("salt")))
                yield Record.from_json(entry)


def behind(root: Path) -> list[Record]:
    """The records only the state folder's copy holds (the vault's file was put back from a
    backup older than a forget, or lost), now written into the vault's file; [] when the two
    agree, the usual case, known from their bytes without parsing them. Lock held to write."""
    copy = mirror(root)
    theirs, ours = _bytes(copy), _bytes(root / FILE)
    if not theirs and ours and copy:  # forgets recorded before the copy was kept: copied
        _keep_copy(copy, ours)
    if not theirs or theirs == ours:
        return []
    known = {str(e.get("salt")) for e in _parsed(ours)}
    return [Record.from_json(e) for e in _parsed(theirs) if str(e.get("salt")) not in known]


def _bytes(path: Path | None) -> bytes:
    try:
        return path.read_bytes() if path else b""
    except OSError:  # missing, or unreadable: as if nothing were recorded there
        return b""


def take_in(root: Path) -> None:
    """Write every record of both places into both (after `behind`). Lock held."""
    _save(root, list(load(root)))


def _entries(path: Path | None) -> list[dict[str, Any]]:
    return _parsed(_bytes(path))


def _parsed(data: bytes) -> list[dict[str, Any]]:
    """The records' entries in a file's bytes; none when they are not the records' JSON."""
    try:
        found = json.loads(data.decode("utf-8")).get("forgotten", []) if data else []
    except (ValueError, AttributeError):  # UnicodeDecodeError is a ValueError
        return []
    return [e for e in found if isinstance(e, dict)] if isinstance(found, list) else []


def mirror(root: Path) -> Path | None:
    """Where this vault's copy of the records lives: the user's state folder, named by the
    vault id and the vault's folder (two clones on one machine keep their own); None when
    the vault or the home folder cannot be read (a cron job with no HOME)."""
    try:
        st = (root / _settings.SETTINGS_FILE).stat()
        key = (str(root), st.st_ino, st.st_mtime_ns, st.st_size)
        if key not in _mirrors:
            vault_id = _settings.load(root).vault_id
            where = hashlib.blake2b(str(root.resolve()).encode(), digest_size=6).hexdigest()
            base = _settings.state_dir(os.environ, Path.home())
            _mirrors.clear()  # one vault per process, most of the time
            _mirrors[key] = base / "forgotten" / f"{vault_id}-{where}.json"
        return _mirrors[key]
    except (OSError, RuntimeError, BrainError):
        return None


_mirrors: dict[tuple[str, int, int, int], Path] = {}


def lookup(root: Path, note_id: str) -> Record:
    """The record of a note forgotten here, or NotFound."""
    for rec in load(root):
        if rec.names(note_id.split("#", 1)[0]):
            return rec
    raise NotFound(
        f"no forgetting of {note_id} is recorded on this machine ({FILE})",
        "the check knows notes forgotten here since forgetting was recorded",
    )


def forgotten_here(root: Path, note_id: str) -> Record | None:
    """The record of this id when it names a note forgotten here (its file brought back by a
    backup's restore, or copied in), else None. The records are read again only when their
    file changed: a catch-up asks this of every id the catalog does not know."""
    global _last  # one read of the records per change of their files
    stamp: tuple[object, ...] = (str(root),)
    for path in (root / FILE, mirror(root)):
        try:
            st = path.stat() if path else None
        except FileNotFoundError:
            st = None
        stamp += (st.st_ino, st.st_mtime_ns, st.st_size) if st else (None,)
    if stamp[1:] == (None, None):
        return None
    if _last is None or _last[0] != stamp:
        _last = (stamp, tuple((bytes.fromhex(r.salt), r) for r in load(root)))
    key = note_id.casefold().encode()
    for salt, rec in _last[1]:
        if hashlib.blake2b(key, key=salt, digest_size=8).hexdigest() == rec.id:
            return rec
    return None


_last: tuple[tuple[object, ...], tuple[tuple[bytes, Record], ...]] | None = None


def origin_of(source: Mapping[str, Any]) -> str | None:
    """The key an imported conversation is known by (from its note's `source`, or the same
    fields of a transcript), or None for a note that was not one. A chat file's is the hash of
    its turns, so a later version of it that begins with them is known too (conversations.py)."""
    platform = source.get("platform")
    external_id = source.get("turns_hash") or source.get("external_id")
    if not isinstance(platform, str) or not isinstance(external_id, str) or not external_id:
        return None
    return f"{platform}\0{external_id}"


def forgotten_origins(root: Path) -> Callable[[str], bool]:
    """Whether a conversation (its origin_of key) was forgotten here."""
    records = [r for r in load(root) if r.origin is not None]
    return lambda origin: any(r.came_from(origin) for r in records)
