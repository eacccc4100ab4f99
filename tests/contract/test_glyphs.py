"""CJK characters and emoji found as written (brain/_indexes/glyphs.py), on both storages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes.fulltext import Filters
from tests.contract.conftest import Opener

TOKYO = "東京の天気は今日は晴れです。桜がきれいでした。"
KAYAK = "Kayaking on the lake at dawn, the water calm 🚣."
SEOUL = "서울에서 김치찌개를 먹었다."


@pytest.fixture
def seeded(storage: Opener, vault: Path, clock: FixedClock) -> Brain:
    """The storage's Brain of a vault holding English, Japanese, Korean and emoji notes."""
    seeding = open_vault(vault, clock=clock)
    try:
        seeding.remember(KAYAK, title="Kayaking")
        seeding.remember(TOKYO, title="Tokyo diary")
        seeding.remember(SEOUL, title="Seoul lunch")
        seeding.remember("Birthday party at the lake house 🎉🎂.", title="Party")
        seeding.remember("The lake froze early this winter; no boats.", title="Winter lake")
    finally:
        seeding.close()
    return storage()


def titles(brain: Brain, query: str) -> list[str]:
    """The titles the full-text retriever finds, best first (recall itself adds the hits'
    neighbours: the notes written beside them)."""
    brain._context.flush(vectors=False)  # the writes queued for the full text
    caches = brain._context.caches
    hits = caches.fulltext.search(query, 10, Filters())
    rows = caches.catalog.get_many([oid for oid, _ in hits])
    return [rows[oid].title for oid, _ in hits]


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("🚣", "Kayaking"),  # an emoji
        ("桜", "Tokyo diary"),  # one kanji inside a run of them
        ("れ", "Tokyo diary"),  # one kana
        ("東京", "Tokyo diary"),  # a word
        ("今日は晴れ", "Tokyo diary"),  # a phrase
        ("서울", "Seoul lunch"),  # hangul
        ("🎂", "Party"),  # the second of two emoji side by side
        ("the 🚣", "Kayaking"),  # a stopword beside a glyph asks for nothing
    ],
)
def test_a_cjk_character_word_or_emoji_finds_its_note_alone(
    seeded: Brain, query: str, title: str
) -> None:
    assert titles(seeded, query) == [title]


@pytest.mark.parametrize("query", ["🚣", "桜"])
def test_the_repro_of_the_probe_is_answered_first_by_the_whole_recall(
    seeded: Brain, query: str
) -> None:
    hits = seeded.recall(query, k=5)
    assert hits[0].title == ("Kayaking" if query == "🚣" else "Tokyo diary")
    assert hits[0].band == "strong"


def test_unrelated_cjk_matches_nothing(seeded: Brain) -> None:
    # Neither a character no note holds, nor a word whose characters each occur apart
    # ("天東": both in the Tokyo note, never side by side), nor a flag of no note.
    for query in ("猫", "天東", "北京", "🇯🇵"):
        assert titles(seeded, query) == [], query
    assert seeded.recall("猫") == []  # "nothing relevant"


def test_english_and_cjk_in_one_query_find_both(seeded: Brain) -> None:
    assert set(titles(seeded, "kayaking 桜")) == {"Kayaking", "Tokyo diary"}
    assert titles(seeded, "Tokyo diary 桜")[0] == "Tokyo diary"  # title words and a glyph


def test_an_english_query_is_scored_by_the_english_fields_alone(seeded: Brain) -> None:
    """The glyphs change no English answer: the retriever's hits and scores are exactly the
    English fields' (the query the full text made before glyphs, per storage)."""
    seeded._context.flush(vectors=False)
    text = seeded._context.caches.fulltext
    for query in ("lake", "kayaking on the lake", "party lake winter boats"):
        assert text.search(query, 10, Filters()) == _english_only(text, query), query


def _english_only(text: Any, query: str) -> list[tuple[str, float]]:
    from brain._hosted.search import PgFullText, or_query

    if isinstance(text, PgFullText):
        rows = text.db.execute(
            "SELECT t.id, ts_rank_cd(t.tsv, q, 1) AS score FROM texts t "
            "JOIN objects o ON o.id = t.id, to_tsquery('english', ?) q "
            "WHERE t.tsv @@ q AND o.status <> 'superseded' ORDER BY score DESC, t.id LIMIT 10",
            (or_query(query),),
        )
        return [(str(oid), float(score)) for oid, score in rows]
    import tantivy as t

    from brain._terms import content_words

    english = text.index.parse_query(
        " ".join(content_words(query)), ["title", "body"], field_boosts={"title": 1.5}
    )
    superseded = t.Query.term_query(text.schema, "status", "superseded")
    both = t.Query.boolean_query([(t.Occur.Must, english), (t.Occur.MustNot, superseded)])
    searcher = text.index.searcher()
    hits = searcher.search(both, 10).hits
    return [(str(searcher.doc(a)["id"][0]), float(s)) for s, a in hits]


def test_a_forgotten_note_is_not_found_by_its_glyphs(seeded: Brain) -> None:
    tokyo = seeded.recall("桜", mode="text")[0]
    seeded.forget(tokyo.id)
    assert titles(seeded, "桜") == [] and titles(seeded, "東京") == []
    seeded.reindex(embed=False)
    assert titles(seeded, "桜") == [] and titles(seeded, "🚣") == ["Kayaking"]
    assert seeded._context.caches.fulltext.doc_freqs(["桜", "🚣"])[1] == {"桜": 0, "🚣": 1}
