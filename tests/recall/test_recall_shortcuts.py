"""Recall's shortcuts change no result: each brief read once a recall, the query encoded ahead."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._indexes import onnxrun
from brain._indexes.caches import Caches
from brain._indexes.catalog import Brief, Catalog
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.fulltext import Filters, FullText
from brain._indexes.postings import SparseIndex, StaleSparse
from brain._indexes.sparse import HashingSparse
from brain._indexes.vectors import VectorIndex
from brain._recall import ahead as ahead_module
from brain._recall.ahead import Ahead
from brain._recall.rank import CANDIDATES, Briefs, fetched, filtered
from tests.conftest import flushed_first

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

    def named_at_once(
        self: VectorIndex, vector: Any, k: int, allowed: set[str] | None = None
    ) -> list[tuple[str, float]]:
        return list(real_ranked(self, vector, k, allowed))

    def one_by_one(self: FullText, ids: Sequence[str]) -> dict[str, dict[str, str] | None]:
        t, out = self._t, {}
        for oid in ids:  # a search for each id, as before
            found = self.index.searcher().search(t.Query.term_query(self.schema, "id", oid), 1)
            doc = self.index.searcher().doc(found.hits[0][1]) if found.hits else None
            written = (
                {f: doc[f"written_{f}"][0].decode() for f in ("title", "body")} if doc else None
            )
            out[oid] = written
        return out

    real_ranked = VectorIndex.ranked
    monkeypatch.setattr(Briefs, "of", every_time)  # read afresh at each ask, as before
    monkeypatch.setattr(FullText, "stored_many", one_by_one)
    # encoded when searched, every hit named at once
    monkeypatch.setattr(Ahead, "start", lambda self, query, then=None: None)
    monkeypatch.setattr(VectorIndex, "ranked", named_at_once)
    assert _answers(talked) == fast
    monkeypatch.undo()
    monkeypatch.setattr(Caches, "search_ahead", False)  # the sparse terms searched here
    assert _answers(talked) == fast


def test_a_brief_is_read_once_a_recall(talked: Brain) -> None:
    asked: list[str] = []

    class Counting(Catalog):
        def briefs(self, ids: Sequence[str]) -> dict[str, Brief]:
            asked.extend(ids)
            return super().briefs(ids)

    catalog = Counting(talked._context.caches.catalog.path)
    some = catalog.object_ids()[:3]
    briefs = Briefs(catalog)
    first = briefs.of([*some, "no-such-id"])
    assert briefs.of(["no-such-id", some[0]]) == {some[0]: first[some[0]]}
    assert set(first) == set(some) and sorted(asked) == sorted([*some, "no-such-id"])
    catalog.close()


def test_a_recalls_texts_are_read_in_one_search(
    talked: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    fulltext = talked._context.caches.fulltext
    ids = [hit.id for hit in talked.recall("pottery workshop lake", k=5)]
    texts = fulltext.stored_many([ids[1], "no-such-id", *ids, ids[1]])
    assert list(texts) == [ids[1], "no-such-id", *[oid for oid in ids if oid != ids[1]]]
    assert texts["no-such-id"] is None and all(texts[oid] == fulltext.stored(oid) for oid in ids)
    assert "pottery" in str(texts[ids[0]]) or "lake" in str(texts[ids[0]])
    asked: list[list[str]] = []
    real = FullText.stored_many

    def counted(self: FullText, wanted: Sequence[str]) -> dict[str, dict[str, str] | None]:
        asked.append(list(wanted))
        return real(self, wanted)

    monkeypatch.setattr(FullText, "stored_many", counted)
    assert [hit.id for hit in talked.recall("pottery workshop lake", k=5)] == ids
    assert len(asked) == 1 and set(ids) <= set(asked[0])  # the best ones' texts at once


def test_the_full_text_is_reloaded_only_after_a_commit(talked: Brain) -> None:
    """Each recall asks whether the full text changed: it reloads only when a commit (of this
    process or another) wrote a new meta.json, and a removed index is not searched."""
    from brain._indexes.fulltext import TextDoc

    reloads: list[int] = []

    class Counted:
        def __init__(self, index: Any) -> None:
            self.index = index

        def reload(self) -> None:
            reloads.append(1)
            self.index.reload()

        def __getattr__(self, name: str) -> Any:
            return getattr(self.index, name)

    fulltext = talked._context.caches.fulltext
    fulltext.index = Counted(fulltext.index)
    talked.recall("pottery workshop")
    reloads.clear()
    for _ in range(3):
        assert talked.recall("pottery workshop")
    assert reloads == []  # nothing committed since
    other = FullText(fulltext.folder)  # another process writes a memory
    other.upsert(
        [
            TextDoc(
                "x1",
                "x1",
                talked.partition,
                "Inbox",
                "active",
                "normal",
                "memory",
                "Quinces",
                "Quinces ripen in October.",
            )
        ]
    )
    assert talked._context.caches.fulltext_whole() and reloads == [1]
    assert fulltext.stored("x1") == {"title": "Quinces", "body": "Quinces ripen in October."}
    assert talked._context.caches.fulltext_whole() and reloads == [1]
    shutil.rmtree(fulltext.folder)
    assert not talked._context.caches.fulltext_whole()


class _Rows:
    """A catalog of 200 memories for `filtered`: those named in `hidden` are superseded."""

    def __init__(self, hidden: set[str]) -> None:
        self.hidden = hidden
        self.asked: list[str] = []

    def held(self) -> None:  # not held in memory: each brief is asked for
        return None

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
    _wait_for(lambda: bool(calls))  # begun on the worker (else this thread would take it)
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


def _wait_for(done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not done():
        assert time.monotonic() < deadline, "the worker never ran it"
        time.sleep(0.001)


def test_a_forked_child_encodes_ahead_on_its_own_worker() -> None:
    threads: list[str] = []

    def encode(text: str) -> str:
        threads.append(threading.current_thread().name)
        return text.upper()

    ahead = Ahead(encode, model=None)
    ahead.start("warm")  # the parent's worker exists now
    assert ahead("warm") == "WARM"
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the forked child)
        threads.clear()
        ahead.start("otters")
        _wait_for(lambda: bool(threads))  # never, on the parent's worker (it is not here)
        os._exit(0 if ahead("otters") == "OTTERS" and threads[0].startswith("brain-") else 1)
    _pid, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_recall_that_would_wait_encodes_what_the_worker_has_not_begun() -> None:
    """While the worker runs the first model, the recall's thread encodes with the second
    rather than wait (the two side by side); what follows that encoding goes to the worker."""
    me = threading.current_thread().name
    ran: dict[str, str] = {}
    first_begun, first_may_end = threading.Event(), threading.Event()

    def first(text: str) -> str:
        ran["first"] = threading.current_thread().name
        first_begun.set()
        assert first_may_end.wait(10)
        return text.upper()

    def second(text: str) -> str:
        ran["second"] = threading.current_thread().name
        first_may_end.set()  # only once this thread took the second over may the first end
        return text[::-1]

    def then(encoded: str) -> str:
        ran["then"] = threading.current_thread().name
        return encoded + "!"

    one, two = Ahead(first, model=None), Ahead(second, model=None)
    one.start("otters")
    assert first_begun.wait(10)
    two.start("herons", then)
    assert one("otters") == "OTTERS"  # waited: took the second over meanwhile
    assert two("herons") == "snoreh" and two.followed() == "snoreh!"
    assert ran["first"].startswith("brain-") and ran["second"] == me
    assert ran["then"].startswith("brain-")

    # The worker busy elsewhere: a recall encodes its own text rather than wait its turn.
    busy = threading.Event()
    blocker = Ahead(lambda text: busy.wait(10) and text, model=None)
    blocker.start("later")
    own = Ahead(second, model=None)
    own.start("otters")
    assert own("otters") == "sretto" and ran["second"] == me
    busy.set()
    assert blocker("later") == "later"


def test_a_recall_goes_on_once_its_first_encoding_has_begun_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recall's thread lets the worker reach the model before it checks the vault, and
    goes on as the model's run begins: not at its end, nor after the longest wait."""
    monkeypatch.setattr(ahead_module, "BEGIN_WAIT", 60.0)
    entered, release = threading.Event(), threading.Event()

    class Model:  # an onnxruntime session's stand-in, inside onnxrun's wrapper
        def run(self, outputs: list[str], feeds: dict[str, Any]) -> list[str]:
            entered.set()
            assert release.wait(10)
            return ["OTTERS"]

    session = onnxrun.Session(Model())

    def encode(text: str) -> str:
        time.sleep(0.05)  # the tokenizer and the feeds, before the model
        return str(session.run(["weights"], {})[0])

    ahead = Ahead(encode, model=None)
    ahead.start("otters")
    assert entered.is_set()  # the run had begun when start returned
    assert not release.is_set()  # and had not ended: start did not wait for the encoding
    release.set()
    assert ahead("otters") == "OTTERS"

    # The worker busy with another encoding: nothing to wait for, start returns at once.
    busy = threading.Event()
    blocker = Ahead(lambda text: busy.wait(10) and text, model=None)
    monkeypatch.setattr(ahead_module, "BEGIN_WAIT", 0.0)
    blocker.start("later")
    monkeypatch.setattr(ahead_module, "BEGIN_WAIT", 60.0)
    own = Ahead(str.upper, model=None)
    own.start("otters")  # would wait 60 s for the blocker to end, if it waited
    assert not busy.is_set()
    busy.set()
    assert own("otters") == "OTTERS" and blocker("later") == "later"


