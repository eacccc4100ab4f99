"""Recall's shortcuts change no result: each brief read once a recall, the query encoded ahead."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from brain.brain import Brain, open_vault
from brain.clock import FixedClock
from brain.indexes.catalog import Brief, Catalog
from brain.indexes.embedder import HashingEmbedder
from brain.indexes.fulltext import Filters
from brain.indexes.sparse import HashingSparse
from brain.recall.ahead import Ahead
from brain.recall.rank import Briefs, filtered

TALKS = {
    "Knowledge/Talks": [
        "Caroline: I went to the pottery workshop downtown.",
        "Melanie: Caroline, how was it?",
        "Caroline: Yes, last Tuesday! I made a lopsided bowl.",
        "Melanie: Next time bring it to the lake.",
    ],
    "Knowledge/Trips": [
        "Ana: The train to Lisbon was delayed by an hour.",
        "Ben: Then we missed the museum, sadly.",
        "Ana: Next year we book the train earlier.",
    ],
}
ASKED = [
    ("When did Caroline go to the pottery workshop?", "hybrid"),
    ("What did Melanie say about the lake?", "hybrid"),
    ("train delayed Lisbon", "hybrid"),
    ("museum", "text"),
    ("the bowl she made", "vector"),
    ("train museum", "sparse"),
]


@pytest.fixture
def talked(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    """Two conversations in two nodes (turns a millisecond apart, so neighbours lend), a
    corrected note and a note on its own."""
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    for node, turns in TALKS.items():
        for turn in turns:
            clock.set(clock.now() + timedelta(milliseconds=1))
            b.remember(turn, node=node)
        clock.set(clock.now() + timedelta(hours=2))
    old = b.remember("The lake trip is in May", title="Lake trip")
    b.correct(old.id, "The lake trip is in June")
    b.remember("Caroline paints the lake at sunrise", title="Caroline")
    yield b
    b.close()


def _answers(brain: Brain) -> list[Any]:
    out = []
    for query, mode in ASKED:
        for hit in brain.recall(query, k=8, mode=mode, explain=True):
            out.append((query, hit.id, hit.score, hit.snippet, hit.flags, hit.explain))
    return out


def test_the_shortcuts_change_no_hit_nor_score(
    talked: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _answers(talked)
    assert len({row[0] for row in fast}) == len(ASKED)  # every query found something

    def every_time(self: Briefs, ids: Sequence[str]) -> dict[str, Brief]:
        return self.catalog.briefs(list(dict.fromkeys(ids)))

    monkeypatch.setattr(Briefs, "of", every_time)  # read afresh at each ask, as before
    monkeypatch.setattr(Ahead, "start", lambda self, query: None)  # encoded when searched
    assert _answers(talked) == fast


def test_a_brief_is_read_once_a_recall(talked: Brain) -> None:
    asked: list[str] = []

    class Counting(Catalog):
        def briefs(self, ids: Sequence[str]) -> dict[str, Brief]:
            asked.extend(ids)
            return super().briefs(ids)

    catalog = Counting(talked.caches.catalog.path)
    some = catalog.object_ids()[:3]
    briefs = Briefs(catalog)
    first = briefs.of([*some, "no-such-id"])
    assert briefs.of(["no-such-id", some[0]]) == {some[0]: first[some[0]]}
    assert set(first) == set(some) and sorted(asked) == sorted([*some, "no-such-id"])
    catalog.close()


class _Rows:
    """A catalog of 200 memories for `filtered`: those named in `hidden` are superseded."""

    def __init__(self, hidden: set[str]) -> None:
        self.hidden = hidden
        self.asked: list[str] = []

    def briefs(self, ids: Sequence[str]) -> dict[str, Brief]:
        self.asked.extend(ids)
        status = {oid: "superseded" if oid in self.hidden else "active" for oid in ids}
        return {
            oid: Brief(oid, "main", "Inbox", status[oid], "normal", "memory", "", None)
            for oid in ids
        }


def test_filtered_reads_the_rows_of_the_best_few_unless_too_few_pass() -> None:
    found = [(f"m{i:03}", 1.0 - i / 1000) for i in range(200)]
    filters = Filters(partition="main")

    everyone = _Rows(set())
    kept = filtered(Briefs(everyone), lambda n, _allowed: found[:n], 50, filters)  # type: ignore[arg-type]
    assert kept == found[:50]
    assert everyone.asked == [oid for oid, _ in found[:62]]  # 50 and a quarter, not all 200

    hidden = {oid for oid, _ in found[:40:2]} | {oid for oid, _ in found[100:]}
    some = _Rows(hidden)
    kept = filtered(Briefs(some), lambda n, _allowed: found[:n], 50, filters)  # type: ignore[arg-type]
    assert kept == [(oid, s) for oid, s in found if oid not in hidden][:50]  # as reading all
    assert some.asked == [oid for oid, _ in found]


def test_the_encoding_begun_ahead_is_taken_for_the_same_text() -> None:
    calls: list[tuple[str, str]] = []

    def encode(text: str) -> str:
        calls.append((text, threading.current_thread().name))
        return text.upper()

    ahead = Ahead(encode, model=None)
    ahead.start("otters")
    assert ahead("otters") == "OTTERS"
    assert ahead("otters") == "OTTERS"  # the same text again (a named time's search): kept
    me = threading.current_thread().name
    assert calls == [("otters", calls[0][1])] and calls[0][1] != me
    ahead.start("otters")
    assert ahead("herons") == "HERONS"  # another text (a name taken out): made here
    assert ("herons", me) in calls

    class Unloaded:
        loaded = False

    calls.clear()
    later = Ahead(encode, model=Unloaded())
    later.start("otters")  # a model that is not loaded yet loads on the caller's thread
    assert later("otters") == "OTTERS" and calls == [("otters", me)]


def test_a_forked_child_encodes_ahead_on_its_own_worker() -> None:
    ahead = Ahead(str.upper, model=None)
    ahead.start("warm")  # the parent's worker exists now
    assert ahead("warm") == "WARM"
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the forked child)
        ahead.start("otters")
        os._exit(0 if ahead("otters") == "OTTERS" else 1)
    _pid, status = os.waitpid(child, 0)  # a hang here: the child waited on the parent's worker
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_query_is_encoded_ahead_before_the_vault_is_caught_up_and_flushed(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Encoding the query needs nothing of the vault: its models begin before this thread
    catches up with hand edits and flushes what is pending, so those overlap it too."""
    brain.remember("The otters returned to the weir in March", node="Nature")
    steps: list[str] = []
    real_start, real_catch_up, real_flush = Ahead.start, brain.catch_up, brain.flush

    def start(self: Ahead[Any], query: str) -> None:
        steps.append("encode")
        real_start(self, query)

    def catch_up(**kwargs: Any) -> Any:
        steps.append("catch up")
        return real_catch_up(**kwargs)

    def flush(**kwargs: Any) -> Any:
        steps.append("flush")
        return real_flush(**kwargs)

    monkeypatch.setattr(Ahead, "start", start)
    monkeypatch.setattr(brain, "catch_up", catch_up)
    monkeypatch.setattr(brain, "flush", flush)
    hits = brain.recall("when did the otters come back", mode="hybrid")
    assert steps[0] == "encode"  # the vector retriever's model (this vault has no sparse one)
    assert steps.index("catch up") > 0 and steps.index("flush") > 0
    assert hits and "otters" in hits[0].snippet
