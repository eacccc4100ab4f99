"""Time in the query ("on 9 November, 2022", "in May 2023", "last week") as a prior on `created`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from brain._clock import day_of
from brain._indexes.catalog import Brief

# A memory created inside the window the query names is multiplied by TIME_PRIOR. A date in a
# question is a strong hint but not a filter: a memory's `created` is when it was said, which
# can follow the event it tells of. So the window runs SLACK days past its end ("last week"
# said a week later still counts). Chosen by reason, not fitted (docs/lab/ranking.md).
TIME_PRIOR = 1.5
SLACK = timedelta(days=7)

_MONTHS = {
    name: n
    for n, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        1,
    )
    for name in names
}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<{}>(?:19|20)\d\d)"
# Day month [year], month day [year], month year, a year alone, a month after "in"/"during"/"of".
_ABSOLUTE = re.compile(
    r"\b(?:"
    + rf"{_DAY.format('d1')}\s+(?:of\s+)?{_MONTH.format('m1')}(?:,?\s*{_YEAR.format('y1')})?"
    + rf"|{_MONTH.format('m2')}\s+{_DAY.format('d2')}\b(?:,?\s*{_YEAR.format('y2')})?"
    + rf"|{_MONTH.format('m3')},?\s+{_YEAR.format('y3')}"
    + rf"|(?:in|during|of)\s+{_YEAR.format('y4')}"
    + rf"|(?:in|during|of|this|last)\s+(?:the\s+\w+\s+of\s+)?{_MONTH.format('m5')}"
    + r"(?!,?\s*(?:(?:19|20)\d\d|[0-3]?\d\b))"
    + r")(?!\w)",
    re.IGNORECASE,
)
# "the week before 16 November", "two weeks before August 11", "the day after …": a span of
# about that length on that side of the date (one unit more than said, as a span said so is
# rough), not all time before or after it.
_NEAR = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four)?\s*(?P<unit>day|week|weekend|month)s?\s+"
    r"(?P<side>before|after|prior\s+to)\s+(?:the\s+)?$",
    re.I,
)
# "the second week of November": that week of the month, not the month.
_WEEK_OF = re.compile(r"\b(?P<nth>first|second|third|fourth|last)\s+week\s+(?:of\s+)?$", re.I)
_NTH = {"first": 0, "second": 1, "third": 2, "fourth": 3}
_BEFORE = re.compile(r"\b(?:by|before|until|till|as of|up to)\s+(?:the\s+\w+\s+)?$", re.I)
_AFTER = re.compile(r"\b(?:after|since|from)\s+$", re.I)
_RELATIVE = {
    "today": (0, 1),
    "yesterday": (1, 1),
    "last weekend": (9, 4),
    "this week": (7, 8),
    "last week": (14, 8),
    "this month": (31, 32),
    "last month": (62, 32),
    "this year": (366, 367),
    "last year": (731, 367),
}
_AGO = re.compile(r"\b(?P<n>\d+|a|an|one|two|three)\s+(?P<unit>day|week|month)s?\s+ago\b", re.I)
_ASKS_WHEN = re.compile(
    r"^\W*when\b(?!\s+(?:i|we|you|he|she|they|it)\b)"  # not "When I was in Paris, what …"
    r"|\b(?:what|which)\s+(?:year|month|week|weekend|day|date|time)\b|\bhow\s+long\s+ago\b",
    re.IGNORECASE,
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WEEKDAY_NUMBERS = _WEEKDAYS.split("|")
# "last Friday" names one day; "on Monday" alone does not say which Monday, so it names none.
_LAST_WEEKDAY = re.compile(rf"\blast\s+(?P<day>{_WEEKDAYS})\b")
_TELLS = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|weekends?|weeks?|months?|years?|ago|"
    + _WEEKDAYS
    + "|"
    + "|".join(m for m in _MONTHS if len(m) > 4)  # "mar", "sun" are words; "may" is a verb,
    + "|(?-i:May)"  # so only the capitalised month
    + r"|(?:19|20)\d\d|the\s+[0-3]?\d(?:st|nd|rd|th)|[01]?\d(?::[0-5]\d)?\s*[ap]\.?m\b"
    + r"|[0-2]?\d:[0-5]\d)\b",
    re.IGNORECASE,
)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30}
MOST_UNITS = 100


@dataclass(frozen=True)
class Window:
    """The days a query names: `start` inclusive, `end` exclusive; `said` the words it read.
    The days are the asker's calendar days in `zone` (UTC's when None)."""

    start: date
    end: date
    said: str
    zone: tzinfo | None = None

    def bounds(self) -> tuple[str, str]:
        """The window with its slack as ISO text, for a range of `created`: [start, end). Wide
        enough for both a stored UTC time and a hand-written date alone."""
        end = _shift(self.end, SLACK)
        return (
            min(self.start.isoformat(), self._utc(self.start)),
            max(end.isoformat(), self._utc(end)),
        )

    def _utc(self, day: date) -> str:
        """The moment `day` begins in the asker's zone, as a stored UTC time."""
        if day in (date.min, date.max) or self.zone is None:
            return day.isoformat()
        try:
            return (
                datetime.combine(day, time(), self.zone)
                .astimezone(UTC)
                .strftime("%Y-%m-%dT%H:%M:%SZ")
            )
        except OverflowError:
            return day.isoformat()

    def holds(self, created: str) -> bool:
        """Whether an ISO `created` falls in the window or its slack."""
        return self.tier(created) < 2

    def tier(self, created: str) -> int:
        """0: an ISO `created` in the window itself, 1: in its slack, 2: neither."""
        day = day_of(created, self.zone)
        if day is None:
            return 2
        if self.start <= day < self.end:
            return 0
        return 1 if self.start <= day < _shift(self.end, SLACK) else 2


