"""The memory that opens a conversation says what the conversation was for.

A conversation opens with why it was had: "Caroline: Guess what, I passed the adoption
interviews last Friday!", "user: I'm planning a trip to Kyoto with my wife in May, what should
we book first?". The turns after it talk about that news or that request, sharing its words
without holding its fact ("Melanie: That's amazing, how do you feel?", "assistant: Book the
ryokan early."). Of the best ANSWER_DEPTH, a memory that opens a dialogue is multiplied by
OPENER and the head reordered among itself. A dialogue: a sitting (memories written one after
another, as neighbour context has them: recall/neighbours.py) whose first two memories are
turns of two speakers, each title opening with its speaker's label ("Name: ", "user: "), or an
imported transcript, whose turns are its sections (`<note id>#<n>`) and whose first turn opens
it (catalog `said_titles` labels a turn's title with its speaker). A memory written alone, a
batch of notes written together (an assistant saving five facts at the end of a chat) and a
document's sections (no speakers) open nothing. Not when the question speaks to someone
("What did you recommend for my trip?"): it asks what was said to its asker, which follows
the opening.

OPENER was chosen on both dev files together (docs/lab/ranking.md, "A conversation's opening"):
on LoCoMo 14% of the gold turns among the best 20 open their session against 5% of the
others, on LongMemEval 55% against 7%; a lift of 0.2 to 0.4 scored alike on both files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from brain._recall.answers import ANSWER_DEPTH, head_lifted
from brain._recall.neighbours import order_key

if TYPE_CHECKING:
    from brain._indexes.fulltext import Filters
    from brain._recall.neighbours import Neighbourhood

OPENER = 1.3
# A turn's speaker: a label of at most 40 characters and a colon opening its title ("Caroline:
# ", "user: "); a time or an address ("10:30", "https://") has no space after its colon.
_LABEL = re.compile(r"^\s*([^\s:][^:\n]{0,39}?)\s*:\s")


def speaker(title: str) -> str | None:
    """The label a turn's title opens with ("Caroline: …" → "caroline"), if any."""
    found = _LABEL.match(title)
    return found.group(1).casefold() if found else None


def first_after(oid: str, around: Mapping[str, tuple[str, ...]]) -> str | None:
    """The memory written just after this one, when it opens its sitting: it has neighbours
    and all of them were written after it (a note's sections follow their number)."""
    near = around.get(oid, ())
    mine = order_key(oid)
    if not near or any(order_key(n) < mine for n in near):
        return None
    return min(near, key=order_key)


def opens(oid: str, after: str | None, titles: Mapping[str, str]) -> bool:
    """Whether a memory opens a dialogue: it opens its sitting, and it and the memory after it
    are turns of two speakers."""
    if after is None:
        return False
    first, second = speaker(titles.get(oid, "")), speaker(titles.get(after, ""))
    return first is not None and second is not None and first != second


def with_openers(
    ranked: Sequence[tuple[str, float]],
    around: Mapping[str, tuple[str, ...]],
    titles: Callable[[Sequence[str]], Mapping[str, str]],
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """The best ANSWER_DEPTH, those that open a dialogue multiplied by OPENER and reordered
    among themselves; the rest as they were (each head score only grew: none passes them).
    `around`: each head memory's neighbours; `titles`: the titles of some memories."""
    head = ranked[:ANSWER_DEPTH]
    after = {oid: a for oid, _ in head if (a := first_after(oid, around)) is not None}
    named = titles([*after, *after.values()]) if after else {}
    factors = {oid: OPENER for oid, a in after.items() if opens(oid, a, named)}
    if not factors:
        return list(ranked), {}
    return head_lifted(ranked, factors), factors


def in_head(
    ranked: Sequence[tuple[str, float]],
    near: Neighbourhood,
    filters: Filters,
    titles: Callable[[Sequence[str]], Mapping[str, str]],
    to_someone: bool,
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """with_openers over the best ANSWER_DEPTH, their neighbours as the recall's neighbourhood
    has them (what the filters hide is no one's neighbour); nothing for a question that speaks
    to someone."""
    if to_someone:
        return list(ranked), {}
    ids = [oid for oid, _ in ranked[:ANSWER_DEPTH]]
    around = near.around(ids, filters) if ids else {}
    return with_openers(ranked, around, titles)
