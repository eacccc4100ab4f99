"""Words: the tokens and stopwords that full-text search, snippets and keywords share."""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

STOPWORDS = frozenset(
    """a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could did didn do does doesn doing don
    down during each few for from further had hadn has hasn have haven having he her here hers
    herself him himself his how i if in into is isn it its itself just ll me more most my myself
    no nor not now of off on once only or other our ours ourselves out over own re s same she
    should so some such t than that the their theirs them themselves then there these they this
    those through to too under until up ve very was wasn we were weren what when where which
    while who whom why will with won would you your yours yourself yourselves d m o y
    did does say said tell told know get got""".split()
)


def words(text: str) -> list[str]:
    """Lowercase word tokens."""
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    """Words that carry meaning; if a text has none, all its words."""
    tokens = words(text)
    kept = [w for w in tokens if w not in STOPWORDS]
    return kept or tokens
