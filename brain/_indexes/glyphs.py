"""Glyphs: the letters of unspaced scripts and the emoji that English word tokens miss, as terms.

tantivy's simple tokenizer keeps a run of kanji, kana, hangul or Thai as one token and drops
emoji, so neither "桜" in "桜がきれいでした" nor "🚣" is a term the English full text can find.
Here every character of a script written without spaces (scripts.UNSPACED: CJK, Thai, Lao,
Khmer, Myanmar) is a term, and so is every pair of neighbouring ones (the usual bigrams of CJK
search: "東京" in "東京の天気" without a dictionary of Japanese words), and every emoji, a flag
(two regional letters) whole. The full text indexes them in a field of their own, which only
a query holding a glyph asks: an English query is answered exactly as before. PostgreSQL
derives the same terms with `SQL_FUNCTION` (one set of ranges for both storages).
"""

from __future__ import annotations

import re

from brain._indexes import glued, scripts
from brain._terms import STOPWORDS, content_words

_UNSPACED = scripts.py(scripts.UNSPACED)
_EMOJI = scripts.py(scripts.EMOJI)
_FLAG = scripts.py(scripts.REGIONAL) + "{2}"
_GLYPH = re.compile(f"{_FLAG}|{_UNSPACED}+|{_EMOJI}")
_RUN = re.compile(f"{_UNSPACED}+")
_ONE = re.compile(f"(?:{_UNSPACED}|{_EMOJI})+")


def glyphs(text: str) -> list[str]:
    """The text's glyph terms in order, repeats kept (as a term is counted in a document):
    each character of an unspaced script and each pair of neighbouring ones, each emoji,
    each flag."""
    out: list[str] = []
    if text.isascii():  # nearly every English text: ~0.1 µs against ~8 for the search
        return out
    for run in _GLYPH.findall(text):
        if not _RUN.match(run):
            out.append(run)
            continue
        for i, char in enumerate(run):
            out.append(char)
            if i + 1 < len(run):
                out.append(run[i : i + 2])
    return out


def asked(query: str) -> list[str]:
    """A query's glyph terms, once each: a lone character as itself, a longer run as its
    pairs (a word of two or more is asked by its pairs, so "晴れ" is not answered by every
    memory holding "れ"), each emoji, each flag."""
    out: list[str] = []
    for run in _GLYPH.findall(query):
        if len(run) == 1 or not _RUN.match(run):
            out.append(run)
        else:
            out += [run[i : i + 2] for i in range(len(run) - 1)]
    return list(dict.fromkeys(out))


def is_glyph(term: str) -> bool:
    """Whether a term is a glyph term (asked of the glyph field, not the English one)."""
    return bool(term) and _ONE.fullmatch(term) is not None


def split(query: str) -> tuple[list[str], list[str]]:
    """A query's content words for the English fields, as they read it (`glued.apart`:
    "Pythonで" → "python", "Ｐｙｔｈｏｎ" → "python"), and its glyph terms (`asked`). Without
    glyphs the words are `content_words`, as they always were; with glyphs, the English left
    of each word once its unspaced letters are taken out ("東京" → nothing), and never a
    stopword: "the 🚣" asks for the emoji, not for every "the"."""
    words, marks = content_words(glued.apart(query)), asked(query)
    if not marks:
        return words, marks
    english = [w for word in words for w in _RUN.split(word) if w]
    return [w for w in english if w not in STOPWORDS], marks


def encoded(term: str) -> str:
    """A glyph term as PostgreSQL holds it: ASCII ("g" and each code point in hex), which
    every text-search parser reads as one word whatever the database's locale."""
    return "".join(f"g{ord(char):x}" for char in term)


