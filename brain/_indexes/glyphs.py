"""Glyphs: the CJK characters and emoji that English word tokens miss, as terms of their own.

tantivy's simple tokenizer keeps a run of kanji, kana or hangul as one token and drops emoji,
so neither "桜" in "桜がきれいでした" nor "🚣" is a term the English full text can find. Here
every CJK character is a term, and so is every pair of neighbouring ones (the usual bigrams of
CJK search: "東京" in "東京の天気" without a dictionary of Japanese words), and every emoji.
The full text indexes them in a field of their own, which only a query holding a glyph asks:
an English query is answered exactly as before. PostgreSQL derives the same terms with
`SQL_FUNCTION` (one set of ranges for both storages).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from brain._terms import STOPWORDS, content_words

# Han (with its extensions and compatibility forms), kana, hangul, and 々〆〇: letters that
# CJK writing runs together without spaces. The katakana middle dot (U+30FB) is punctuation.
CJK = (
    (0x1100, 0x11FF),
    (0x2E80, 0x2FDF),
    (0x3005, 0x3007),
    (0x3040, 0x30FA),
    (0x30FC, 0x30FF),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)
# Pictographs: misc technical (⌚), misc symbols and dingbats (☀ ❤ ✨), ⭐, and the emoji
# planes, without the skin-tone modifiers (U+1F3FB–F), which say nothing alone. Joiners and
# variation selectors are outside, so "👍🏽" and "❤️" are found by "👍" and "❤".
EMOJI = (
    (0x2300, 0x23FF),
    (0x2600, 0x27BF),
    (0x2B00, 0x2BFF),
    (0x1F000, 0x1F3FA),
    (0x1F400, 0x1FAFF),
)


def _class(ranges: tuple[tuple[int, int], ...], escape: Callable[[int], str]) -> str:
    return "[" + "".join(f"{escape(a)}-{escape(b)}" for a, b in ranges) + "]"


def _py(code: int) -> str:
    return re.escape(chr(code))


def _pg(code: int) -> str:
    return f"\\U{code:08x}"  # PostgreSQL's regular expressions: an escape, ASCII in the SQL


_CJK_CLASS = _class(CJK, _py)
_GLYPH = re.compile(f"{_CJK_CLASS}+|{_class(EMOJI, _py)}")
_ONE = re.compile(f"(?:{_CJK_CLASS}|{_class(EMOJI, _py)})+")


def glyphs(text: str) -> list[str]:
    """The text's glyph terms in order, repeats kept (as a term is counted in a document):
    each CJK character and each pair of neighbouring ones, each emoji."""
    out: list[str] = []
    for run in _GLYPH.findall(text):
        for i, char in enumerate(run):
            out.append(char)
            if i + 1 < len(run):
                out.append(run[i : i + 2])
    return out


def asked(query: str) -> list[str]:
    """A query's glyph terms, once each: a lone CJK character as itself, a longer run as its
    pairs (a word of two or more is asked by its pairs, so "晴れ" is not answered by every
    memory holding "れ"), each emoji."""
    out: list[str] = []
    for run in _GLYPH.findall(query):
        out += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    return list(dict.fromkeys(out))


def is_glyph(term: str) -> bool:
    """Whether a term is a glyph term (asked of the glyph field, not the English one)."""
    return bool(term) and _ONE.fullmatch(term) is not None


def split(query: str) -> tuple[list[str], list[str]]:
    """A query's content words for the English fields, and its glyph terms (`asked`). Without
    glyphs the words are `content_words`, as they always were; with glyphs, the English left
    of each word once its CJK characters are taken out ("iphone15の" → "iphone15", "桜" →
    nothing), and never a stopword: "the 🚣" asks for the emoji, not for every "the"."""
    words, marks = content_words(query), asked(query)
    if not marks:
        return words, marks
    english = [w for word in words for w in re.split(f"{_CJK_CLASS}+", word) if w]
    return [w for w in english if w not in STOPWORDS], marks


def encoded(term: str) -> str:
    """A glyph term as PostgreSQL holds it: ASCII ("g" and each code point in hex), which
    every text-search parser reads as one word whatever the database's locale."""
    return "".join(f"g{ord(char):x}" for char in term)


# The same terms as `glyphs`, encoded, from a title and body: immutable, so a generated column
# (brain/_hosted/schema.py) computes them for every row, those written before it included.
SQL_FUNCTION = f"""
CREATE OR REPLACE FUNCTION brain_glyphs(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $body$
SELECT coalesce(string_agg(
    'g' || to_hex(ascii(substr(m.run[1], i, 1)))
    || CASE WHEN size = 2 THEN 'g' || to_hex(ascii(substr(m.run[1], i + 1, 1))) ELSE '' END,
    ' ' ORDER BY m.n, i, size), '')
FROM regexp_matches(content, '{_class(CJK, _pg)}+|{_class(EMOJI, _pg)}', 'g')
    WITH ORDINALITY AS m(run, n)
CROSS JOIN generate_series(1, char_length(m.run[1])) AS i
CROSS JOIN (VALUES (1), (2)) AS s(size)
WHERE i + size - 1 <= char_length(m.run[1])
$body$
"""
