"""Scripts: the code-point ranges the full text tells apart, as Python and PostgreSQL classes.

One set of ranges serves both storages (glyphs.py, glued.py), so a text's terms are the same
whether tantivy or PostgreSQL indexes it.
"""

from __future__ import annotations

import re

Ranges = tuple[tuple[int, int], ...]

# Han (with its extensions and compatibility forms), kana, hangul, and 々〆〇: letters that
# CJK writing runs together without spaces. The katakana middle dot (U+30FB) is punctuation.
CJK: Ranges = (
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
# Thai, Lao, Myanmar (with its extensions) and Khmer (with its symbols): also written without
# spaces between words, their vowel and tone marks inside the blocks.
SOUTHEAST: Ranges = (
    (0x0E00, 0x0E7F),
    (0x0E80, 0x0EFF),
    (0x1000, 0x109F),
    (0x1780, 0x17FF),
    (0x19E0, 0x19FF),
    (0xA9E0, 0xA9FF),
    (0xAA60, 0xAA7F),
)
# Every script whose words run together: its text is searched by characters and their pairs.
UNSPACED: Ranges = CJK + SOUTHEAST
# Pictographs: misc technical (⌚), misc symbols and dingbats (☀ ❤ ✨), ⭐, and the emoji
# planes, without the skin-tone modifiers (U+1F3FB–F), which say nothing alone. Joiners and
# variation selectors are outside, so "👍🏽" and "❤️" are found by "👍" and "❤".
EMOJI: Ranges = (
    (0x2300, 0x23FF),
    (0x2600, 0x27BF),
    (0x2B00, 0x2BFF),
    (0x1F000, 0x1F3FA),
    (0x1F400, 0x1FAFF),
)
# Two of these letters are one flag ("🇯🇵" is J and P).
REGIONAL: Ranges = ((0x1F1E6, 0x1F1FF),)
# Latin letters and digits: ASCII, Latin-1's letters, Latin Extended-A and -B, and Latin
# Extended Additional (Vietnamese), the words an English field reads beside the scripts above.
LATIN: Ranges = (
    (0x30, 0x39),
    (0x41, 0x5A),
    (0x61, 0x7A),
    (0xC0, 0xD6),
    (0xD8, 0xF6),
    (0xF8, 0x24F),
    (0x1E00, 0x1EFF),
)
# Fullwidth digits and Latin letters ("Ｐｙｔｈｏｎ"), each this far above its ASCII form
# (as NFKC folds them).
FULLWIDTH: Ranges = ((0xFF10, 0xFF19), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A))
FULLWIDTH_SHIFT = 0xFEE0


def py(ranges: Ranges) -> str:
    """The ranges as a class of Python's regular expressions."""
    return "[" + "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]"


def pg(ranges: Ranges) -> str:
    """The ranges as a class of PostgreSQL's regular expressions: escapes, ASCII in the SQL."""
    return "[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]"