def parse_time(query: str, now: datetime) -> Window | None:
    """The window of days the query speaks of, None when it names no time. Absolute dates win
    over relative words; a month or day without a year is the latest one not after `now`.
    Days are those of `now`'s zone: "yesterday" asked at 00:30 is the day that just ended."""
    zone = now.tzinfo
    spans: list[tuple[date, date, str]] = []
    pending: list[tuple[int, int | None, re.Match[str]]] = []  # month, day: year to come
    for match in _ABSOLUTE.finditer(query):
        parts = {k: v for k, v in match.groupdict().items() if v}
        month = _MONTHS[_pick(parts, "m").lower()] if _pick(parts, "m") else None
        if month == 5 and "m5" in parts and parts["m5"] != "May":
            continue  # "in may" is a verb more often than a month
        day = int(_pick(parts, "d")) if _pick(parts, "d") else None
        year = int(_pick(parts, "y")) if _pick(parts, "y") else None
        if year is None and month is not None:
            pending.append((month, day, match))
            continue
        assert year is not None
        for m, d, early in pending:  # "between August 11 and August 15 2023"
            spans.append(_span(query, year, m, d, early))
        pending = []
        spans.append(_span(query, year, month, day, match))
    for m, d, early in pending:
        year = now.year if (m, d or 1) <= (now.month, now.day) else now.year - 1
        spans.append(_span(query, year, m, d, early))
    spans = [s for s in spans if s[0] < s[1]]
    if spans:
        return Window(
            min(s[0] for s in spans),
            max(s[1] for s in spans),
            "; ".join(s[2] for s in spans),
            zone,
        )
    window = _relative(query.lower(), now.date())
    return replace(window, zone=zone) if window is not None else None


def _pick(parts: dict[str, str], prefix: str) -> str:
    return next((v for k, v in parts.items() if k.startswith(prefix)), "")


