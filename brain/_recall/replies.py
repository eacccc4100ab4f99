"""A short reply to a question borrows the relevance of the question it answers.

"Which team did John sign with?" is answered by "The Minnesota Wolves! I can't wait to play
with them!", said right after "Which team did you sign with?": the reply holds the fact and
none of the words, the question holds the words and not the fact. Neighbour context
(recall/neighbours.py) lends a memory the mean of the scores around it, two either side, so
the question that was answered counts for a quarter and the turns after it as much. Here, of
the best ANSWER_DEPTH, a memory of at most SHORT characters whose memory before it (in write
order, in the same sitting, as the neighbourhood has it) asks something gains REPLY × that
memory's relevance (the share of the question it holds, recall/relevance.py) × the head's best
score. Only short replies: a long message stands on its own words, and on LongMemEval the
assistant's long answers follow the user's requests that hold the evidence. When the question
asks for a kind of answer (a time, an amount: recall/answers.py), only a reply that gives that
kind: "Sure, I'd love to!" after "When are you going camping?" tells nothing of when.

A question that speaks to someone ("Can you remind me what was the 7th job in the list you
gave me?") asks what was said to its asker: there the answer is the reply, however long, to
the asker's message before it, a request or a question ("Brainstorm work from home jobs for
seniors"). So for such a question a reply of any length to another speaker's message gains
(speakers as the titles' labels name them: recall/openers.py), asking or not.

REPLY and SHORT were chosen on both dev files together (docs/lab/ranking.md, "A short reply"):
REPLY 0.2-0.4 helps both, 0.3 the most, above 0.5 LoCoMo loses; SHORT, a turn of a few
sentences, 160 to 600 characters scored alike on LoCoMo and 400 best on LongMemEval, whose
assistant answers run to thousands.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING

from brain._recall.answers import ANSWER_DEPTH
from brain._recall.neighbours import order_key
from brain._recall.openers import speaker

if TYPE_CHECKING:
    from brain._indexes.fulltext import Filters
    from brain._recall.neighbours import Neighbourhood

REPLY = 0.3
SHORT = 400


def previous(oid: str, around: Mapping[str, tuple[str, ...]]) -> str | None:
    """The memory written just before this one among its neighbours, if any."""
    mine = order_key(oid)
    before = [n for n in around.get(oid, ()) if order_key(n) < mine]
    return max(before, key=order_key) if before else None


def with_replies(
    ranked: Sequence[tuple[str, float]],
    bodies: Mapping[str, str],
    before: Mapping[str, str],
    held: Callable[[str], float],
    giving: Collection[str] | None = None,
    speakers: Mapping[str, str | None] | None = None,
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """The best ANSWER_DEPTH, each short reply to a question raised by what that question
    holds of the query, and reordered among themselves; the rest as they were. `bodies`:
    the head's texts; `before`: a memory → the one written just before it; `held`: a
    memory's relevance to the query; `giving`: when the query asks for a kind of answer, the
    memories that give it (only they can gain); `speakers`: given when the query speaks to
    someone, who said each of the head's memories: then any reply to another speaker gains.
    Returns the ranking and what each gained."""
    head = ranked[:ANSWER_DEPTH]
    if not head:
        return list(ranked), {}
    top = head[0][1]
    gained: dict[str, float] = {}
    for oid, _ in head:
        asked = before.get(oid)
        body = bodies.get(oid)
        if asked is None or body is None or asked not in bodies:  # not in the head: little of it
            continue
        if giving is not None and oid not in giving:  # not the kind of answer asked for
            continue
        if speakers is not None:  # asked what was said to the asker: the other one's reply
            mine, theirs = speakers.get(oid), speakers.get(asked)
            if mine is None or theirs is None or mine == theirs:
                continue
        elif len(body) > SHORT or "?" not in bodies[asked]:  # a long message, or no question
            continue
        lift = REPLY * held(asked) * top
        if lift > 0:
            gained[oid] = lift
    if not gained:
        return list(ranked), {}
    lifted = sorted(
        ((oid, score + gained.get(oid, 0.0)) for oid, score in head),
        key=lambda item: (-item[1], item[0]),
    )
    return [*lifted, *ranked[ANSWER_DEPTH:]], gained


def in_head(
    ranked: Sequence[tuple[str, float]],
    head: Mapping[str, Mapping[str, str]],
    near: Neighbourhood,
    filters: Filters,
    held: Callable[[str], float],
    giving: Collection[str] | None = None,
    said_titles: Callable[[Sequence[str]], Mapping[str, str]] | None = None,
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """with_replies over the best ANSWER_DEPTH, whose titles and bodies `head` holds, each
    memory's previous one as the recall's neighbourhood has it (what the filters hide is no
    one's neighbour). `said_titles`, given when the query speaks to someone ("what did you
    suggest?"): the titles that open with who said each memory (catalog `said_titles`)."""
    bodies = {oid: fields.get("body") or fields.get("title", "") for oid, fields in head.items()}
    speakers = None
    if said_titles is not None:
        titles = said_titles(list(bodies))
        speakers = {oid: speaker(titles.get(oid, "")) for oid in bodies}
        wanted = {oid for oid, said in speakers.items() if said is not None}
    elif any("?" in body for body in bodies.values()):
        wanted = {oid for oid, body in bodies.items() if len(body) <= SHORT}
    else:  # no question in the head to answer
        return list(ranked), {}
    wanted = wanted if giving is None else wanted & set(giving)  # only these can gain
    ids = [oid for oid, _ in ranked[:ANSWER_DEPTH] if oid in wanted]
    around = near.around(ids, filters) if ids else {}
    before = {oid: p for oid in ids if (p := previous(oid, around)) is not None}
    return with_replies(ranked, bodies, before, held, giving, speakers)
