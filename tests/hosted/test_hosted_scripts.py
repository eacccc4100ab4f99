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


def test_version_7s_glyph_functions_give_what_versions_5_and_6_gave(hosted_dsn: str) -> None:
    """Version 7 replaces both glyph functions by linear ones: every text gets the terms the
    functions it replaces gave (so the generated columns' stored values stay right), a long
    run of letters (where the old ones walked the text once per letter) included."""
    draw = random.Random(11)
    texts = [*TEXTS, *("".join(draw.choices(ALPHABET, k=draw.randint(1, 40))) for _ in range(300))]
    texts += ["東京" * 600 + "🎉" + "ฉัน" * 300, "🇯🇵🇰🇷🇯" * 50]
    with psycopg.connect(hosted_dsn) as conn:
        conn.execute(glyphs.SQL_FUNCTION_5.replace("brain_glyphs(", "pg_temp.before_5("))
        conn.execute(glyphs.SQL_FUNCTION.replace("brain_glyph_terms(", "pg_temp.before_6("))
        for text in texts:
            row = conn.execute(
                "SELECT brain_glyphs(%s), pg_temp.before_5(%s), brain_glyph_terms(%s), "
                "pg_temp.before_6(%s)",
                (text, text, text, text),
            ).fetchone()
            assert row is not None and row[0] == row[1] and row[2] == row[3], text