def _span(
    query: str, year: int, month: int | None, day: int | None, match: re.Match[str]
) -> tuple[date, date, str]:
    try:
        if month is None:
            start, end = date(year, 1, 1), date(year + 1, 1, 1)
        elif day is None:
            start = date(year, month, 1)
            end = date(year + month // 12, month % 12 + 1, 1)
        else:
            start = date(year, month, day)
            end = start + timedelta(days=1)
    except ValueError:  # "31 February": no such day, no window
        return date.max, date.min, match.group(0)
    before = query[: match.start()]
    near, week = _NEAR.search(before), _WEEK_OF.search(before)
    if near and day is not None:
        n = _count(near["n"] or "a")
        unit = near["unit"].lower().replace("weekend", "week")
        reach = timedelta(days=(n + 1) * _UNIT_DAYS[unit])
        said = (near.group(0) + match.group(0)).strip()
        if near["side"].lower() == "after":
            return start, start + reach, said
        return start - reach, end, said  # the day itself: "last week", said on it
    if week and day is None and month is not None:
        nth = week["nth"].lower()
        first = start + timedelta(days=7 * _NTH[nth]) if nth in _NTH else end - timedelta(days=7)
        return first, first + timedelta(days=7), (week.group(0) + match.group(0)).strip()
    if _BEFORE.search(before):
        start = date.min
    elif _AFTER.search(before):
        end = date.max
    return start, end, match.group(0).strip()


def _relative(query: str, today: date) -> Window | None:
    weekday = _LAST_WEEKDAY.search(query)
    if weekday:  # "last Friday": the latest Friday before today
        back = (today.weekday() - _WEEKDAY_NUMBERS.index(weekday["day"])) % 7 or 7
        day = today - timedelta(days=back)
        return Window(day, day + timedelta(days=1), weekday.group(0))
    for words, (back, length) in _RELATIVE.items():
        if re.search(rf"\b{words}\b", query):
            start = today - timedelta(days=back)
            return Window(start, start + timedelta(days=length), words)
    ago = _AGO.search(query)
    if ago:
        n = _count(ago["n"])
        back = n * _UNIT_DAYS[ago["unit"].lower()]
        start = today - timedelta(days=back + _UNIT_DAYS[ago["unit"].lower()])
        return Window(start, today - timedelta(days=max(0, back - 1)), ago.group(0))
    return None


def _count(said: str) -> int:
    """How many units a time says ("two", "3"), at most MOST_UNITS: "99999999999 days ago"
    names no date there is."""
    return min(_NUMBERS.get(said.lower()) or int(said), MOST_UNITS)


def _shift(day: date, by: timedelta) -> date:
    try:
        return day + by
    except OverflowError:
        return date.max


def time_first(
    ranked: Sequence[tuple[str, float]], rows: dict[str, Brief], window: Window
) -> list[tuple[str, float]]:
    """For a query that asks only when: the memories written in the window first, then those
    of its slack, then the rest, each in the order they had. A score is at most the one before
    it, so a later memory never reads as a better answer than one ranked above it."""
    tiers = {oid: window.tier(rows[oid].created) if oid in rows else 2 for oid, _ in ranked}
    out, ceiling = [], float("inf")
    for oid, score in sorted(ranked, key=lambda item: tiers[item[0]]):
        ceiling = min(ceiling, score)
        out.append((oid, ceiling))
    return out


def with_time(
    ranked: Sequence[tuple[str, float]], rows: dict[str, Brief], window: Window | None
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Scores with the time prior applied, best first, and the factor each memory got."""
    if window is None:
        return list(ranked), {}
    factors = {
        oid: TIME_PRIOR for oid, _ in ranked if oid in rows and window.holds(rows[oid].created)
    }
    out = [(oid, score * factors.get(oid, 1.0)) for oid, score in ranked]
    return sorted(out, key=lambda item: (-item[1], item[0])), factors


def asks_when(query: str) -> bool:
    """Whether the query asks when something was or will be: "When did …", "when is the
    launch", "Which month was John in Italy?", "how long ago …" (recall/answers.py)."""
    return _ASKS_WHEN.search(query) is not None


def tells_time(text: str) -> bool:
    """Whether a memory's text says when: a day, a date, a month, a year, a time of day, or a
    relative time ("yesterday", "last week", "two months ago")."""
    return _TELLS.search(text) is not None
