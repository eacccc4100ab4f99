"""Neighbour context: a reply that shares no word with the question is found through the turns
around it, in full text and in vectors; --explain says so; the bench compares runs fairly."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.compare import paired_bootstrap
from bench.locomo import _gold_key
from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._indexes.fulltext import Filters
from brain._recall.neighbours import Neighbourhood, blend_scores, blend_vectors, order_key
from brain._recall.rank import TextRetriever, VectorRetriever
from brain.testing import T0

_register()

TALK = [
    "Maya: Did you finally get to the pottery workshop downtown?",
    "Leo: Yes, last Tuesday! I made a lopsided bowl and loved it.",
]
ELSEWHERE = [
    "Ana: The train to Lisbon was delayed by an hour.",
    "Ben: Then we missed the museum, sadly.",
    "Ana: Next year we should book earlier.",
]
QUERY = "When was the pottery workshop?"


def _converse(brain: Brain, clock: FixedClock) -> dict[str, str]:
    """Two conversations at different times, each turn a millisecond after the last."""
    ids = {}
    for start, turns in ((T0, TALK), (T0 + timedelta(days=3), ELSEWHERE)):
        for i, text in enumerate(turns):
            clock.set(start + timedelta(milliseconds=i))
            ids[text] = brain.remember(text).id
    return ids


def test_write_order_of_ids_and_chunks() -> None:
    assert sorted(["01B#10", "01B#2", "01A", "01B"], key=order_key) == [
        "01A",
        "01B",
        "01B#2",
        "01B#10",
    ]


def test_blend_lifts_neighbours_and_brings_them_in() -> None:
    around = {"a": ("b",), "b": ("a", "c"), "c": ("b",)}
    blend = blend_scores([("b", 4.0)], around, 0.5)
    assert dict(blend.scores) == {"b": 4.0, "a": 2.0, "c": 2.0}
    assert blend.own == {"b": 4.0}


def test_blend_vectors_mixes_each_vector_with_its_neighbours_mean(tmp_path: Path) -> None:
    """Each found memory's vector plus its neighbours' mean (renormalised) against the query;
    a memory without a stored vector is left out, and lends nothing as a neighbour."""
    import numpy as np

    from brain._indexes.vectors import VectorIndex

    rows = np.eye(4, dtype=np.float32)
    index = VectorIndex(tmp_path / "v", 4, "hashing")
    index.upsert(["a", "b", "c", "d"], rows)
    around = {"a": ("b", "c", "gone"), "b": ("a",), "c": (), "gone": ("a",)}
    query = np.array([0.1, 0.2, 0.3, 0.9], dtype=np.float32)
    blend = blend_vectors(query, [("a", 0.5), ("gone", 0.4), ("d", 0.3)], around, index, 1.0)

    def mixed(own: np.ndarray, near: list[np.ndarray]) -> float:
        v = own + (sum(near) / len(near) if near else 0)
        return float(np.dot(v / np.linalg.norm(v), query))

    want = {
        "a": mixed(rows[0], [rows[1], rows[2]]),  # "gone" holds no vector: not in the mean
        "b": mixed(rows[1], [rows[0]]),  # brought in as a's neighbour
        "c": mixed(rows[2], []),
        "d": mixed(rows[3], []),
    }
    assert [oid for oid, _ in blend.scores] == sorted(want, key=lambda oid: -want[oid])
    assert dict(blend.scores) == pytest.approx(want)
    assert blend.own == pytest.approx({oid: float(query[i]) for i, oid in enumerate("abcd")})
    assert index.stacked(["d", "gone", "a"])[0] == ["d", "a"]  # in order, the absent left out
    index.close()


def test_full_text_finds_the_reply_through_its_neighbour(brain: Brain, clock: FixedClock) -> None:
    ids = _converse(brain, clock)
    reply = ids[TALK[1]]
    everywhere = Filters(partition=brain.partition)
    brain._context.flush()
    plain = TextRetriever(brain._context.caches.fulltext).search(QUERY, 10, everywhere)
    assert reply not in [oid for oid, _ in plain]  # no word of the question in the reply
    found = [h.id for h in brain.recall(QUERY, mode="text", k=5)]
    # The reply leads the question it borrowed from: one asks, the other tells (answers.py).
    assert found[:2] == [reply, ids[TALK[0]]]
    assert not set(found) & {ids[t] for t in ELSEWHERE}  # another moment lends nothing


def test_vectors_find_the_reply_through_its_neighbour(brain: Brain, clock: FixedClock) -> None:
    ids = _converse(brain, clock)
    reply = ids[TALK[1]]
    everywhere = Filters(partition=brain.partition)
    brain._context.flush()
    assert brain._context.embedder is not None
    plain = VectorRetriever(brain._context.caches, brain._context.embedder).search(
        QUERY, 10, everywhere
    )
    assert reply not in [oid for oid, _ in plain]
    assert reply in [h.id for h in brain.recall(QUERY, mode="vector", k=5)]


def test_a_private_neighbour_lends_nothing_to_a_model(brain: Brain, clock: FixedClock) -> None:
    ids = _converse(brain, clock)
    brain.set_field(ids[TALK[0]], "visibility", "private")
    assert ids[TALK[1]] in [h.id for h in brain.recall(QUERY, mode="text", k=5)]
    brain._context.for_model = True  # the MCP server's view: private notes do not exist for it
    found = [h.id for h in brain.recall(QUERY, mode="text", k=5)]
    assert ids[TALK[1]] not in found and ids[TALK[0]] not in found


def test_explain_gives_ranks_scores_and_context(brain: Brain, clock: FixedClock) -> None:
    ids = _converse(brain, clock)
    hits = {h.id: h for h in brain.recall(QUERY, k=5, explain=True)}
    why = hits[ids[TALK[1]]].explain
    assert why is not None
    assert why["retrievers"]["text"]["rank"] == 2
    assert why["retrievers"]["text"]["neighbours"] > 0  # all of its text score is borrowed
    # The query asks when (recall/answers.py): whether the hit says when is given too.
    # The question beside it asks and is lowered for it, so "asks" is given too; the hit is
    # a short reply to that question, so what it borrowed is given (recall/replies.py); the
    # question opens their sitting, so what openings got is given too (recall/openers.py).
    assert set(why) == {
        "retrievers",
        "fused",
        "context",
        "prior",
        "answer",
        "answer_asked",
        "asks",
        "reply",
        "opens",
        "relevance",
    }
    assert why["prior"] == 1.0
    assert why["opens"] == 1.0 and hits[ids[TALK[0]]].explain["opens"] > 1.0  # type: ignore[index]
    assert all(h.explain is None for h in brain.recall(QUERY, k=5))


def test_cli_explain_in_text_and_json(cli: CliRunner, brain: Brain, clock: FixedClock) -> None:
    _converse(brain, clock)
    brain.close()
    res = cli.invoke(app, ["recall", QUERY, "--explain"])
    assert res.exit_code == 0, res.output
    assert "why: text #1" in res.output and "from neighbours" in res.output
    res = cli.invoke(app, ["recall", QUERY, "--explain", "--json"])
    hits = json.loads(res.output)["hits"]
    # The reply that says when ("Yes, last Tuesday!") is the answer to "When was …?" and
    # leads (recall/answers.py), over the question that matched more of its words.
    assert [h["explain"]["retrievers"]["text"]["rank"] for h in hits[:2]] == [2, 1]
    assert hits[0]["explain"]["answer_asked"] == "when"
    res = cli.invoke(app, ["recall", QUERY, "--json"])
    assert "explain" not in json.loads(res.output)["hits"][0]


def test_paired_bootstrap() -> None:
    old = [(1, {"hit@10": 0.0}), (2, {"hit@10": 1.0}), (5, {"hit@10": 0.0})] * 20
    assert paired_bootstrap(old, old, "hit@10") == (0.0, 0.0, 0.0)
    new = [(c, {"hit@10": 1.0}) for c, _ in old]
    mean, low, high = paired_bootstrap(new, old, "hit@10")
    assert mean == 0.5 and 0 < low <= mean <= high  # category 5 is not pooled
    assert paired_bootstrap(new, old, "hit@10", categories=frozenset({2}))[0] == 0.0
    with pytest.raises(ValueError, match="not the same"):
        paired_bootstrap(new[1:] + new[:1], old, "hit@10")


def test_one_vault_hits_of_another_sample_are_never_gold(tmp_path: Path) -> None:
    assert _gold_key(("conv-26", "D1:3"), "conv-26") == "D1:3"
    assert _gold_key(("conv-30", "D1:3"), "conv-26") == "conv-30/D1:3"
    assert _gold_key(None, "conv-26") is None


def test_neighbours_share_node_and_minute(brain: Brain, clock: FixedClock) -> None:
    ids = []
    for ms, node in ((0, None), (1, "Knowledge/Other"), (2, None), (120_000, None)):
        clock.set(T0 + timedelta(milliseconds=ms))
        ids.append(brain.remember(f"memory number {ms}", node=node).id)
    first, other_node, next_one, much_later = ids
    around = Neighbourhood(brain._context.caches.catalog).around(
        [first], Filters(partition=brain.partition)
    )
    assert around[first] == (next_one,)
    assert other_node not in around and much_later not in around


def test_a_window_reaches_past_every_hidden_neighbour(brain: Brain, clock: FixedClock) -> None:
    ids = []
    for ms in range(8):
        clock.set(T0 + timedelta(milliseconds=ms))
        ids.append(brain.remember(f"turn number {ms}").id)
    for hidden in ids[1:6]:  # five private turns in a row after the first
        brain.set_field(hidden, "visibility", "private")
    seen = Filters(partition=brain.partition, visibility=("normal",))  # a model's view
    around = Neighbourhood(brain._context.caches.catalog).around([ids[0]], seen)
    assert around[ids[0]] == (ids[6], ids[7])  # the window skips all five, not only some
    assert not set(ids[1:6]) & {n for near in around.values() for n in near}


def test_sections_of_a_document_neighbour_in_order(brain: Brain, tmp_path: Path) -> None:
    from tests.ingest.test_documents import attach

    folder = tmp_path / "notes"
    folder.mkdir()
    parts = [f"## Part {n}\n\nParagraph {n} about subject {n}.\n" for n in range(1, 13)]
    (folder / "long.md").write_text("# Long\n\n" + "\n".join(parts))
    attach(brain, folder)
    brain.sync()
    chunks = sorted(
        (row.id for row in brain._context.caches.catalog.select("kind='chunk'")), key=order_key
    )
    assert len(chunks) >= 12
    middle = chunks[9]
    around = Neighbourhood(brain._context.caches.catalog).around([middle], Filters(partition=None))
    assert around[middle] == (chunks[7], chunks[8], chunks[10], chunks[11])


def test_bench_one_vault_and_baseline_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.locomo import main
    from tests.bench.test_bench_metrics import _tiny, _write

    data = _tiny()
    twin = json.loads(json.dumps(data[0]))
    twin["sample_id"] = "twin"
    path = _write(tmp_path, [*data, twin])
    base, out = tmp_path / "base.json", tmp_path / "out.json"
    assert main([str(path), "--out", str(base), "--embedder", "hashing"]) == 0
    args = [str(path), "--out", str(out), "--embedder", "hashing", "--one-vault", "nodes"]
    assert main([*args, "--configs", "hybrid,hybrid_scope", "--baseline", str(base)]) == 0
    report = json.loads(out.read_text())["configs"]
    assert set(report) == {"hybrid", "hybrid_scope"}
    per_sample = json.loads(base.read_text())["configs"]["hybrid"]
    assert len(report["hybrid"]["questions"]) == len(per_sample["questions"])
    printed = capsys.readouterr().out
    assert "hybrid against the baseline" in printed and "cat 1:" in printed


def test_write_order_survives_reindex(brain: Brain, clock: FixedClock) -> None:
    ids = _converse(brain, clock)
    brain.reindex()  # ids live in the files: the catalog rebuilt from them keeps the order
    found = [h.id for h in brain.recall(QUERY, mode="text", k=5)]
    assert found[:2] == [ids[TALK[1]], ids[TALK[0]]]  # the reply through its neighbour


def test_ulid_bounds() -> None:
    from brain._model import new_id
    from brain._recall.neighbours import _millis, _ulid_at

    made = new_id(T0)
    millis = _millis(made)
    assert millis == int(T0.timestamp() * 1000)
    assert _ulid_at(millis) <= made < _ulid_at(millis + 1)
    assert _millis("not a ulid!") == 0


def test_documents_synced_together_lend_nothing(
    brain: Brain, clock: FixedClock, tmp_path: Path
) -> None:
    """A sync writes its files in one minute into one node: they are no conversation. A
    document has no neighbours by write order, nor is it one of a memory written beside it."""
    from tests.ingest.test_documents import attach

    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("boiler", "desk", "garden"):
        (folder / f"{name}.md").write_text(f"# {name.title()}\n\nAll about the {name}.\n")
    attach(brain, folder)
    brain.sync()
    docs = list(brain._context.caches.catalog.select("kind='document'"))
    assert len(docs) == 3 and len({row.node for row in docs}) == 1
    clock.set(T0 + timedelta(milliseconds=5))
    memory = brain.remember("A note beside them", node=docs[0].node).id
    everyone = Filters(partition=brain.partition)
    around = Neighbourhood(brain._context.caches.catalog).around(
        [r.id for r in docs] + [memory], everyone
    )
    assert all(around[row.id] == () for row in docs)
    assert around[memory] == ()