def test_a_forked_child_waits_for_its_own_first_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's encodings under way are not the child's: its first one is let begin."""
    monkeypatch.setattr(ahead_module, "BEGIN_WAIT", 0.0)
    busy = threading.Event()
    blocker = Ahead(lambda text: busy.wait(10) and text, model=None)
    blocker.start("later")  # the parent's worker is busy as the child is forked
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the forked child)
        ahead_module.BEGIN_WAIT = 60.0
        entered = threading.Event()

        class Model:
            def run(self, outputs: list[str], feeds: dict[str, Any]) -> list[str]:
                entered.set()
                return ["OTTERS"]

        session = onnxrun.Session(Model())

        def encode(text: str) -> str:
            time.sleep(0.05)
            return str(session.run(["weights"], {})[0])

        own = Ahead(encode, model=None)
        own.start("otters")
        os._exit(0 if entered.is_set() and own("otters") == "OTTERS" else 1)
    _pid, status = os.waitpid(child, 0)
    busy.set()
    assert blocker("later") == "later"
    assert os.waitstatus_to_exitcode(status) == 0


def test_an_encoding_taken_over_that_fails_is_made_again_when_asked_for() -> None:
    busy = threading.Event()
    blocker = Ahead(lambda text: busy.wait(10) and text, model=None)
    blocker.start("later")
    tries: list[str] = []

    def broken(text: str) -> str:
        tries.append(threading.current_thread().name)
        raise ValueError("the model failed")

    failing = Ahead(broken, model=None)
    failing.start("otters")
    with pytest.raises(ValueError, match="the model failed"):
        failing("otters")
    me = threading.current_thread().name
    assert tries == [me, me]  # taken over, failed, made again where the error is raised
    busy.set()
    assert blocker("later") == "later"


def test_the_query_is_encoded_ahead_before_the_vault_is_caught_up_and_flushed(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Encoding the query needs nothing of the vault: its models begin before this thread
    catches up with hand edits and flushes what is pending, so those overlap it too."""
    brain.remember("The otters returned to the weir in March", node="Nature")
    steps: list[str] = []
    real_start, real_catch_up, real_flush = (
        Ahead.start,
        brain._context.catch_up,
        brain._context.flush,
    )

    def start(self: Ahead[Any], query: str, then: Any = None) -> None:
        steps.append("encode")
        real_start(self, query, then)

    def catch_up(**kwargs: Any) -> Any:
        steps.append("catch up")
        return real_catch_up(**kwargs)

    def flush(**kwargs: Any) -> Any:
        steps.append("flush")
        return real_flush(**kwargs)

    monkeypatch.setattr(Ahead, "start", start)
    monkeypatch.setattr(brain._context, "catch_up", catch_up)
    monkeypatch.setattr(brain._context, "flush", flush)
    hits = brain.recall("when did the otters come back", mode="hybrid")
    assert steps[0] == "encode"  # the vector retriever's model (this vault has no sparse one)
    assert steps.index("catch up") > 0 and steps.index("flush") > 0
    assert hits and "otters" in hits[0].snippet


