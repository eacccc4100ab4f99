"""A question asked in the first person as a prior on the memories that speak of their speaker.

"What did I name my dog?" names its subject as "Caroline" does in "What did Caroline name her
dog?" (recall/names.py): the asker, who told it in the first person ("I adopted a beagle, I
named him Rex; any tips?"). What was said to them ("Your beagle will love long walks") shares
the words and not the fact. Of the best ANSWER_DEPTH, a memory that says more of its speaker
("I", "my", "we") than of whom it addresses ("you", "your") is multiplied by FIRST_PERSON, and
the head reordered among itself (none of the rest can pass it: each head score only grew). As
strong as the name prior, for the same reason: a strong hint that can be wrong. Not when the
question also speaks to someone ("What did you suggest for my trip?" asks what was said to its
asker) or is about asking (what the asker asked was said to someone). Set by that reason, not
fitted; on LongMemEval 94% of the evidence is the user's own messages; LoCoMo's questions are in
the third person, where it never applies (docs/lab/ranking.md, "Ranking that generalises").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from brain._recall.answers import ANSWER_DEPTH, head_lifted
from brain._recall.names import NAME_PRIOR

FIRST_PERSON = NAME_PRIOR
_FIRST = frozenset("i i'm i've i'd i'll my me mine myself we we're we've our ours us".split())
_SECOND = frozenset("you you're you've you'd you'll your yours yourself".split())
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def persons(text: str) -> tuple[int, int]:
    """How many of a text's words speak of its speaker ("I", "my") and to whom it addresses."""
    said = _WORD.findall(text.lower().replace("’", "'"))
    return sum(w in _FIRST for w in said), sum(w in _SECOND for w in said)


# "Can you suggest …", "could you help me …": a request for something new, where "you" is who is
# asked to do it, not who said something the question asks back ("Can you remind me …").
_REQUEST = re.compile(r"\b(?:can|could|would|will)\s+you\b(?!\s+(?:remind|recall|repeat)\b)")


def addresses(question: str) -> bool:
    """Whether a question speaks to someone of what they said or did ("What did you recommend?",
    "Can you remind me of the list you gave?"), not only asks them for something new ("Can
    you suggest accessories for my camera?": about the asker's own camera)."""
    return persons(_REQUEST.sub(" ", question.lower().replace("’", "'")))[1] > 0


def asks_of_asker(question: str) -> bool:
    """Whether a question asks of its asker: in the first person, and to no one ("you") but
    as a request ("Can you suggest something for my trip?")."""
    return persons(question)[0] > 0 and not addresses(question)


def with_speaker(
    ranked: Sequence[tuple[str, float]], texts: dict[str, str], of_asker: bool
) -> tuple[list[tuple[str, float]], dict[str, float]]:
    """For a question that asks of its asker: the best ANSWER_DEPTH, those that speak of their
    speaker multiplied by FIRST_PERSON and reordered among themselves; the rest as they were.
    `texts` holds the head's bodies."""
    if not of_asker:
        return list(ranked), {}
    head = ranked[:ANSWER_DEPTH]
    factors = {}
    for oid, _ in head:
        mine, yours = persons(texts.get(oid, ""))
        if mine > yours:
            factors[oid] = FIRST_PERSON
    if not factors:
        return list(ranked), {}
    return head_lifted(ranked, factors), factors
