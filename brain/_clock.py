"""Where brain gets the time: passed in everywhere, so tests and replays can fix it."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from brain._errors import InvalidInput

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    """The real time, in the machine's own zone: a dated note, a daily log and "yesterday" in
    a query are the person's calendar day, not UTC's (docs/lab/probe-timezones.md). Stored
    times stay UTC (`model.iso`). `zone`, set for one call (`zoned`), is the zone of whoever
    asked: the daemon serves commands run with their own TZ."""

    def __init__(self) -> None:
        self.zone: tzinfo | None = None

    def now(self) -> datetime:
        return datetime.now(UTC).astimezone(self.zone or local_zone())


@contextlib.contextmanager
def zoned(clock: Clock, name: Any) -> Iterator[None]:
    """For one call, a SystemClock tells the time in the zone a client named (`zone_name`); no
    name (a client of an older brain) leaves it in the machine's. Another clock is left alone."""
    if name is None or not isinstance(clock, SystemClock):
        yield
        return
    clock.zone = zone_named(name)
    try:
        yield
    finally:
        clock.zone = None


_OFFSET = re.compile(r"([+-])(\d\d):(\d\d)")


def zone_name(zone: tzinfo | None = None) -> str:
    """A zone as a client sends it to the daemon: its IANA name (`Pacific/Auckland`), or its
    offset of the moment (`+05:30`) for a zone without one (a POSIX TZ rule)."""
    zone = zone or local_zone()
    key = getattr(zone, "key", None)
    if isinstance(key, str) and key:
        return key
    return _offset(datetime.now(UTC).astimezone(zone).utcoffset() or timedelta())


def _offset(offset: timedelta) -> str:
    """An offset from UTC as ISO 8601 writes it: `+05:30`, `-08:00`."""
    minutes = round(offset / timedelta(minutes=1))
    sign, minutes = ("-", -minutes) if minutes < 0 else ("+", minutes)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def zone_named(name: Any) -> tzinfo:
    """The zone `zone_name` named; a clear error for anything else."""
    found = _OFFSET.fullmatch(name) if isinstance(name, str) else None
    if found and int(found[2]) < 24 and int(found[3]) < 60:
        offset = timedelta(hours=int(found[2]), minutes=int(found[3]))
        return timezone(-offset if found[1] == "-" else offset)
    try:
        if isinstance(name, str) and name:
            return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    raise InvalidInput(
        f"request field 'zone' {name!r} is not a time zone",
        "an IANA name such as Europe/Berlin, or an offset such as +05:30",
    )


def local_zone() -> tzinfo:
    """The machine's zone as of now, read afresh (a laptop that travels): TZ, else the
    /etc/localtime link, else the C library's offset of the moment."""
    for name in (os.environ.get("TZ", "").lstrip(":"), _linked_zone()):
        if name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError, OSError):
                continue  # a POSIX rule such as "XYZ-3": the C library below reads it
    return datetime.now(UTC).astimezone().tzinfo or UTC


def _linked_zone() -> str:
    try:
        link = str(Path("/etc/localtime").readlink())
    except OSError:
        return ""
    return link.partition("zoneinfo/")[2]


def day_of(stamp: str, zone: tzinfo | None) -> date | None:
    """The calendar day, in `zone`, of a stored time (`2026-12-07T23:30:00Z`, or an offset
    or naive UTC time written by hand); a date alone is that day wherever one is. None when
    it does not parse."""
    text = stamp.strip()
    try:
        if len(text) == 10:
            return date.fromisoformat(text)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(zone).date() if zone is not None else moment.date()


def utc_days(day: date, zone: tzinfo | None) -> list[str]:
    """The UTC days (`YYYY-MM-DD`, as stored times begin) that a calendar day in `zone`
    spans: one in UTC, two elsewhere. A stored time's own day is then `day_of` it."""
    start = datetime.combine(day, time(), zone or UTC)
    last = start + timedelta(days=1) - timedelta(seconds=1)
    return list(dict.fromkeys(m.astimezone(UTC).strftime("%Y-%m-%d") for m in (start, last)))


def day_shown(stamp: str, zone: tzinfo | None) -> str:
    """The day a stored time is shown as (`brain list`, recall's lines): its calendar day in
    the reader's zone, so a note written on the 8th in Auckland (the 7th in UTC) reads as the
    8th there; a time that does not parse is shown as written."""
    day = day_of(stamp, zone)
    return day.isoformat() if day is not None else stamp[:10]


def stamp(now: datetime) -> str:
    """A dated note's block heading time: the person's clock time and its offset
    (`23:30:00-08:00`), `Z` for UTC, so a day's blocks read and merge in time order."""
    offset = now.utcoffset()
    return now.strftime("%H:%M:%S") + (_offset(offset) if offset else "Z")


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