def test_a_vector_search_names_only_the_hits_that_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """faiss gives numbers; each is named by a lookup in the ids table, and recall reads the
    best 50 and a quarter of a search 200 deep unless too few pass its filters."""
    import numpy as np

    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((300, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    index = VectorIndex(tmp_path / "vectors", 16, "hashing")
    index.upsert([f"m{i:03d}" for i in range(300)], matrix)
    named: list[int] = []
    real_names = index._names

    def names(fids: Sequence[int]) -> dict[int, str]:
        named.extend(fids)
        return real_names(fids)

    monkeypatch.setattr(index, "_names", names)
    everything = index.search(matrix[0], 200)
    assert len(named) == 200 and everything[0][0] == "m000"
    named.clear()
    filters = Filters(partition="main")
    everyone = _Rows(set())
    kept = filtered(Briefs(everyone), lambda n, allowed: index.ranked(matrix[0], n), 50, filters)  # type: ignore[arg-type]
    assert kept == everything[:50]
    assert len(named) == 62  # 50 and a quarter: the other 138 are never named
    named.clear()
    hidden = {oid for oid, _ in everything[:30]}
    some = _Rows(hidden)
    kept = filtered(Briefs(some), lambda n, allowed: index.ranked(matrix[0], n), 50, filters)  # type: ignore[arg-type]
    assert kept == everything[30:80]  # too few passed: the rest read and named, as before
    assert len(named) == 200


def _sparse_searches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, bool]]:
    """Each search of the sparse index: the thread it ran on, its depth, whether unfiltered."""
    searches: list[tuple[str, int, bool]] = []
    real = SparseIndex.search

    def search(self: SparseIndex, query: Any, k: int, allowed: set[str] | None = None) -> Any:
        searches.append((threading.current_thread().name, k, allowed is None))
        return real(self, query, k, allowed)

    monkeypatch.setattr(SparseIndex, "search", search)
    return searches


