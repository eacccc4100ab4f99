"""People named in the query ("What did Caroline …") as a prior on what they said or are about."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from brain._indexes.catalog import Brief
from brain._indexes.fulltext import Filters
from brain._terms import STOPWORDS, words

# A memory whose subject (the name its title opens with: "Caroline: …" for a turn of a
# conversation, "Caroline prefers tea" for a note) is a person the query names is multiplied by
# NAME_PRIOR. A prior, not a filter: the answer is sometimes what someone else said to them
# ("Melanie: Caroline, how did the meeting go?"). As strong as the time prior (when.py), for
# the same reason: a strong hint that can be wrong. Chosen by reason, not fitted
# (docs/lab/ranking.md).
NAME_PRIOR = 1.5
# These retrievers search without the names that are speakers (memories open with
# "<name>:", as turns of a conversation do) and common (in at least COMMON of the memories of
# the nodes where the people named are, to which that search keeps):
# there a speaker's name opens half the memories and is spoken in many of the others ("Wow,
# Caroline!"), so as a search word it finds greetings, not answers; the prior above still says
# whose words are wanted. A name that only opens titles ("Postgres tuning") stays a search
# word, and so does a rarer one: in a vault of many conversations it tells them apart.
# The learned-sparse terms are words too, and the name is as much noise to them.
STRIP_NAMES = ("text", "vector", "sparse")
COMMON = 0.25
# Without the name the search would find any conversation's words alike, and in a vault of
# many conversations the name is what tells them apart: so the search without it keeps to the
# nodes where the memories of the people named are.
KEEP_TO_PLACES = True

_CAPITALISED = re.compile(r"(?<![\w'’])([A-Z][a-z][\w-]*)(?:['’]s)?(?![\w'’])")
_SUBJECT = re.compile(r"^\W*([A-Z][a-z][\w-]*)(?:['’]s)?(?=[:,\s]|$)")
# Capitalised words that open sentences or name the calendar, not people.
_NOT_NAMES = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december yes no hi hey ok okay thanks
    wow oh""".split()
)


def query_names(query: str) -> tuple[str, ...]:
    """Capitalised words of the query that could name someone, in order, without repeats."""
    found = (m.group(1) for m in _CAPITALISED.finditer(query))
    kept = (w for w in found if w.lower() not in STOPWORDS and w.lower() not in _NOT_NAMES)
    return tuple(dict.fromkeys(kept))


def subject(title: str) -> str | None:
    """The name a memory's title opens with, if it opens with one."""
    match = _SUBJECT.match(title)
    if match is None or match.group(1).lower() in STOPWORDS | _NOT_NAMES:
        return None
    return match.group(1)


def subjects(names: Sequence[str], titles: dict[str, str]) -> tuple[str, ...]:
    """The names that are the subject of at least one of these memories."""
    found = {subject(title) for title in titles.values()}
    return tuple(name for name in names if name in found)


def speakers(names: Sequence[str], titles: dict[str, str]) -> tuple[str, ...]:
    """The names that label what someone said ("Caroline: …") in at least one of these titles."""
    labels = {t.split(":", 1)[0].strip() for t in titles.values() if ":" in t}
    return tuple(name for name in names if name in labels)


def whose_words(
    people: Sequence[str], talking: Sequence[str], owned: frozenset[str], pairs: PairsSaid
) -> tuple[str, ...]:
    """The people whose words the query asks for. A speaker it names only as an owner ("What
    did Jon say about Gina's store?": the store is Gina's, the words Jon's) or as whom
    something goes to ("What book did Tim recommend to John?") is left out when another
    speaker is named as more than that. "According to Gina" names the one who speaks; "Tim and
    John's favourite player" is the pair's: neither is left out. `owned` and `pairs`: what
    `mentions_of` read of the query."""

    def only_other(name: str) -> bool:
        return name in owned and not any((p, name) in pairs for p in people if p != name)

    others = {name for name in talking if only_other(name)}
    if not others or not set(talking) - others:
        return tuple(people)
    return tuple(name for name in people if name not in others)


PairsSaid = frozenset[tuple[str, str]]  # (a, b) for "a and b's"


def mentions_of(query: str, names: Sequence[str]) -> tuple[frozenset[str], PairsSaid]:
    """Of these names, those the query names only as an owner ("Gina's") or a recipient ("to
    John", not "according to John"); and the pairs it names as one owner ("Tim and John's")."""

    def owner_or_recipient(mention: re.Match[str]) -> bool:
        before = query[: mention.start()]
        return bool(mention.group(1)) or (
            re.search(r"\bto\s+$", before, re.I) is not None
            and re.search(r"\baccording\s+to\s+$", before, re.I) is None
        )

    owned = set()
    for name in names:
        said = re.escape(name)
        mentions = list(re.finditer(rf"(?<![\w'’]){said}(['’]s)?(?![\w'’])", query))
        if mentions and all(map(owner_or_recipient, mentions)):
            owned.add(name)
    pairs = {
        (a, b)
        for a in names
        for b in names
        if a != b and re.search(rf"\b{re.escape(a)}\s+and\s+{re.escape(b)}['’]s\b", query)
    }
    return frozenset(owned), frozenset(pairs)


def without(query: str, names: Sequence[str]) -> str | None:
    """The query with these names (and their possessive) taken out; None if nothing that
    carries meaning is left."""
    for name in names:
        query = re.sub(rf"(?<![\w'’]){re.escape(name)}(?:['’]s)?(?![\w'’])", " ", query)
    left = " ".join(query.split())
    return left if any(w not in STOPWORDS for w in words(left)) else None


def kept_to(
    filters: Filters, people: Sequence[str], titles: dict[str, str], rows: dict[str, Brief]
) -> Filters:
    """The filters kept to the nodes of the memories whose subject is one of these people."""
    wanted = set(people)
    nodes = {row.node for oid, row in rows.items() if subject(titles.get(oid, "")) in wanted}
    if not KEEP_TO_PLACES or not nodes:
        return filters
    return dataclasses.replace(filters, nodes=tuple(sorted(nodes)))


def with_names(
    ranked: Sequence[tuple[str, float]], titles: dict[str, str], names: Sequence[str]
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """Scores with the name prior applied, best first, and the factor each memory got."""
    wanted = set(names)
    factors = {oid: NAME_PRIOR for oid, _ in ranked if subject(titles.get(oid, "")) in wanted}
    if not factors:
        return list(ranked), {}
    out = [(oid, score * factors.get(oid, 1.0)) for oid, score in ranked]
    return sorted(out, key=lambda item: (-item[1], item[0])), factors
