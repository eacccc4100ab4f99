"""The question, read once at the start of a recall: its words, names, time and asked-for kind."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from brain._recall.answers import ABOUT_ASKING, Asked, asked_for
from brain._recall.names import mentions_of, query_names
from brain._recall.persons import addresses, asks_of_asker
from brain._recall.when import Window, parse_time
from brain._terms import content_words, is_keyword
from brain._terms import words as words_of


@dataclass(frozen=True)
class Question:
    """What every stage of a recall needs of the query, each part parsed once (`read`).

    `names`: the capitalised words that could name someone (recall/names.py); `owned`: those
    of them named only as an owner or a recipient ("Gina's store", "to John"); `pairs`: (a, b)
    for "a and b's" (the pair's, so neither is only an owner). `window`: the time it names
    (recall/when.py). `wants`: the kind of answer it asks for (recall/answers.py). `about_asking`:
    it asks about asking ("What did Nate ask …"). `terms`: its content words (snippets).
    `of_asker`: it asks of its asker ("What did I name my dog?"); `to_someone`: it speaks to
    someone ("What did you recommend?"), so it asks what was said to its asker."""

    text: str
    now: datetime
    names: tuple[str, ...]
    owned: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    window: Window | None
    wants: Asked | None
    about_asking: bool
    terms: frozenset[str]
    of_asker: bool  # asked in the first person, to no one (recall/persons.py)
    to_someone: bool  # it says "you", not only to ask for something new (recall/persons.py)

    def asks_only_when(self, names: Sequence[str]) -> bool:
        """Whether it asks what was written at a time and says nothing else that a memory
        could match: "what did I do on 17 November", "what happened last week", "what did Nate
        say on 3 June". Its other words are common ones (terms.is_keyword), or `names`: those
        that label what someone said ("Nate: …", recall/names.py `speakers`), not any
        capitalised word nor one a title opens with ("Dentist on 14 January?" asks about a
        dentist)."""
        if self.window is None:
            return False
        rest = self.text
        for said in [*self.window.said.split("; "), *names]:  # a relative time is lowercase
            rest = re.sub(rf"(?<!\w){re.escape(said)}(?!\w)", " ", rest, flags=re.IGNORECASE)
        return not any(is_keyword(w) for w in words_of(rest))


def read(text: str, now: datetime) -> Question:
    """The question as every stage of a recall sees it, asked at `now`."""
    names = query_names(text)
    owned, pairs = mentions_of(text, names)
    about_asking = ABOUT_ASKING.search(text) is not None
    return Question(
        text=text,
        now=now,
        names=names,
        owned=owned,
        pairs=pairs,
        window=parse_time(text, now),
        wants=asked_for(text),
        about_asking=about_asking,
        terms=frozenset(content_words(text)),
        # What the asker asked was said to someone ("Which classes did I ask about?")
        of_asker=asks_of_asker(text) and not about_asking,
        to_someone=addresses(text),
    )
