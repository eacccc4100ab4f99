"""What a question asks for (a time, an amount) and the memories whose text gives one; and
the memories that ask rather than tell.

A question answering system matches an answer's type to its question's: asked "When did Jon
go to a fair?", the memory "Yesterday, I went to a fair" answers it and "I love going to
fairs" does not; asked "How many tickets did we buy?", "We bought four tickets" does. Of the
best ANSWER_DEPTH, those whose text gives what the question asks for are multiplied by
ANSWER_TYPE and reordered among themselves. 1.2 is a hint weaker than a named time's ×1.5
(recall/when.py): it is the answer's form, not its content, so it reorders close scores and
does not lift a weak match over a strong one. Set by that reason, not fitted. On the LoCoMo
dev split ndcg@10 +0.009 [+0.005, +0.013], hit@1 +0.017, at the cost of one hit@10 of 760
(docs/lab/ranking.md, "A question's type matched to its answer's").

A memory that asks does not tell. "Is it a martial arts place or a yoga studio?" shares the
words of "What martial arts has John done?" and holds none of its answer; "I'm doing
kickboxing" holds it. Of the best ANSWER_DEPTH, each is multiplied by 1 - ASKING × the share of
its text in the questions it ends with: a memory that is all question keeps half its score, one
that asks one short thing after a long statement nearly all of it, and one that answers its own
question (a FAQ, "How are you? We moved on Friday.") all of it. Its neighbours still borrow its
score (neighbours.py): the reply to a question follows it. A query about asking ("What did
Nate ask …", "questions for the doctor") leaves them as they are. On the LoCoMo dev split,
evidence turns have 5% of their text in questions, the other turns of the top 10 14%; 2 of
1,349 evidence turns are all question. 0.5 is set by reason ("half"), not fitted
(docs/lab/ranking.md, "A memory that asks does not tell").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from brain._recall.when import asks_when, tells_time

ANSWER_TYPE = 1.2
ASKING = 0.5
ANSWER_DEPTH = 20  # of the ranking; the top 10 are read for their snippets anyway

_ASKS_AMOUNT = re.compile(r"\bhow\s+(?:many|much|often|old|long|far)\b", re.IGNORECASE)
_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|"
    "thousand|dozen|couple|few|several|once|twice"
)
_TELLS_AMOUNT = re.compile(rf"\b(?:\d+|{_NUMBER_WORDS})\b", re.IGNORECASE)
# Where one sentence ends and the next begins: after . ! ? (or Arabic's ؟) and a space, so a
# "?" inside a link ("/search?q=tea") or a "." inside "3.50" ends nothing; after the full-width
# marks of Chinese and Japanese, which take no space.
_SENTENCE_END = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？])")
_QUESTION = ("?", "？", "؟")
_STRAY = 3  # characters: "😊", ":)" after a question are still its end
ABOUT_ASKING = re.compile(
    r"\b(?:ask(?:s|ed|ing)?|question(?:s|ed|ing)?|wonder(?:s|ed|ing)?|enquir\w*|inquir\w*)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Asked:
    """What a question asks for: its name (for --explain) and whether a text gives it."""

    name: str
    given_by: Callable[[str], bool]


WHEN = Asked("when", tells_time)
HOW_MANY = Asked("how many", lambda text: _TELLS_AMOUNT.search(text) is not None)


def asked_for(query: str) -> Asked | None:
    """A time ("When did …", "which month …", "how long ago …"), an amount ("How many …",
    "how often …", "how old …"), or None for any other question."""
    if asks_when(query):
        return WHEN
    if _ASKS_AMOUNT.search(query):
        return HOW_MANY
    return None


def with_answer_type(
    ranked: Sequence[tuple[str, float]], texts: dict[str, str], asked: Asked
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """The best ANSWER_DEPTH, those whose text gives what is asked multiplied by ANSWER_TYPE
    and reordered among themselves; the rest as they were (none of them can pass the head:
    each head score only grew). `texts` holds the head's title and body."""
    factors = {oid: ANSWER_TYPE for oid, _ in ranked[:ANSWER_DEPTH] if asked.given_by(texts[oid])}
    return head_lifted(ranked, factors), factors


def asking_share(text: str) -> float:
    """The share of a text's characters in the questions it ends with. A text that ends asking
    waits for its answer elsewhere; a question it answers itself (a FAQ's, a greeting's "How
    are you? We moved on Friday.") is not counted."""
    parts = sentences(text)
    total = sum(map(len, parts))
    return sum(map(len, closing_questions(parts))) / total if total else 0.0


def sentences(text: str) -> list[str]:
    """A text's sentences, stripped, none empty."""
    return [part for part in (p.strip() for p in _SENTENCE_END.split(text)) if part]


def closing_questions(parts: Sequence[str]) -> list[str]:
    """The questions a text's sentences end with, last first (an emoji or a lone mark after
    a question goes by)."""
    asking = []
    for sentence in reversed(parts):
        if sentence.rstrip("!！\"')]”’」 ").endswith(_QUESTION):
            asking.append(sentence)
        elif len(sentence) > _STRAY:
            break
    return asking


def with_statements(
    ranked: Sequence[tuple[str, float]], texts: dict[str, str], about_asking: bool
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """The best ANSWER_DEPTH, each multiplied by 1 - ASKING × the share of the questions it ends
    with, and all reordered (a head score may now fall below the rest); unchanged when the
    query is about asking (ABOUT_ASKING). `texts` holds the head's bodies."""
    if about_asking:
        return list(ranked), {}
    factors = {}
    for oid, _ in ranked[:ANSWER_DEPTH]:
        share = asking_share(texts[oid])
        if share:
            factors[oid] = 1.0 - ASKING * share
    return _multiplied(ranked, factors), factors


def head_lifted(
    ranked: Sequence[tuple[str, float]], factors: dict[str, float]
) -> list[tuple[str, float]]:
    """The best ANSWER_DEPTH each times its factor (none below 1) and reordered among
    themselves; the rest as they were (none of them can pass the head: each head score only
    grew)."""
    return [*_multiplied(ranked[:ANSWER_DEPTH], factors), *ranked[ANSWER_DEPTH:]]


def _multiplied(
    ranked: Sequence[tuple[str, float]], factors: dict[str, float]
) -> list[tuple[str, float]]:
    """Each score times its factor (1 if it has none), best first."""
    scored = ((oid, score * factors.get(oid, 1.0)) for oid, score in ranked)
    return sorted(scored, key=lambda item: (-item[1], item[0]))
