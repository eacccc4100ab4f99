"""PostgreSQL's functions of the full text derive what Python does (brain/_indexes/glued.py,
glyphs.py): the same English words apart and the same glyph terms, for both storages."""

from __future__ import annotations

import random

import psycopg

from brain._indexes import glued, glyphs

ALPHABET = "aZé9０Ｐｙ東京のデ한ฉแม่ມກ្ខကြ🎉🚣🇯🇵🇲👍🏽 .-_\n"
TEXTS = [
    "Pythonでデータ分析",
    "用Python写的",
    "aでa",
    "Ｐｙｔｈｏｎ３",
    "x🇯🇵🇰🇷y🇯",
    "café的2023年",
    "ใช้Pythonทำ",
    "",
]


def test_the_sql_functions_give_the_python_terms(hosted_dsn: str) -> None:
    draw = random.Random(7)
    texts = [*TEXTS, *("".join(draw.choices(ALPHABET, k=draw.randint(1, 30))) for _ in range(300))]
    with psycopg.connect(hosted_dsn) as conn:
        for text in texts:
            row = conn.execute("SELECT brain_apart(%s), brain_glyph_terms(%s)", (text, text))
            assert row.fetchone() == (
                glued.apart(text),
                " ".join(glyphs.encoded(t) for t in glyphs.glyphs(text)),
            ), text
