"""Corrections: a new version supersedes the old, the old is kept as history, revert is exact.

A correction writes the new version at the old note's path (so the current truth keeps its
place in the folder) and moves the old version beside it as `<name> (superseded <day>).md`.
The old file changes in one line only, `status:`; the line as it was is kept in the new
version's `prior_status_line`, so a revert gives the old file back byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

import yaml

from brain._errors import BrokenNote, InvalidInput
from brain._indexes.catalog import ObjectRow
from brain._indexes.ports import CatalogReads
from brain._model import Kind, Note, Relation, Status, iso, new_id, parse_iso
from brain._notes import defining
from brain._notes.writing import check_text, derive_title, own_pass
from brain._safeyaml import load_yaml
from brain._vault import notefile
from brain._vault.cold import is_cold
from brain._vault.paths import file_stem
from brain._vault.store import free_hot_path

if TYPE_CHECKING:
    from brain._context import Context

CORRECTABLE = ("titled", "singleton", "dated", "thread")
PRIOR_FIELD = "prior_status_line"
SUPERSEDED_LINE = "status: superseded"
_STATUS_LINE = re.compile(r"^status:[^\n]*$", re.MULTILINE)
# Fields a new version takes over from the one it corrects (the rest is its own).
_CARRIED = ("tags", "parent", "visibility", "eternal")


def chain(catalog: CatalogReads, note_id: str) -> list[ObjectRow]:
    """Every version of a note, oldest first; a hand-made cycle or fork is an error."""
    start = catalog.get(note_id)
    if start is None:
        return []
    versions = [start]
    seen = {start.id}
    row = start
    while row.supersedes:
        older = catalog.get(row.supersedes)
        if older is None:
            break  # the older version is gone: the chain starts here
        if older.id in seen:
            raise _cycle([*seen, older.id])
        seen.add(older.id)
        versions.insert(0, older)
        row = older
    row = start
    while True:
        newer = catalog.successors(row.id)
        if not newer:
            break
        if len(newer) > 1:
            ids = ", ".join(sorted(r.id for r in newer))
            raise BrokenNote(
                f"notes {ids} all supersede {row.id}; a note has one next version",
                "fix the `supersedes` field by hand",
            )
        row = newer[0]
        if row.id in seen:
            raise _cycle([*seen, row.id])
        seen.add(row.id)
        versions.append(row)
    return versions


def _cycle(ids: Sequence[str]) -> BrokenNote:
    return BrokenNote(
        f"the `supersedes` fields of notes {', '.join(sorted(set(ids)))} form a cycle",
        "fix them by hand; `brain doctor` lists the files",
    )


def current(catalog: CatalogReads, note_id: str) -> ObjectRow | None:
    versions = chain(catalog, note_id)
    return versions[-1] if versions else None


def correct(
    brain: Context,
    note_id: str,
    text: str,
    source: dict[str, Any] | None,
    title: str | None = None,
) -> Note:
    """Write a new version of a note; the old one becomes superseded and stays as history.

    The new version keeps the old one's title unless given one; a title brain made from the
    old text's first words is made again from the new text's ("We moved the launch to March"
    corrected to April is not still titled March). Its file stays where it was.
    """
    check_text(text, brain.settings.max_text_bytes)
    if title is not None:
        file_stem(title)  # the same titles remember accepts: no control characters, not blank
    with brain.lock.hold():
        brain.catch_up()
        if "#" in note_id:
            raise InvalidInput(f"{note_id} is a chunk of a document; correct notes, not chunks")
        row = brain.row(note_id)
        latest = chain(brain.caches.catalog, row.id)[-1]
        if row.status == Status.SUPERSEDED or latest.id != row.id:
            raise InvalidInput(
                f"note {row.id} is superseded; the current version is {latest.id}",
                "correct the current version",
            )
        old = brain.get(row.id)
        if old.kind not in CORRECTABLE:
            raise InvalidInput(
                f"note {old.id} is a {old.kind} note; correct accepts: {', '.join(CORRECTABLE)}",
                "documents follow their source file; logs are regenerated",
            )
        now = brain.clock.now()
        marked, prior = supersede(old)
        # A correction is a touch: a cold note's new version and its history come back hot
        # (the history is archived, so a later sleep sends it back to cold).
        here = free_hot_path(brain.store, old.path) if is_cold(old.path) else old.path
        history = history_path(brain, here, now)
        new = new_version(old, text, prior, source or own_pass(now), now, title).with_path(here)
        # The old version first goes beside, then the new one takes its place: a crash in
        # between leaves both (reported by doctor as one id in two files), never neither.
        brain.save(marked.with_path(history))
        return brain.save(new)


def new_version(
    old: Note,
    text: str,
    prior: str,
    source: dict[str, Any] | None,
    now: datetime,
    title: str | None = None,
) -> Note:
    stamp = iso(now)
    if title is None and old.kind == Kind.TITLED and old.title == derive_title(old.body):
        title = derive_title(text)  # brain's title, not the person's: it follows the text
    meta: dict[str, Any] = {
        "id": new_id(now),
        "title": title or old.title,
        "kind": old.kind,
        "status": "active",
        "created": stamp,
        "touched": stamp,
    }
    for key in _CARRIED:
        if old.meta.get(key) is not None:
            meta[key] = old.meta[key]
    kept = [r for r in old.relations if r.type != "corrects"]
    meta["relations"] = [r.to_yaml() for r in [*kept, Relation("corrects", old.id)]]
    meta["supersedes"] = old.id
    meta[PRIOR_FIELD] = prior
    found = defining.detect(text) or old.defining
    if found:
        meta["defining"] = found
    meta["source"] = dict(source or {"via": "cli"})
    # The new version takes the old one's file: written with the person's line ends too.
    return replace(old, meta=meta, body=_body(old, text), raw_front=None)


def _body(old: Note, text: str) -> str:
    if old.kind != Kind.SINGLETON:
        return text.strip() + "\n"
    # A singleton keeps the purpose engraved at its top (a blockquote), as remember does.
    lines = old.body.splitlines(keepends=True)
    keep = 0
    while keep < len(lines) and (lines[keep].startswith(">") or not lines[keep].strip()):
        keep += 1
    purpose = "".join(lines[:keep]).rstrip("\n")
    return (purpose + "\n\n" if purpose else "") + text.strip() + "\n"


def history_path(brain: Context, path: str, now: datetime) -> str:
    where = PurePosixPath(path)
    stem = f"{where.stem} (superseded {now.strftime('%Y-%m-%d')})"
    candidate = str(where.with_name(f"{stem}.md"))
    n = 2
    while brain.store.exists(candidate):
        candidate = str(where.with_name(f"{stem} {n}.md"))
        n += 1
    return candidate


def supersede(note: Note) -> tuple[Note, str]:
    """The note marked superseded by editing one line, and that line as it was ("" if none)."""
    raw = note.raw_front
    if raw is not None:
        match = _STATUS_LINE.search(raw)
        if match:
            edited, prior = raw[: match.start()] + SUPERSEDED_LINE + raw[match.end() :], match[0]
        else:
            edited, prior = raw + SUPERSEDED_LINE + "\n", ""
        marked = _with_front(note, edited, {**note.meta, "status": "superseded"})
        if marked is not None:
            return marked, prior
    # Front-matter the line edit cannot handle safely: rewrite it (exactness is lost).
    return note.with_meta(status="superseded"), f"status: {note.status}"


def restore(note: Note, prior: str) -> Note:
    """A superseded note given back its status line as it was before it was superseded."""
    status = _status_of(prior)
    wanted = {k: v for k, v in note.meta.items() if k != "status"}
    if status is not None:
        wanted["status"] = status
    raw = note.raw_front
    if raw is not None:
        match = _STATUS_LINE.search(raw)
        if match and match[0].rstrip("\r") == SUPERSEDED_LINE:
            if prior:
                edited = raw[: match.start()] + prior + raw[match.end() :]
            else:
                edited = raw[: match.start()] + raw[match.end() + 1 :]
            restored = _with_front(note, edited, wanted)
            if restored is not None:
                return restored
    return note.with_meta(status=status or "active")


def _status_of(prior: str) -> str | None:
    if not prior.strip():
        return None
    try:
        # A field of a note, so as hostile as its front-matter: read with the same limits.
        value = load_yaml(prior, "prior status", "field")
    except (yaml.YAMLError, BrokenNote):
        return "active"
    return str(value.get("status") or "active") if isinstance(value, dict) else "active"


def _with_front(note: Note, raw: str, expected: Mapping[str, Any]) -> Note | None:
    """The note with this front-matter text, if it reads back as the expected fields."""
    candidate = replace(note, meta=dict(expected), raw_front=raw)
    try:
        reread = notefile.parse(notefile.render(candidate), note.path)
    except BrokenNote:
        return None
    if dict(reread.meta) != dict(expected) or reread.body != note.body:
        return None
    return replace(note, meta=reread.meta, raw_front=raw)


def history(brain: Context, note_id: str) -> list[Note]:
    """Every version of a note, oldest first, read from the files."""
    brain.catch_up()
    row = brain.row(note_id)
    return [brain.get(version.id) for version in chain(brain.caches.catalog, row.note_id)]


# Suspicion ---------------------------------------------------------------------------------


def _day(stamp: str) -> str:
    try:
        return parse_iso(stamp).strftime("%Y-%m-%d")
    except ValueError:
        return stamp[:10]


def _pass(source: Mapping[str, Any]) -> tuple[Any, Any] | None:
    """Who wrote a note, and in which session; None for a note without a session key, which
    shares its pass with no other note (nothing tells which notes were written with it)."""
    session = source.get("session")
    return None if session is None else (source.get("via"), session)


def suspicion_flags(
    catalog: CatalogReads, rows: Sequence[ObjectRow], *, visible_only: bool = False
) -> dict[str, tuple[str, ...]]:
    """Flags for hits written in the same pass (source, session, UTC day) as a corrected note.

    A note written after the correction is not suspect: the mistake was known by then.
    `visible_only` (a model): a correction hidden from it flags nothing, or the flag would
    tell it that a hidden note exists.
    A pass is a source's `session`: an MCP server session, one import, one CLI command.
    """
    days = sorted({_day(r.created) for r in rows if r.created})
    if not days:
        return {}
    corrected = catalog.superseded_on(days, normal_only=visible_only)
    if not corrected:
        return {}
    fixes = {
        r.supersedes: r
        for r in catalog.superseding([r.id for r in corrected], normal_only=visible_only)
    }
    flags: dict[str, tuple[str, ...]] = {}
    for row in rows:
        dates = set()
        for old in corrected:
            fix = fixes.get(old.id)
            if fix is None or row.note_id in (old.id, fix.id):
                continue
            wrote = _pass(row.source)
            same = wrote is not None and wrote == _pass(old.source)
            same = same and _day(old.created) == _day(row.created)
            # Written no later than the correction (timestamps have whole seconds).
            if same and row.created <= fix.created:
                dates.add(_day(fix.created))
        if dates:
            flags[row.id] = tuple(
                f"a note written in the same pass was corrected on {d}" for d in sorted(dates)
            )
    return flags
