"""Where brain gets the time: passed in everywhere, so tests and replays can fix it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """The real time, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that says what it is told; `advance` moves it."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)

    def now(self) -> datetime:
        return self.moment

    def set(self, moment: datetime) -> None:
        self.moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
