"""Glued words: English inside a run of CJK or Thai ("Pythonでデータ分析", "用Python写的"), and
fullwidth Latin ("Ｐｙｔｈｏｎ"), as words the English full text reads.

tantivy's simple tokenizer and PostgreSQL's parser keep "Pythonで" as one token, so "python"
never finds it, and lowercase "Ｐｙｔｈｏｎ" as itself. The English fields index `apart(text)`
instead: fullwidth digits and letters folded to ASCII (as NFKC folds them), then a space where
a Latin letter or digit meets a letter of an unspaced script. A text with neither is indexed
exactly as before. PostgreSQL computes the same with `SQL_FUNCTION`.
"""

from __future__ import annotations

import re

from brain._indexes import scripts

_FOLD = {
    code: code - scripts.FULLWIDTH_SHIFT
    for first, last in scripts.FULLWIDTH
    for code in range(first, last + 1)
}
_LATIN, _UNSPACED = scripts.py(scripts.LATIN), scripts.py(scripts.UNSPACED)
_SEAM = re.compile(f"(?<={_LATIN})(?={_UNSPACED})|(?<={_UNSPACED})(?={_LATIN})")


def apart(text: str) -> str:
    """The text as the English fields index it: fullwidth Latin folded, and Latin letters
    and digits spaced from the unspaced letters they touch ("Pythonで" → "Python で")."""
    if text.isascii():  # nearly every text: nothing to fold or space
        return text
    return _SEAM.sub(" ", text.translate(_FOLD))


def _pg_string(codes: list[int]) -> str:
    return "E'" + "".join(f"\\u{code:04x}" for code in codes) + "'"


_WIDE, _NARROW = list(_FOLD), list(_FOLD.values())
_PG_LATIN, _PG_UNSPACED = scripts.pg(scripts.LATIN), scripts.pg(scripts.UNSPACED)
# `apart` in SQL, immutable, for the generated column of the English words
# (brain/_hosted/schema.py).
SQL_FUNCTION = f"""
CREATE OR REPLACE FUNCTION brain_apart(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $body$
SELECT regexp_replace(
    translate(content, {_pg_string(_WIDE)}, {_pg_string(_NARROW)}),
    '(?<={_PG_LATIN})(?={_PG_UNSPACED})|(?<={_PG_UNSPACED})(?={_PG_LATIN})', ' ', 'g')
$body$
"""
