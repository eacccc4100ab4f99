"""Cold-tier dictionaries that hold a trace of a forgotten note: replaced, then deleted.

A dictionary keeps fragments of the notes it was trained on and travels with git. When a
forget leaves a trace in one (the check `doctor --forgotten` makes, on the dictionary's
bytes), the same forget trains a new dictionary on the notes that remain, makes again every
frame made with the old one, and deletes it. Every frame stays readable at each step: the new
dictionary and frames are written before the old dictionary goes. The ids being retired are
noted under `.brain/` first, so a pass a crash stopped is finished by the next forget, sleep or
reindex (`brain doctor` names it meanwhile).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain._errors import BrainError, InvalidInput
from brain._git.autocommit import recorded
from brain._indexes.rows import FileRow
from brain._model import content_hash
from brain._upkeep.tiers import samples
from brain._vault import forgotten
from brain._vault.cold import MIN_SAMPLES, is_cold
from brain._vault.files import atomic_write, remove_file
from brain._vault.paths import CACHE_DIR

if TYPE_CHECKING:
    from brain._context import Context

PENDING = f"{CACHE_DIR}/cold-retiring.json"


@dataclass(frozen=True)
class Retired:
    """What one pass did."""

    removed: tuple[int, ...]  # dictionaries deleted
    replacement: int  # the dictionary the remade frames use (0: none)
    frames: int  # frames made again
    # Holding a trace yet kept: the notes that remain train this very dictionary (the trace is
    # theirs), or a frame made with it cannot be read (kept for mending, retried next time).
    kept: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "removed": list(self.removed),
            "replacement": self.replacement,
            "frames": self.frames,
            "kept": list(self.kept),
        }


def holding(brain: Context, note_ids: Iterable[str]) -> set[int]:
    """The dictionaries whose bytes hold a trace of one of these forgotten notes."""
    listing = brain.store.cold.dictionaries.listing()
    if not listing:
        return set()
    wanted = [i.split("#", 1)[0] for i in note_ids]
    records = [r for r in forgotten.load(brain.root) if any(r.names(i) for i in wanted)]
    if not records:
        return set()  # nothing recorded (a database keeps no record): nothing to look for
    found = set()
    for _version, dict_id, path in listing:
        data = path.read_bytes()
        if any(record.find(data) for record in records):
            found.add(dict_id)
    return found


def after_forget(brain: Context, note_ids: Iterable[str]) -> Retired | None:
    """Retire the dictionaries these just-forgotten notes left a trace in (and finish a pass a
    crash stopped). Lock held."""
    return retire(brain, pending(brain) | holding(brain, note_ids))


def finish(brain: Context) -> Retired | None:
    """Finish a pass a crash stopped, if any. Lock held."""
    left = pending(brain)
    return retire(brain, left) if left else None


@recorded(lambda done, a: f"retire cold-tier dictionaries {_ids(done)}")
def finish_recorded(brain: Context) -> Retired | None:
    """`finish` as an operation of its own (its commit, when git is on)."""
    with brain.lock.hold():
        return finish(brain)


def pending(brain: Context) -> set[int]:
    """The ids of a pass not finished."""
    try:
        data = json.loads((brain.root / PENDING).read_text(encoding="utf-8"))
        return {int(i) for i in data.get("retire", [])}
    except (FileNotFoundError, ValueError, TypeError, AttributeError):
        return set()


def retire(brain: Context, ids: set[int]) -> Retired | None:
    """Make every frame of these dictionaries again with another, then delete them. Lock held."""
    assert brain.lock.held, "retire() needs the writer lock"
    dictionaries = brain.store.cold.dictionaries
    ids = ids & {i for _v, i, _p in dictionaries.listing()}
    if not ids:
        if (brain.root / PENDING).exists():
            remove_file(brain.root / PENDING)  # finished, but not yet said so
        return None
    atomic_write(brain.root / PENDING, json.dumps({"retire": sorted(ids)}) + "\n")
    replacement = _replacement(brain, ids)
    kept = {replacement} & ids  # the notes that remain train this very one: its trace is theirs
    ids -= kept
    frames = 0
    for rel, _st in list(brain.store.walk()):
        if not is_cold(rel):
            continue
        data = brain.store.read_bytes(rel)
        made_with = brain.store.cold.frame_dictionary(data)
        if made_with not in ids:
            continue
        try:
            markdown = brain.store.markdown(rel, data)
        except BrainError:
            kept.add(made_with)  # unreadable already: its dictionary stays, in case it mends
            continue
        frame = brain.store.cold.compress(markdown, replacement)
        atomic_write(brain.store.path(rel), frame)
        _refresh_row(brain, rel, frame)
        frames += 1
    for dict_id in sorted(ids - kept):
        dictionaries.remove(dict_id)
    if unreadable := kept - {replacement}:  # tried again by the next pass
        atomic_write(brain.root / PENDING, json.dumps({"retire": sorted(unreadable)}) + "\n")
    else:
        remove_file(brain.root / PENDING)
    return Retired(tuple(sorted(ids - kept)), replacement, frames, tuple(sorted(kept)))


def _replacement(brain: Context, ids: set[int]) -> int:
    """The dictionary frames are made again with: the newest one when it holds no trace, else
    one trained now on the notes that remain, else the newest clean one, else none."""
    dictionaries = brain.store.cold.dictionaries
    listing = dictionaries.listing()
    if listing[-1][1] not in ids:
        return listing[-1][1]
    texts = samples(brain)
    if len(texts) >= MIN_SAMPLES:
        try:
            return dictionaries.train(texts)
        except InvalidInput:
            pass  # notes that cannot train one: the frames do without
    clean = [i for _v, i, _p in listing if i not in ids]
    return clean[-1] if clean else 0


def _refresh_row(brain: Context, rel: str, frame: bytes) -> None:
    """The catalog follows the new bytes, so the frame is not taken for a hand edit."""
    row = brain.caches.catalog.file(rel)
    if row is None or row.error is not None:
        return  # a file the caches do not know yet: the next catch-up reads it
    stat = brain.store.stat(rel)
    with brain.caches.catalog.transaction():
        brain.caches.catalog.put_file(FileRow.of(rel, row.note_id, content_hash(frame), stat, None))


def _ids(done: Retired | None) -> str:
    return ", ".join(str(i) for i in done.removed) if done else "(none)"