def test_the_sparse_terms_first_search_is_made_on_the_worker(
    talked: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the terms are encoded, the worker searches with them while this thread searches
    the vectors: the unfiltered search `filtered` asks for first, made once."""
    query = "the lopsided bowl from the workshop"
    before = talked.recall(query, k=8)
    flushed_first(talked, monkeypatch)
    searches = _sparse_searches(monkeypatch)
    assert talked.recall(query, k=8) == before
    depth = fetched(max(8 * 5, CANDIDATES))
    ahead = [s for s in searches if s[1] == depth and s[2]]
    assert len(ahead) == 1 and ahead[0][0].startswith("brain-encode")
    me = threading.current_thread().name
    assert all(thread == me for thread, _k, _all in searches if (_k, _all) != (depth, True))


def test_nothing_is_searched_ahead_before_the_indexes_are_caught_up(
    talked: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain._recall.sparse import SparseInContext

    talked._context.flush(vectors=True)
    filters = Filters(partition=talked.partition)
    retriever = SparseInContext(talked._context.caches, HashingSparse())
    searches = _sparse_searches(monkeypatch)
    current = threading.Event()  # not set: the vault was not caught up when encoded
    retriever.start("pottery workshop", CANDIDATES, current)
    found = retriever.search("pottery workshop", CANDIDATES, filters)
    assert found
    assert [thread for thread, _k, _all in searches] == [threading.current_thread().name]
    searches.clear()
    current.set()  # caught up first: searched ahead, the same
    retriever.start("pottery workshop", CANDIDATES, current)
    assert retriever.search("pottery workshop", CANDIDATES, filters) == found
    assert [thread[:12] for thread, _k, _all in searches] == ["brain-encode"]


def test_a_failed_search_ahead_is_made_again_on_the_recalls_thread(
    talked: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "the lopsided bowl from the workshop"
    before = talked.recall(query)
    flushed_first(talked, monkeypatch)
    real = SparseIndex.search
    threads: list[str] = []

    def search(self: SparseIndex, terms: Any, k: int, allowed: set[str] | None = None) -> Any:
        threads.append(threading.current_thread().name)
        if threading.current_thread().name.startswith("brain-encode"):
            raise StaleSparse("the sparse index changed under the worker")
        return real(self, terms, k, allowed)

    monkeypatch.setattr(SparseIndex, "search", search)
    assert talked.recall(query) == before
    assert threads[0].startswith("brain-encode") and threading.current_thread().name in threads