# Schema version 5's glyph terms (CJK and emoji, a flag as its two letters), which servers of
# version 5 still read from the `glyphs` column: as that version made them, never edited.
SQL_FUNCTION_5 = f"""
CREATE OR REPLACE FUNCTION brain_glyphs(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $body$
SELECT coalesce(string_agg(
    'g' || to_hex(ascii(substr(m.run[1], i, 1)))
    || CASE WHEN size = 2 THEN 'g' || to_hex(ascii(substr(m.run[1], i + 1, 1))) ELSE '' END,
    ' ' ORDER BY m.n, i, size), '')
FROM regexp_matches(content, '{scripts.pg(scripts.CJK)}+|{scripts.pg(scripts.EMOJI)}', 'g')
    WITH ORDINALITY AS m(run, n)
CROSS JOIN generate_series(1, char_length(m.run[1])) AS i
CROSS JOIN (VALUES (1), (2)) AS s(size)
WHERE i + size - 1 <= char_length(m.run[1])
$body$
"""

# The same terms as `glyphs`, encoded, from a title and body: immutable, so a generated column
# (brain/_hosted/schema.py) computes them for every row, those written before it included.
# A run of unspaced letters gives its characters and pairs; an emoji or a flag, itself.
_PG_UNSPACED = scripts.pg(scripts.UNSPACED)
SQL_FUNCTION = f"""
CREATE OR REPLACE FUNCTION brain_glyph_terms(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $body$
SELECT coalesce(string_agg(
    'g' || to_hex(ascii(substr(m.run[1], i, 1)))
    || CASE WHEN size = 2 THEN 'g' || to_hex(ascii(substr(m.run[1], i + 1, 1))) ELSE '' END,
    ' ' ORDER BY m.n, i, size), '')
FROM regexp_matches(content,
    '{scripts.pg(scripts.REGIONAL)}{{2}}|{_PG_UNSPACED}+|{scripts.pg(scripts.EMOJI)}', 'g')
    WITH ORDINALITY AS m(run, n)
CROSS JOIN generate_series(1, char_length(m.run[1])) AS i
CROSS JOIN (VALUES (1), (2)) AS s(size)
WHERE CASE WHEN m.run[1] ~ '^{_PG_UNSPACED}' THEN i + size - 1 <= char_length(m.run[1])
    ELSE i = 1 AND size = char_length(m.run[1]) END
$body$
"""


def _linear(name: str, pattern: str, letters: str | None) -> str:
    """A glyph-terms function whose time grows with the text, not its square: each run is
    split into its characters once (`substr` at each position walks a multibyte text from its
    start). `letters`: the class a run of letters opens with (characters and pairs); any other
    run (an emoji, a flag) is one term when one or two characters long, none when longer.
    None: every run is letters (version 5's terms)."""
    is_letters = "true" if letters is None else f"m.run[1] ~ '^{letters}'"
    return f"""
CREATE OR REPLACE FUNCTION {name}(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $body$
WITH runs AS MATERIALIZED (
    SELECT m.n, {is_letters} AS letters, char_length(m.run[1]) AS len,
        string_to_array(m.run[1], NULL) AS chars
    FROM regexp_matches(content, '{pattern}', 'g') WITH ORDINALITY AS m(run, n)
), each AS (
    SELECT r.n, r.letters, r.len, c.i, 'g' || to_hex(ascii(c.ch)) AS one,
        'g' || to_hex(ascii(lead(c.ch) OVER (PARTITION BY r.n ORDER BY c.i))) AS next
    FROM runs r CROSS JOIN unnest(r.chars) WITH ORDINALITY AS c(ch, i)
)
SELECT coalesce(string_agg(t.term, ' ' ORDER BY e.n, e.i, t.size), '')
FROM each e CROSS JOIN LATERAL (VALUES
    (1, CASE WHEN e.letters OR e.len = 1 THEN e.one END),
    (2, CASE WHEN e.letters OR (e.len = 2 AND e.i = 1) THEN e.one || e.next END)
) AS t(size, term)
$body$
"""


# Schema version 7: both functions again, each giving the very terms it gave (so no stored
# column changes), in linear time: a long Chinese or Thai note took minutes of a shared core.
SQL_FUNCTIONS_7 = (
    _linear("brain_glyphs", f"{scripts.pg(scripts.CJK)}+|{scripts.pg(scripts.EMOJI)}", None),
    _linear(
        "brain_glyph_terms",
        f"{scripts.pg(scripts.REGIONAL)}{{2}}|{_PG_UNSPACED}+|{scripts.pg(scripts.EMOJI)}",
        _PG_UNSPACED,
    ),
)
