"""Full-text recall: updated on every write, caught up with hand edits, rebuilt by reindex."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock


def test_recall_finds_a_memory_with_its_date_and_place(brain: Brain) -> None:
    note = brain.remember("We moved the launch to March")
    hits = brain.recall("when is the launch")
    assert hits[0].id == note.id
    hit = hits[0]
    assert hit.created == "2026-12-02T10:31:00Z"
    assert hit.path == note.path and hit.snippet == "We moved the launch to March"
    assert hit.source == {"via": "cli", "session": note.source["session"]} and hit.score > 0


def test_recall_returns_a_handful(brain: Brain) -> None:
    for n in range(12):
        brain.remember(f"Apples number {n} are red", title=f"Apple {n}")
    assert len(brain.recall("red apples")) == 5
    assert len(brain.recall("red apples", k=8)) == 8


def test_every_write_reaches_the_caches_at_once(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    note = brain.remember("The wifi password is hunter2", title="Wifi")
    # The catalog knows it and its text waits in the durable queue for one batched commit...
    assert brain._context.caches.catalog.get(note.id) is not None
    assert brain._context.caches.text_pending()
    # ...which any reader, in any process, applies before it searches.
    other = open_vault(vault, clock=clock)
    assert [h.id for h in other.recall("hunter2")] == [note.id]
    assert not other._context.caches.text_pending()
    brain.forget(note.id)
    assert other.recall("hunter2") == []
    other.close()


def test_the_text_queue_is_flushed_in_batches(brain: Brain) -> None:
    brain._context.caches.MAX_QUEUE = 10  # type: ignore[misc]
    for n in range(25):
        brain.remember(f"batch memory {n}")
    assert brain._context.caches.catalog.pending("text_queue") < 10
    assert len(brain.recall("batch memory", k=30)) == 25


def test_hand_edits_are_caught_up_before_the_next_recall(brain: Brain, vault: Path) -> None:
    note = brain.remember("Original words here", title="Editable")
    path = vault / note.path
    path.write_text(path.read_text().replace("Original words here", "Zanzibar mangoes"))
    hits = brain.recall("zanzibar")
    assert [h.id for h in hits] == [note.id]
    assert brain.recall("original") == []
    path.unlink()
    assert brain.recall("zanzibar") == []


def test_deleting_the_caches_and_reindexing_gives_the_same_results(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    for text in ("Pasta needs salted water", "Risotto needs patience", "Salt the water well"):
        brain.remember(text)
    queries = ("salted water", "patience", "risotto water salt")
    before = [[(h.id, round(h.score, 4)) for h in brain.recall(q)] for q in queries]
    brain.close()
    shutil.rmtree(vault / ".brain")
    again = open_vault(vault, clock=clock)
    assert again.reindex() == 9  # 3 memories + 5 singletons + Graph.md
    after = [[(h.id, round(h.score, 4)) for h in again.recall(q)] for q in queries]
    again.close()
    assert before == after


def test_a_recall_from_a_fresh_cache_catches_up_by_itself(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    note = brain.remember("Kiwis come from New Zealand")
    brain.close()
    shutil.rmtree(vault / ".brain")
    fresh = open_vault(vault, clock=clock)
    assert fresh.recall("kiwis")[0].id == note.id
    fresh.close()


def test_node_filter_and_list(brain: Brain) -> None:
    a = brain.remember("Tomatoes like sun", node="Knowledge/Domains/Garden")
    brain.remember("Tomatoes in sauce", node="Knowledge/Domains/Cooking")
    assert [h.id for h in brain.recall("tomatoes", node="Knowledge/Domains/Garden")] == [a.id]
    listed = brain.list(node="Knowledge/Domains")
    assert len(listed) == 2 and all(r.node.startswith("Knowledge/Domains/") for r in listed)
    assert len(brain.list(kind="singleton")) == 5


def test_doctor_reports_unknown_changed_and_missing_files(brain: Brain, vault: Path) -> None:
    brain.remember("one", title="One")
    two = brain.remember("two", title="Two")
    assert brain.doctor().ok
    (vault / "main/Knowledge/Inbox/New.md").write_text(
        "---\nid: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\n---\nx\n"
    )
    (vault / two.path).write_text((vault / two.path).read_text() + "more\n")
    (vault / "main/Knowledge/Inbox/One.md").unlink()
    report = brain.doctor()
    assert report.unknown == ("main/Knowledge/Inbox/New.md",)
    assert report.changed == (two.path,)
    assert report.missing == ("main/Knowledge/Inbox/One.md",)
    assert not report.ok


def test_text_hits_filtered_on_the_catalog_are_those_of_the_filtered_query(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    """Over a big index recall asks tantivy without its filter clauses (they cost more than
    the query there) and filters the hits on the catalog; when too few pass, it asks again
    with them. Either way the hits and scores are those the filtered query gives."""
    from brain import _partitions as partitions
    from brain._indexes.fulltext import Filters
    from brain._recall.rank import TextRetriever

    partitions.create(brain._context, "work")
    work = open_vault(vault, clock=clock, partition="work")
    with work.bulk():  # the other partition holds every one of the bare query's best hits
        for n in range(260):
            work.remember(f"Otter otter otter count {n}", title=f"Otters {n}")
    work.close()
    mine = brain.remember("An otter was seen by the river bank", title="River")
    old = brain.remember("Otters nest under the bridge", title="Bridge")
    new = brain.correct(old.id, "Otters nest under the old mill bridge")
    brain.remember("A heron by the otter holt", title="Holt", node="Knowledge/Birds")
    brain._context.flush()
    fulltext, catalog = brain._context.caches.fulltext, brain._context.caches.catalog
    cases = [
        Filters(partition="main"),  # too few pass: asked again with the clauses
        Filters(partition="work"),  # enough pass among the bare hits
        Filters(partition="main", exclude_status=()),  # the superseded version too
        Filters(partition="main", node="Knowledge/Birds"),  # narrow: its clauses at once
        Filters(partition="main", visibility=("private",)),  # none
    ]
    for filters in cases:
        for k in (3, 50):
            expected = fulltext.search("otter", k, filters)
            for above in (0, 10**9):  # hits filtered on the catalog; the clauses in the query
                retriever = TextRetriever(fulltext, catalog, filter_above=above)
                assert retriever.search("otter", k, filters) == expected
    main = TextRetriever(fulltext, catalog, filter_above=0).search(
        "otter", 10, Filters(partition="main")
    )
    assert {mine.id, new.id} <= {oid for oid, _ in main} and old.id not in dict(main)
    recalled = [hit.id for hit in brain.recall("otter", mode="text", k=10)]
    assert {mine.id, new.id} <= set(recalled) and old.id not in recalled
    assert all(catalog.get(oid).partition == "main" for oid in recalled)  # type: ignore[union-attr]


def test_words_weighed_among_every_memory_score_as_bm25_does(brain: Brain) -> None:
    """A model's words weigh among what it may see (FullText.search `weighed_in`): each
    term's clause boosted by that idf over tantivy's own. Weighed among every memory, the
    hits and scores are tantivy's BM25 to the float, English words and glyphs alike."""
    from brain._indexes.fulltext import Filters

    for text in (
        "The kayak paddle is blue and the river runs fast",
        "Kayak trips on the lake in summer",
        "River stones and paddle boats 🚣",
        "Kayaking notes: paddle technique, 桜 by the lake",
        "A blue boat on a blue lake",
    ):
        brain.remember(text)
    brain.forget(brain.remember("A paddle forgotten on the lake").id)  # a deleted document
    brain._context.flush()
    fulltext, every = brain._context.caches.fulltext, Filters(exclude_status=())
    for query in ("kayak paddle", "blue lake summer", "river 🚣", "桜 lake", "kayaks paddled"):
        plain = fulltext.search(query, 20, Filters(partition="main"))
        weighed = fulltext.search(query, 20, Filters(partition="main"), weighed_in=every)
        assert [oid for oid, _ in weighed] == [oid for oid, _ in plain], query
        assert [s for _, s in weighed] == pytest.approx([s for _, s in plain], rel=1e-6), query


def test_a_structural_note_not_filled_in_is_no_answer(brain: Brain, vault: Path) -> None:
    # A new vault's Goals, Biography, Protocols... hold only their purpose line. Its words (and
    # the note's title) matched questions about the person, so a first recall answered with
    # empty notes; the purpose line is also no snippet.
    note = brain.remember("Working towards a calmer week: no meetings on Fridays")
    hits = brain.recall("what is the person working towards, their goals", k=10)
    assert note.id in [h.id for h in hits]
    assert all(h.title not in ("Goals", "Biography", "Preferences") for h in hits)
    goals = vault / "main" / "Master" / "Goals.md"
    goals.write_text(goals.read_text() + "\n- Run a marathon in 2027\n")
    hits = brain.recall("what is the person working towards, their goals", k=10)
    filled = next(h for h in hits if h.title == "Goals")
    assert filled.snippet == "- Run a marathon in 2027"
    assert not any(h.title in ("Biography", "Preferences") for h in hits)
