"""Hot and cold tiers: moving notes between Markdown files and `cold/`, byte for byte.

Eviction is not forgetting: a cold note keeps its id, its catalog row and its full-text entry
(only its path changes), so recall still finds it; reading it decompresses, touching it moves it
back. The dictionary is trained only on `normal` notes, because dictionaries travel with git and
hold fragments of what they were trained on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from brain._context import moved
from brain._errors import BrainError, InvalidInput
from brain._indexes.catalog import ObjectRow
from brain._model import parse_iso
from brain._vault.archive import is_archived
from brain._vault.cold import MIN_SAMPLES, cold_path, is_cold
from brain._vault.store import free_hot_path

if TYPE_CHECKING:
    from brain._context import Context

TIERS = ("hot", "cold")
# Records and maintained notes stay hot: dated notes and singletons are found by their hot path.
COLD_KINDS = ("titled", "thread")
COLD_STATUSES = ("archived", "resolved", "superseded")
TRAIN_LIMIT = 2000  # notes sampled for a dictionary; more adds time, not ratio


@dataclass(frozen=True)
class Move:
    """One note that changed tier (or would, in a dry run)."""

    id: str
    title: str
    source: str
    target: str
    tier: str  # the tier it moved to

    def to_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "title": self.title,
            "from": self.source,
            "to": self.target,
            "tier": self.tier,
        }


@dataclass(frozen=True)
class TierStatus:
    enabled: bool
    hot_notes: int
    cold_notes: int
    hot_bytes: int
    cold_bytes: int  # as stored, compressed
    cold_plain_bytes: int  # what the cold notes hold once decompressed
    dictionaries: tuple[int, ...]
    unreadable: tuple[str, ...]

    @property
    def ratio(self) -> float:
        return self.cold_plain_bytes / self.cold_bytes if self.cold_bytes else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "hot_notes": self.hot_notes,
            "cold_notes": self.cold_notes,
            "hot_bytes": self.hot_bytes,
            "cold_bytes": self.cold_bytes,
            "cold_plain_bytes": self.cold_plain_bytes,
            "ratio": round(self.ratio, 3),
            "dictionaries": list(self.dictionaries),
            "unreadable": list(self.unreadable),
        }


def relocate(brain: Context, row: ObjectRow, target: str) -> Move:
    """Move a note's file to `target` without changing one byte of the note. Lock held."""
    assert brain.lock.held, "relocate() needs the writer lock"
    markdown = brain.store.note_bytes(row.path)
    data = brain.store.write_bytes(target, markdown)
    note = brain.store.parse(target, data)
    brain.caches.put_note(note, data, brain.store.stat(target))
    moved(brain, row, note)
    return Move(row.id, row.title, row.path, target, "cold" if is_cold(target) else "hot")


def move(brain: Context, note_id: str, tier: str) -> Move | None:
    """`brain tier move ID hot|cold`; None when the note is already there."""
    if tier not in TIERS:
        raise InvalidInput(f"tier must be hot or cold, not {tier!r}")
    with brain.lock.hold():
        brain.catch_up()
        row = brain.row(note_id)
        if row.id != row.note_id:
            raise InvalidInput(f"{note_id} is a chunk; move its note {row.note_id}")
        if is_cold(row.path) == (tier == "cold"):
            return None
        if tier == "hot":
            return relocate(brain, row, free_hot_path(brain.store, row.path))
        if not brain.settings.cold_tier:
            raise InvalidInput(
                "the cold tier is off", "set `tiers: {cold: true}` in brain.yaml to use it"
            )
        if row.kind not in COLD_KINDS:
            raise InvalidInput(
                f"note {note_id} is a {row.kind} note; only {' and '.join(COLD_KINDS)} notes go "
                "cold (records and maintained notes stay hot)"
            )
        _ensure_dictionary(brain)
        return relocate(brain, row, cold_path(row.path))


def due(brain: Context, now: datetime) -> list[ObjectRow]:
    """Archived (or terminal) notes untouched for `tiers.cold_after_days`, still hot."""
    horizon = now - timedelta(days=brain.settings.cold_after_days)
    rows = brain.caches.catalog.hot_notes(COLD_STATUSES, COLD_KINDS)
    frozen = {p for p in brain.store.partitions() if is_archived(brain.store, p)}
    return [r for r in rows if r.partition not in frozen and _older(r.touched, horizon)]


def cool(brain: Context, now: datetime, *, dry_run: bool = False) -> list[Move]:
    """The sleep step: move every note that is due into the cold tier."""
    if not brain.settings.cold_tier:
        return []
    rows = due(brain, now)
    if dry_run:
        return [Move(r.id, r.title, r.path, cold_path(r.path), "cold") for r in rows]
    with brain.lock.hold():
        if rows:
            _ensure_dictionary(brain)
        return [relocate(brain, row, cold_path(row.path)) for row in rows]


def retrain(brain: Context) -> int:
    """Train a new dictionary on this vault's normal notes; old ones stay for old frames."""
    with brain.lock.hold():
        return brain.store.cold.dictionaries.train(samples(brain))


def _ensure_dictionary(brain: Context) -> None:
    """Train the first dictionary once there are notes enough; until then frames use none."""
    dictionaries = brain.store.cold.dictionaries
    if dictionaries.newest():
        return
    texts = samples(brain)
    if len(texts) >= MIN_SAMPLES:
        dictionaries.train(texts)


def samples(brain: Context) -> list[bytes]:
    """What a dictionary is trained on: the texts of the normal notes touched last."""
    rows = brain.caches.catalog.recently_touched(TRAIN_LIMIT)
    texts = []
    for row in rows:
        try:
            texts.append(brain.store.note_bytes(row.path))
        except (OSError, BrainError):
            continue  # a file that cannot be read is simply not a sample
    return texts


def status(brain: Context) -> TierStatus:
    """Counts and bytes in each tier; unreadable cold files are listed, not fatal."""
    brain.catch_up()
    hot = cold = hot_bytes = cold_bytes = plain = 0
    unreadable = []
    for rel, st in brain.store.walk():
        if not is_cold(rel):
            hot += 1
            hot_bytes += st.st_size
            continue
        cold += 1
        data = brain.store.read_bytes(rel)
        cold_bytes += len(data)
        try:
            plain += len(brain.store.markdown(rel, data))
        except BrainError:
            unreadable.append(rel)
    listing = brain.store.cold.dictionaries.listing()
    return TierStatus(
        brain.settings.cold_tier,
        hot,
        cold,
        hot_bytes,
        cold_bytes,
        plain,
        tuple(i for _v, i, _p in listing),
        tuple(unreadable),
    )


def _older(stamp: str, horizon: datetime) -> bool:
    try:
        return parse_iso(stamp) <= horizon
    except ValueError:
        return False
