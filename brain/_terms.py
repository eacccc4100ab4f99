"""Terms: word tokens and stopwords (full text, snippets), keywords and named entities of a memory.

Keywords and entities are found without a model: counts and capital letters.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

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


# Words too common in notes and conversations to tell one topic from another. Full-text search
# keeps them (they can matter in a phrase); index keywords and node scoring leave them out.
GENERIC = frozenset(
    """also actually again ago almost already always amazing another anyone anything anyway around
    ask asked awesome away back bad best better big bit came can come comes coming cool could
    day days definitely done dont easy else enough etc even ever every everyone everything feel
    feeling felt find first fun get gets getting give glad go goes going gone gonna good got
    great guess guys happen happened happening happy hard hear heard hello help hey hi hope http
    https idea ill im isnt ive just keep kind know last let lets life like liked little long
    look looking looks lot lots love made make makes making many maybe mean means might much
    must need needs never new next nice nothing now okay ok one ones oh part people person place
    pretty purpose put quite rather real really right said saw say says see seems seen share
    should show since small something sometimes soon sort sound sounds still stuff super sure
    take taking talk thank thanks thats thing things think thought time times today together
    tomorrow took tried true try trying two use used using want wanted way week well went whole
    wow www yeah year years yes yesterday yet youre com org net via per""".split()
)

# The days of the week and the months: capitalised, yet not entities.
CALENDAR = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday january february march april
    may june july august september october november december""".split()
)

_SENTENCE = re.compile(r"[.!?;:]+(?:\s|$)|\n+")
_NAME_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_PURPOSE_LINE = re.compile(r"^>\s*Purpose:.*$", re.MULTILINE)

NOTE_TERMS = 32  # the most frequent terms each note contributes to its nodes
NOTE_ENTITIES = 16
MAX_ENTITY_WORDS = 4


TITLE_BONUS = 2  # a word of the title says more about a memory than one more use in its text


def memory_text(texts: Iterable[str]) -> str:
    """The text a memory contributes, minus the purpose line engraved in structural notes."""
    return "\n".join(without_purpose(t) for t in texts)


def without_purpose(text: str) -> str:
    """The text without the purpose line engraved in the vault's structural notes
    (vault-template/: "> Purpose: who the person is ..."): it guides the person who fills the
    note in, and is nothing they remember."""
    return _PURPOSE_LINE.sub("", text)


def only_purpose(body: str) -> bool:
    """Whether a note holds its purpose line and nothing else: a structural note not yet
    filled in."""
    return _PURPOSE_LINE.search(body) is not None and not without_purpose(body).strip()


def is_keyword(word: str) -> bool:
    return len(word) >= 3 and word.isalpha() and word not in STOPWORDS and word not in GENERIC


def terms(title: str, text: str, limit: int = NOTE_TERMS) -> list[tuple[str, int]]:
    """A memory's keyword candidates with their weight (uses, plus a bonus for the title),
    lowercase, strongest first."""
    # Counted first, then each distinct word tested once (a long note says "the" a thousand times).
    counts = Counter(words(text))
    counts = Counter({w: n for w, n in counts.items() if is_keyword(w)})
    for word in set(words(title)):
        if is_keyword(word):
            counts[word] += TITLE_BONUS
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def entities(text: str, limit: int = NOTE_ENTITIES) -> list[tuple[str, int]]:
    """Names a memory mentions: runs of capitalised words ("Widget Pro"), mid-sentence proper
    nouns ("… with Caroline"), and acronyms ("API"), with how often; most mentioned first."""
    runs: list[tuple[list[str], bool]] = []  # (names, opens the sentence)
    for sentence in _SENTENCE.split(text):
        tokens = _NAME_WORD.findall(sentence)
        run: list[str] = []
        start = 0
        for i, token in enumerate([*tokens, ""]):
            if token[:1].isupper():
                if not run:
                    start = i
                run.append(token)
                continue
            if run:
                names, skipped = _clean(run)
                if names:
                    runs.append((names, start == 0 and skipped == 0))
                run = []
    # A lone capitalised word opening a sentence counts only if the note also uses it mid-sentence.
    mid_sentence = {names[0] for names, first in runs if not first and len(names) == 1}
    counts: Counter[str] = Counter()
    for names, first in runs:
        if len(names) > MAX_ENTITY_WORDS:
            continue
        if len(names) == 1:
            name = names[0]
            acronym = name.isupper() and 2 <= len(name) <= 6 and name.isalpha()
            if len(name) < 2 or (first and name not in mid_sentence and not acronym):
                continue
        counts[" ".join(names)] += 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]


def _clean(run: list[str]) -> tuple[list[str], int]:
    """Trim openers ("The", "Hey") and possessives off a run of capitalised words; also says
    how many words were trimmed from the front."""
    names = [w.removesuffix("'s").removesuffix("’s").strip("'’-") for w in run]

    def filler(word: str) -> bool:
        low = word.casefold()
        return low in STOPWORDS or low in GENERIC or low in CALENDAR or not word

    skipped = 0
    while names and filler(names[0]):
        names.pop(0)
        skipped += 1
    while names and filler(names[-1]):
        names.pop()
    return names, skipped


_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("es", "e"), ("s", ""))


def stem(word: str) -> str:
    """A light plural-folding stem, so "agencies" meets "agency" and "recipes" meets "recipe"."""
    if len(word) <= 3 or word.endswith("ss"):
        return word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + replacement
    return word


def query_terms(text: str) -> list[str]:
    """Stemmed keyword candidates of a query or a memory, in order, without repeats."""
    return list(dict.fromkeys(stem(w) for w in words(text) if is_keyword(w)))
