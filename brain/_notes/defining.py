"""Defining memories (seed 004): decisions, milestones and events, spotted by trigger phrases."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from brain._indexes.catalog import Brief
from brain._model import Note

# The seed's trigger phrases, a few spelled the other common way. Generic single words
# ("Completed", "Shipped", "Let's do") count only where a sentence or line starts, as in
# the seed's examples, so "the form must be completed" stays an ordinary memory.
_ANYWHERE = {
    "decision": (
        r"i(?:'ve| have) decided",
        r"we(?:'ve| have) decided",
        r"we(?:'re| are) going with",
        r"i(?:'m| am) going with",
        r"i(?:'m| am) committing to",
        r"we(?:'re| are) committing to",
        r"final decision\s*:",
    ),
    "milestone": (
        r"we(?: have|'ve)? launched",
        r"it(?:'s| is) done",
        r"i(?: have|'ve)? finished",
        r"we(?: have|'ve)? finished",
        r"(?:i|we)(?: have|'ve)? completed",
        r"(?:i|we)(?: have|'ve)? shipped",
    ),
    "event": (
        r"i(?:'m| am) starting",
        r"i got the job",
        r"we closed the deal",
        r"i(?:'m| am) getting married",
    ),
}
_AT_START = {
    "decision": (r"let's do",),
    "milestone": (r"completed", r"shipped"),
    "event": (),
}


def _compile(kind: str) -> re.Pattern[str]:
    anywhere = "|".join(_ANYWHERE[kind])
    start = "|".join(_AT_START[kind])
    pattern = rf"\b(?:{anywhere})(?!\w)"
    if start:
        pattern += rf"|(?:^|[.!?]\s+)(?:{start})(?!\w)"
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


_PATTERNS = {kind: _compile(kind) for kind in ("decision", "milestone", "event")}

# A word every trigger phrase above holds. The patterns cost ~5 ms each over a 60 KiB note (they
# try their alternatives at every word); looking for these first costs a fraction of that, and
# a text without any of them can match no pattern.
_NEEDLES = (
    "decided",
    "going with",
    "committing to",
    "final decision",
    "launched",
    "done",
    "finished",
    "completed",
    "shipped",
    "starting",
    "got the job",
    "closed the deal",
    "getting married",
    "let's do",
)


def detect(text: str) -> str | None:
    """`decision`, `milestone` or `event` when the text carries a trigger phrase, else None."""
    plain = text.replace("\u2019", "'")
    folded = plain.casefold()
    if not any(needle in folded for needle in _NEEDLES):
        return None
    for kind, pattern in _PATTERNS.items():
        if pattern.search(plain):
            return kind
    return None


def mark(note: Note, text: str) -> Note:
    """The note flagged as defining when the text just written carries a trigger.

    A flag already there (set by a person or an earlier write) is never changed.
    """
    if note.defining:
        return note
    found = detect(text)
    return note.with_meta(defining=found) if found else note


def defining_first(
    ranked: Sequence[tuple[str, float]], rows: Mapping[str, Brief]
) -> list[tuple[str, float]]:
    """Defining memories ahead of the rest, each group keeping its order."""
    ahead = [item for item in ranked if item[0] in rows and rows[item[0]].defining]
    rest = [item for item in ranked if not (item[0] in rows and rows[item[0]].defining)]
    return ahead + rest
