"""Where brain gets the time: passed in everywhere, so tests and replays can fix it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from brain._errors import InvalidInput

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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


def fixed_at(text: str, what: str = "--now") -> FixedClock:
    """A clock stopped at an ISO 8601 moment given as input (naive values are UTC)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{what} {text!r} is not an ISO 8601 date and time", "e.g. 2026-12-02T10:31:00Z"
        ) from None
    if (moment if moment.tzinfo else moment.replace(tzinfo=UTC)) < EPOCH:
        raise InvalidInput(
            f"{what} {text!r} is before 1970", "brain's ids and dates count time from 1970"
        )
    return FixedClock(moment)
