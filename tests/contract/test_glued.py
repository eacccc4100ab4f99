"""English glued to CJK or Thai, fullwidth Latin, the unspaced scripts of South-East Asia and
flags, found as written (brain/_indexes/glued.py, glyphs.py), on both storages."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes.fulltext import Filters
from tests.contract.conftest import Opener
from tests.contract.test_glyphs import titles

NOTES = {
    "Data analysis": "Pythonでデータ分析をしました。",
    "Script": "这是用Python写的脚本。",
    "Hooks": "Reactのフックを勉強した。",
    "Book": "Ｐｙｔｈｏｎの本を買った。",
    "Snake": "A snake in the garden this morning.",
    "Thai": "ฉันชอบแมวมากที่สุด",
    "Lao": "ຂ້ອຍມັກແມວຫຼາຍ",
    "Khmer": "ខ្ញុំចូលចិត្តឆ្មាណាស់",
    "Myanmar": "ကျွန်တော်ကြောင်ကိုချစ်တယ်",
    "Jamaica": "Reggae night 🇯🇲",
    "Poland": "Pierogi at noon 🇵🇱",
    "Japan": "Sushi in Osaka 🇯🇵",
}


@pytest.fixture
def seeded(storage: Opener, vault: Path, clock: FixedClock) -> Brain:
    """The storage's Brain of a vault holding the notes above."""
    seeding = open_vault(vault, clock=clock)
    try:
        for title, text in NOTES.items():
            seeding.remember(text, title=title)
    finally:
        seeding.close()
    return storage()


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("python", {"Data analysis", "Script", "Book"}),  # glued on either side, fullwidth
        ("react", {"Hooks"}),
        ("Pythonで", {"Data analysis", "Script", "Book"}),  # a query glued the same way
        ("Ｐｙｔｈｏｎ", {"Data analysis", "Script", "Book"}),  # a fullwidth query
    ],
)
def test_english_glued_to_cjk_or_fullwidth_is_found_by_its_word(
    seeded: Brain, query: str, found: set[str]
) -> None:
    assert set(titles(seeded, query)) == found


@pytest.mark.parametrize(
    ("query", "title"),
    [("แมว", "Thai"), ("ແມວ", "Lao"), ("ឆ្មា", "Khmer"), ("ကြောင်", "Myanmar")],
)
def test_a_word_inside_an_unspaced_southeast_asian_sentence_finds_its_note(
    seeded: Brain, query: str, title: str
) -> None:
    assert titles(seeded, query) == [title]


def test_a_flag_is_one_term(seeded: Brain) -> None:
    # Japan's flag is J and P: the Jamaican (J, M) and Polish (P, L) flags hold one each.
    assert titles(seeded, "🇯🇵") == ["Japan"]
    assert titles(seeded, "🇩🇪") == []


def test_a_glued_word_is_held_as_the_full_text_finds_it(seeded: Brain) -> None:
    """Relevance and the term counts read the text as the full text indexes it."""
    hits = seeded.recall("python", k=5, mode="text")
    assert {h.title for h in hits if h.band == "strong"} == {"Data analysis", "Script", "Book"}
    text = seeded._context.caches.fulltext
    assert text.doc_freqs(["python"])[1] == {"python": 3}
    assert text.share("Ｐｙｔｈｏｎ", Filters()) == 3 / len(text)  # the template's notes too


def test_a_glued_note_shows_as_written(seeded: Brain) -> None:
    hit = seeded.recall("react", k=1, mode="text")[0]
    stored = seeded._context.caches.fulltext.stored(hit.id)
    assert stored is not None and stored["body"].strip() == NOTES["Hooks"]
