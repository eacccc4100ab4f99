"""A small machine-local journal of what happened to notes, for the daily log.

It is a cache under `.brain/`: append-only JSON lines, trimmed by the sleep cycle. Losing it
loses only detail in the daily log. A forgotten note is journaled without its id or title, and
what was journaled of it before goes, so nothing of it outlives the forgetting.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path

from brain._model import parse_iso
from brain._vault.files import atomic_write

EVENT_KINDS = ("forgotten", "corrected", "aged", "moved")
KEEP_DAYS = 7


@dataclass(frozen=True)
class Event:
    """One thing that happened to a note."""

    at: str
    kind: str  # forgotten | corrected | aged | moved
    id: str
    title: str = ""
    partition: str = ""
    visibility: str = "normal"
    detail: str = ""  # aged: "active → dormant"; moved: "hot → cold"; corrected: the new id

    @property
    def day(self) -> str:
        return self.at[:10]


class Journal:
    """`.brain/events.jsonl`; writers hold the vault lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, event: Event) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = _line(event)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    def events(self) -> Iterator[Event]:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            # A torn or hand-mangled line costs one log entry, never the whole journal.
            with contextlib.suppress(ValueError, TypeError):
                yield Event(**json.loads(line))

    def on(self, day: str) -> list[Event]:
        return [e for e in self.events() if e.day == day]

    def forget(self, note_id: str) -> None:
        """Drop every event naming a forgotten note (as the note or as what corrected it)."""
        events = list(self.events())
        kept = [e for e in events if note_id not in (e.id, e.detail)]
        if len(kept) != len(events):
            atomic_write(self.path, "".join(_line(e) for e in kept))

    def drop(self, events: Sequence[Event]) -> None:
        """Drop the last entry equal to each of these events (what an undone commit did)."""
        if not events:
            return
        kept = list(self.events())
        for event in events:
            at = max((i for i, e in enumerate(kept) if e == event), default=None)
            if at is not None:
                del kept[at]
        atomic_write(self.path, "".join(_line(e) for e in kept))

    def trim(self, now: datetime) -> int:
        """Drop events older than a week; returns how many were dropped."""
        horizon = now - timedelta(days=KEEP_DAYS)
        events = list(self.events())
        kept = [e for e in events if _when(e) >= horizon]
        if len(kept) == len(events):
            return 0
        atomic_write(self.path, "".join(_line(e) for e in kept))
        return len(events) - len(kept)


def _line(event: Event) -> str:
    return json.dumps(asdict(event), ensure_ascii=False, sort_keys=True) + "\n"


def _when(event: Event) -> datetime:
    try:
        return parse_iso(event.at)
    except ValueError:
        return parse_iso("1970-01-01T00:00:00Z")
