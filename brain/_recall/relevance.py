"""How much of a question a memory holds, on a scale that means the same in every recall."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from brain._indexes import glyphs
from brain._indexes.fulltext import stems
from brain._indexes.ports import FullTextPort
from brain._recall.names import query_names
from brain._terms import CALENDAR, GENERIC, STOPWORDS

if TYPE_CHECKING:
    from brain._indexes.catalog import Brief
    from brain._indexes.fulltext import Filters
    from brain._recall.when import Window

# Recall's scores are scaled per query (rank.scales), so they say how a memory compares with
# the others of its answer, never whether any of them matches. Relevance is absolute: the share
# of the question's terms a memory holds, each term weighed by how rare it is in the vault
# (BM25's idf), so "Caroline" in Caroline's own vault weighs little and a word the vault never
# holds weighs most. Below FLOOR no hit of the answer is shown (docs/lab/ranking.md, "Honest
# relevance": chosen on both dev files).
FLOOR = 0.15
# Words that say little of what is asked: the chatter of conversations (terms.GENERIC: "go",
# "like", "kind") and the calendar ("in July 2023", digits), whose times recall/when.py reads
# from a memory's date, not its text, so a memory rarely holds them as words.
UNWEIGHED = GENERIC | CALENDAR
STRONG, FAIR = 0.6, 0.3
BANDS = ("strong", "fair", "weak")
# A memory can hold a question's meaning without its words ("new dog" of "Caroline adopted a
# puppy"): beside the shipped MiniLM, a cosine to the question of at least MEANING counts as
# relevance of that much. On the LoCoMo negative-question protocol (docs/lab/ranking.md,
# "Honest relevance") 0.45 keeps 92.4% of questions asked of another conversation "nothing
# relevant" (98.3% by words alone) and hit@10 the same; 0.40 would keep 81%.
MEANING = 0.45


@dataclass(frozen=True)
class Asked:
    """The question's terms (as the full text stems them), each with its weight; the time it
    names, with its own; and whether the vault knows any of the names it asks about."""

    weights: Mapping[str, float]
    known: bool = True
    when: Window | None = None
    when_weight: float = 0.0
    # A question of symbols alone ("🎉", "*"), in which the full text reads no word: its
    # pieces, each held by a memory whose text holds it as written.
    marks: tuple[str, ...] = ()

    def held(self, title: str, body: str, created: str) -> float:
        """The share of the question's weight that this memory holds: the terms its title or
        body holds, and the time it names when the memory was written then."""
        if self.marks:
            text = f"{title}\n{body}".casefold()
            return sum(mark in text for mark in self.marks) / len(self.marks)
        total = sum(self.weights.values()) + self.when_weight
        if not total or not self.known:
            return 0.0
        found = set(stems(f"{title}\n{body}"))
        if any(glyphs.is_glyph(term) for term in self.weights):
            found.update(glyphs.glyphs(f"{title}\n{body}"))
        share = sum(w for term, w in self.weights.items() if term in found)
        if self.when is not None and self.when.holds(created):
            share += self.when_weight
        return share / total

    def worded(self, title: str, body: str) -> bool:
        """Whether a cosine can say this memory holds the question's meaning: both hold words.
        To MiniLM a text of symbols alone (emoji, punctuation) is an unknown token or two, as
        near every other short text as to any ("🚣" to "🎉🎂" 0.88, "x" to it 0.63). A question's
        glyphs are no words to it either: the shipped MiniLM is an English model."""
        worded = any(not glyphs.is_glyph(term) for term in self.weights)
        return worded and bool(stems(f"{title}\n{body}"))


def unread_by_models(embedder: str, query: str) -> bool:
    """A question of glyphs alone (CJK, Thai, emoji) to brain's own models (`embedder` named
    minilm, or hashing in tests): the shipped MiniLM and SPLADE are English, to them it is an
    unknown token or two, and their order of the vault is noise beside the full text's (a Thai
    note came first for "烤鸭"). A model of the person's own (`own-…`) may read it."""
    english, marks = glyphs.split(query)
    return bool(marks) and not english and not embedder.startswith("own-")


def asked(
    fulltext: FullTextPort,
    query: str,
    when: Window | None = None,
    then: int = 0,
    within: Filters | None = None,
) -> Asked:
    """The query's content words, weighed by their rarity among the vault's memories, and the
    time it names (`when`, in which `then` memories were written), weighed the same way: a
    time is asked as a word is, and a memory holds it by being written then. A query that
    names someone or something (a capitalised word past its first: names.query_names) asks
    about them: when no memory holds any of those names, nothing in the vault is about it.
    `within`: the memories counted (a model's: those it may see, or a private note's words
    would weigh its answers, and a name only a private note holds would not be "nothing")."""
    english, marks = glyphs.split(query)  # its CJK characters and emoji apart, as searched
    kept = [w for w in english if w not in STOPWORDS]
    said = [w for w in kept if w not in UNWEIGHED and not w.isdigit()]
    # A question that asks only when ("What did I do on 17 November?") has its time alone; one
    # of common words alone ("the of and", "is it") asks nothing a memory could hold.
    asks = when is not None or marks
    terms = _stemmed(said or ([] if asks else kept)) + marks
    names = _stemmed(query_names(query.strip().partition(" ")[2]))
    total, freqs = fulltext.doc_freqs(list(dict.fromkeys([*terms, *names])), within)
    known = not names or any(freqs.get(n, 0) for n in names)
    weights = {t: _idf(total, freqs.get(t, 0)) for t in terms}
    symbols = not terms and when is None and not stems(query)  # no word the full text reads
    written = tuple(query.casefold().split()) if symbols else ()
    return Asked(weights, known, when, _idf(total, then) if when is not None else 0.0, written)


def _stemmed(words: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(stems(" ".join(words))))


def with_meaning(held: Mapping[str, float], cosines: Mapping[str, float]) -> dict[str, float]:
    """Each hit's relevance: the share of the question's words it holds, or its cosine to
    the question where that reaches MEANING and says more."""
    out = dict(held)
    for oid, share in held.items():
        cosine = cosines.get(oid, 0.0)
        if cosine >= MEANING and cosine > share:
            out[oid] = min(cosine, 1.0)
    return out


def of_memory(
    weighed: Asked,
    cosines: Mapping[str, float],
    texts: Mapping[str, Mapping[str, str]],
    rows: Mapping[str, Brief],
    oid: str,
) -> float:
    """One memory's relevance (as `with_meaning` gives it) from its title and body in
    `texts` and its catalog row; 0 for a memory not in both."""
    fields, row = texts.get(oid), rows.get(oid)
    if fields is None or row is None:
        return 0.0
    title, body = fields.get("title", ""), fields.get("body", "")
    share = weighed.held(title, body, row.created)
    worded = weighed.worded(title, body)
    return with_meaning({oid: share}, cosines if worded else {})[oid]


def clears(held: Mapping[str, float]) -> bool:
    """Whether any hit of an answer holds enough of the question to show the answer."""
    return any(h >= FLOOR for h in held.values())


def band(relevance: float) -> str:
    """strong | fair | weak: how much of the question a shown hit holds."""
    return "strong" if relevance >= STRONG else "fair" if relevance >= FAIR else "weak"


def _idf(total: int, freq: int) -> float:
    """BM25's idf: a term no memory holds weighs most, one every memory holds nearly nothing
    (never less: counts taken apart cannot make a weight, or a relevance, below zero)."""
    return math.log(1 + max(total - freq + 0.5, 0.0) / (freq + 0.5))
