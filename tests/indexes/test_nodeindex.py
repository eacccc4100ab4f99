"""index.json per node, scoping (precision warming) and placement, on real vaults."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._indexes.fulltext import Filters
from brain._model import Note, iso, new_id
from brain._scoping import choose_scope, score_nodes
from brain._terms import entities, terms
from brain._upkeep.regenerate import rebuild_node_indexes
from brain.testing import tree_digest

_register()

FIELDS = {
    "node_id",
    "node_name",
    "summary",
    "sub_nodes",
    "aggregate_keywords",
    "key_entities",
    "total_memory_count",
    "date_range",
}
SUB_FIELDS = {"name", "memory_count", "keywords", "date_range"}

COOKING = [
    "Marco Rossi taught me fresh pasta with semolina flour and eggs",
    "Carbonara takes guanciale, pecorino and egg yolks; Marco Rossi never adds cream",
    "The sourdough starter is fed with rye flour every morning",
    "Pizza dough proves 48 hours in the fridge, Napoli style, for a blistered crust",
    "Risotto wants arborio rice and warm stock, added a ladle at a time",
    "Fresh pasta dough rests thirty minutes under a bowl before rolling",
    "Focaccia gets olive oil, rosemary and flaky salt before baking",
    "Gnocchi need floury potatoes riced while hot, then a little flour",
    "Bread flour has more protein than pasta flour; sourdough likes it",
    "Tiramisu layers savoiardi dipped in espresso with mascarpone cream",
    "Pesto from basil, pine nuts, garlic and pecorino in a mortar",
]
INFRA = [
    "The Kubernetes upgrade broke the ingress controller on the staging cluster",
    "Postgres autovacuum settings for the billing database were tuned",
    "Terraform state for the cluster lives in an encrypted bucket",
    "The gateway rate limit is one hundred requests per second per tenant",
    "Grafana dashboards show latency of the payment service and the cluster",
    "Kubernetes pods restart when the liveness probe of the ingress fails",
    "The billing database replica lags during the nightly backup",
    "Terraform modules pin provider versions for the cluster",
    "Postgres connection pooling goes through pgbouncer in the cluster",
    "Alerting routes pages for the payment service to the on-call engineer",
]


def fill(brain: Brain, node: str, texts: list[str]) -> list[Note]:
    return [brain.remember(text, node=node) for text in texts]


def filler(brain: Brain, node: str, count: int, word: str = "memo") -> list[Note]:
    return [
        brain.remember(f"{word} number {n}", node=node, title=f"{word} {n}") for n in range(count)
    ]


def index_of(vault: Path, node: str, partition: str = "main") -> dict[str, Any] | None:
    path = vault / partition / node / "index.json"
    return json.loads(path.read_text()) if path.exists() else None


def index_files(vault: Path) -> dict[str, bytes]:
    return {p.relative_to(vault).as_posix(): p.read_bytes() for p in vault.rglob("index.json")}


# index.json: thresholds, nesting, fields ---------------------------------------------------------
def test_a_node_gets_an_index_at_five_memories(brain: Brain, vault: Path) -> None:
    filler(brain, "Projects", 4)
    assert index_of(vault, "Projects") is None
    filler(brain, "Projects", 1, word="extra")
    doc = index_of(vault, "Projects")
    assert doc is not None and doc["total_memory_count"] == 5 and doc["node_name"] == "Projects"


def test_a_sub_node_gets_its_own_index_at_ten(brain: Brain, vault: Path) -> None:
    filler(brain, "Projects/Alpha", 9)
    parent = index_of(vault, "Projects")
    assert parent is not None and index_of(vault, "Projects/Alpha") is None
    assert parent["sub_nodes"][0]["name"] == "Alpha"
    assert parent["sub_nodes"][0]["memory_count"] == 9
    filler(brain, "Projects/Alpha", 1, word="tenth")
    nested = index_of(vault, "Projects/Alpha")
    assert nested is not None and nested["total_memory_count"] == 10
    # Deeper still: a sub-sub-node nests the same way, and every ancestor counts it.
    filler(brain, "Projects/Alpha/Design", 10, word="design")
    assert index_of(vault, "Projects/Alpha/Design") is not None
    assert index_of(vault, "Projects")["total_memory_count"] == 20  # type: ignore[index]


def test_the_index_has_exactly_the_documented_fields(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    fill(brain, "Knowledge/Domains/Cooking", COOKING[:6])
    clock.set(clock.now() + timedelta(days=40))
    fill(brain, "Knowledge/Domains/Infra", INFRA[:4])
    doc = index_of(vault, "Knowledge")
    assert doc is not None and set(doc) == FIELDS
    assert doc["node_name"] == "Knowledge" and doc["total_memory_count"] == 10
    assert doc["date_range"] == {"oldest": "2026-12-02", "newest": "2027-01-11"}
    assert [s["name"] for s in doc["sub_nodes"]] == ["Domains"]
    domains = index_of(vault, "Knowledge/Domains")
    assert domains is not None and set(domains) == FIELDS
    cooking, infra = domains["sub_nodes"]
    assert set(cooking) == SUB_FIELDS
    assert (cooking["name"], cooking["memory_count"], infra["name"], infra["memory_count"]) == (
        "Cooking",
        6,
        "Infra",
        4,
    )
    assert cooking["date_range"] == {"oldest": "2026-12-02", "newest": "2026-12-02"}
    assert "pasta" in cooking["keywords"] and "flour" in cooking["keywords"]
    assert "cluster" in infra["keywords"]  # in two of the four
    assert "Marco Rossi" in domains["key_entities"]
    assert all(isinstance(k, str) and k == k.lower() for k in domains["aggregate_keywords"])
    assert "10 memories" in domains["summary"] and "Cooking" in domains["summary"]
    # node_id: stable, different per node.
    assert doc["node_id"] != domains["node_id"]
    raw = (vault / "main/Knowledge/index.json").read_text()
    assert raw.endswith("}\n") and raw == json.dumps(doc, sort_keys=True, indent=2) + "\n"


def test_index_files_hold_metadata_never_note_text(brain: Brain, vault: Path) -> None:
    notes = fill(brain, "Knowledge/Domains/Cooking", COOKING)
    text = (vault / "main/Knowledge/Domains/Cooking/index.json").read_text()
    for note in notes:
        sentence = " ".join(note.body.split()[:4])
        assert sentence not in text


# keywords and entities -------------------------------------------------------------------------
def test_entities_are_names_runs_and_acronyms() -> None:
    text = (
        "The team met Caroline at the Widget Pro launch. Caroline liked the API.\n"
        "Then we went home. Yesterday Bob called; the NASA talk was good."
    )
    found = dict(entities(text))
    assert found["Caroline"] == 2 and "Widget Pro" in found and "API" in found
    assert "NASA" in found and "Bob" in found
    # Sentence openers and weekday-like words are not names.
    assert "The" not in found and "Then" not in found and "Yesterday" not in found


def test_keywords_skip_stopwords_and_favour_the_title() -> None:
    found = dict(terms("Sourdough", "I really think the starter and the flour matter. Flour!"))
    assert found["flour"] == 2 and found["sourdough"] == 2 and "really" not in found
    assert "the" not in found and "think" not in found


# private and local-only ------------------------------------------------------------------------
def test_private_and_local_only_words_never_reach_an_index(brain: Brain, vault: Path) -> None:
    notes = filler(brain, "Projects", 5)
    with brain._context.lock.hold():
        secret = notes[0].with_body("Zanzibarian plans with Xavier Quillfeather\n")
        brain._context.save(secret.with_meta(visibility="private"))
        stamp = iso(brain.clock.now())
        local = Note(
            meta={
                "id": new_id(brain.clock.now()),
                "title": "Hidden",
                "kind": "titled",
                "status": "active",
                "created": stamp,
                "touched": stamp,
                "visibility": "local-only",
            },
            body="Quokkaberry talks with Yolanda Vexmoor\n",
            path="local-only/main/Projects/Hidden.md",
        )
        brain._context.save(local)
        brain._context.save(
            local.with_path("local-only/main/Secret/Hidden.md").with_meta(
                id=new_id(brain.clock.now())
            )
        )
    for _ in range(2):  # as written at once, and after a full rebuild
        doc = index_of(vault, "Projects")
        assert doc is not None
        text = (vault / "main/Projects/index.json").read_text().lower()
        for word in ("zanzibarian", "xavier", "quillfeather", "quokkaberry", "yolanda", "hidden"):
            assert word not in text
        # The private note still counts (counts are all an index reveals); local-only ones don't.
        assert doc["total_memory_count"] == 5
        assert not (vault / "main/Secret").exists()
        rebuild_node_indexes(brain._context)


# updates -----------------------------------------------------------------------------------------
def test_an_index_updates_at_once_on_add(brain: Brain, vault: Path, clock: FixedClock) -> None:
    filler(brain, "Projects", 5)
    before = index_of(vault, "Projects")
    clock.set(clock.now() + timedelta(days=3))
    brain.remember("Quarterly roadmap with Dana Whitfield", node="Projects", title="Roadmap")
    after = index_of(vault, "Projects")
    assert before is not None and after is not None
    assert after["total_memory_count"] == 6
    assert after["date_range"] == {"oldest": "2026-12-02", "newest": "2026-12-05"}
    assert "roadmap" in after["aggregate_keywords"] and "Dana Whitfield" in after["key_entities"]


def test_writes_keep_stats_cheap_no_note_is_reread(
    brain: Brain, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler(brain, "Projects", 12)
    reads: list[str] = []
    original = brain._context.store.read

    def counting(rel: str) -> Note:
        reads.append(rel)
        return original(rel)

    monkeypatch.setattr(brain._context.store, "read", counting)
    brain.remember("one more thing", node="Projects", title="One more")
    assert reads == []  # the index came from the statistics, not from the notes
    assert index_of(vault, "Projects")["total_memory_count"] == 13  # type: ignore[index]


def test_forget_updates_at_once_and_drops_an_index_under_threshold(
    brain: Brain, vault: Path
) -> None:
    notes = filler(brain, "Projects", 5)
    brain.forget(notes[0].id)
    assert index_of(vault, "Projects") is None
    assert (vault / "main/Projects").is_dir()  # the other notes are still there


def test_rebuild_drops_indexes_under_threshold_and_is_deterministic(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    fill(brain, "Knowledge/Domains/Cooking", COOKING)
    fill(brain, "Knowledge/Domains/Infra", INFRA)
    small = filler(brain, "Projects", 2)
    # A stale index (say from before notes were deleted by hand) and a stray one.
    stale = vault / "main/Projects/index.json"
    stale.write_text((vault / "main/Knowledge/index.json").read_text())
    (vault / "main/Projects/Old").mkdir()
    (vault / "main/Projects/Old/index.json").write_text("{}\n")
    settled = rebuild_node_indexes(brain._context)
    assert not stale.exists() and not (vault / "main/Projects/Old").exists()
    assert set(settled.removed) == {"main/Projects/index.json", "main/Projects/Old/index.json"}
    first = index_files(vault)
    assert set(first) == {
        "main/Knowledge/index.json",
        "main/Knowledge/Domains/index.json",
        "main/Knowledge/Domains/Cooking/index.json",
        "main/Knowledge/Domains/Infra/index.json",
    }
    rebuild_node_indexes(brain._context)
    assert index_files(vault) == first  # byte-identical
    brain.reindex()
    assert index_files(vault) == first
    assert small  # untouched notes stay


def test_incremental_files_equal_a_full_rebuild(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    cooking = fill(brain, "Knowledge/Domains/Cooking", COOKING)
    clock.set(clock.now() + timedelta(days=5))
    infra = fill(brain, "Knowledge/Domains/Infra", INFRA)
    clock.set(clock.now() + timedelta(days=5))
    brain.remember(
        "More about pesto and basil", node="Knowledge/Domains/Cooking", title=cooking[-1].title
    )
    brain.forget(infra[-1].id)  # the newest Infra memory: the date range narrows
    brain.forget(cooking[0].id)
    incremental = index_files(vault)
    rebuild_node_indexes(brain._context)
    assert index_files(vault) == incremental


def test_an_unrelated_write_changes_no_other_index(brain: Brain, vault: Path) -> None:
    fill(brain, "Knowledge/Domains/Cooking", COOKING)
    filler(brain, "Projects", 6)
    before = {p: (vault / p).stat().st_mtime_ns for p in index_files(vault)}
    contents = index_files(vault)
    brain.remember("A new milestone for the launch", node="Projects", title="Milestone")
    after = index_files(vault)
    for rel in contents:
        if rel.startswith("main/Knowledge"):
            assert after[rel] == contents[rel]
            assert (vault / rel).stat().st_mtime_ns == before[rel]  # not even rewritten
    assert after["main/Projects/index.json"] != contents["main/Projects/index.json"]


def test_the_statistics_are_a_cache_the_files_survive_losing_it(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    fill(brain, "Knowledge/Domains/Cooking", COOKING)
    first = index_files(vault)
    brain.close()
    shutil.rmtree(vault / ".brain")
    again = open_vault(vault, clock=clock)
    assert again.recall("pasta")  # the first catch-up feeds every note back in
    assert index_files(vault) == first
    # Statistics from an older version (or none) are rebuilt when the vault is opened.
    again._context.caches.catalog.set_info("node_stats", "0")
    (vault / "main/Knowledge/index.json").unlink()
    again.close()
    third = open_vault(vault, clock=clock)
    assert index_files(vault) == first
    third.close()


def test_hand_edits_reach_the_index_on_catch_up(brain: Brain, vault: Path) -> None:
    notes = filler(brain, "Projects", 5)
    path = vault / notes[0].path
    path.write_text(path.read_text().replace("memo number 0", "Heliotrope budget review"))
    brain._context.catch_up()
    doc = index_of(vault, "Projects")
    assert doc is not None and "heliotrope" in doc["aggregate_keywords"]


# scoping ---------------------------------------------------------------------------------------
@pytest.fixture
def topics(brain: Brain) -> Brain:
    fill(brain, "Knowledge/Domains/Cooking", COOKING)
    fill(brain, "Knowledge/Domains/Infra", INFRA)
    brain.remember("Pasta night with the infra team", node="Knowledge/Inbox", title="Team dinner")
    return brain


def test_choose_scope_picks_the_node_of_a_clear_query(topics: Brain) -> None:
    scored = dict(score_nodes(topics._context, "kubernetes ingress cluster"))
    assert scored["Knowledge/Domains/Infra"] > scored["Knowledge/Domains/Cooking"]
    assert choose_scope(topics._context, "kubernetes ingress cluster") == [
        "Knowledge/Domains/Infra"
    ]
    assert choose_scope(topics._context, "what did Marco Rossi say about pasta flour") == [
        "Knowledge/Domains/Cooking"
    ]


def test_choose_scope_is_none_when_the_query_is_ambiguous(topics: Brain) -> None:
    assert (
        choose_scope(topics._context, "what happened at the weekend") is None
    )  # no index knows it
    assert choose_scope(topics._context, "") is None
    for node in ("Garden", "Travel", "Music", "Health"):  # four topics that all know "budget"
        filler(topics, f"Knowledge/Domains/{node}", 10, word=f"budget {node.lower()}")
    assert choose_scope(topics._context, "budget") is None


def test_scope_node_never_returns_notes_outside_it(topics: Brain) -> None:
    everywhere = {h.node for h in topics.recall("pasta", k=20)}
    assert "Knowledge/Inbox" in everywhere and "Knowledge/Domains/Cooking" in everywhere
    for scope in ("Knowledge/Domains/Cooking", "Knowledge/Domains"):
        hits = topics.recall("pasta", k=20, scope=scope)
        assert hits and all(h.node.startswith(scope) for h in hits)
    assert topics.recall("pasta", k=20, scope="Knowledge/Domains/Infra") == []
    # auto narrows to the chosen node; all searches everything.
    auto = topics.recall("kubernetes ingress cluster", k=20, scope="auto")
    assert auto and all(h.node == "Knowledge/Domains/Infra" for h in auto)
    assert {h.node for h in topics.recall("pasta", k=20, scope="all")} == everywhere


def test_a_scope_of_several_nodes_searches_exactly_those(topics: Brain) -> None:
    topics._context.flush()
    wanted = ("Knowledge/Domains/Infra", "Knowledge/Inbox")
    filters = Filters(partition="main", nodes=wanted)
    found = topics._context.caches.fulltext.search("pasta cluster", 50, filters)
    nodes = {topics._context.row(oid).node for oid, _ in found}
    assert nodes == set(wanted)
    assert topics._context.caches.fulltext.search("pasta", 50, Filters(nodes=())) == []


def test_recall_scope_on_the_command_line(
    topics: Brain, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAIN_VAULT", str(vault))
    runner = CliRunner()
    res = runner.invoke(app, ["recall", "pasta", "--scope", "Knowledge/Inbox", "--json"])
    assert res.exit_code == 0, res.output
    assert {h["node"] for h in json.loads(res.stdout)["hits"]} == {"Knowledge/Inbox"}
    before = tree_digest(vault)
    res = runner.invoke(app, ["recall", "pasta", "--scope", "../outside"])
    assert res.exit_code == 2 and "node" in res.stderr
    assert tree_digest(vault) == before


# placement -------------------------------------------------------------------------------------
def test_remember_places_a_memory_in_its_topic(topics: Brain) -> None:
    note = topics.remember("A new focaccia: bread flour, olive oil, rosemary and sourdough")
    assert note.node == "Knowledge/Domains/Cooking"
    note = topics.remember("The ingress on the staging cluster needs a new Kubernetes probe")
    assert note.node == "Knowledge/Domains/Infra"


def test_remember_without_a_matching_topic_goes_to_the_inbox(topics: Brain) -> None:
    assert topics.remember("Renew the passport before the trip").node == "Knowledge/Inbox"


def test_node_always_wins_over_placement(topics: Brain) -> None:
    note = topics.remember("Fresh pasta with semolina flour", node="Knowledge/Other")
    assert note.node == "Knowledge/Other"


def test_the_same_title_lands_on_the_same_note(topics: Brain) -> None:
    first = topics.remember("Passport number is in the drawer", title="Passport")
    again = topics.remember("Renewal is due in March", title="Passport")
    assert again.id == first.id and "Renewal" in again.body


def test_placement_on_the_command_line(topics: Brain, vault: Path, cli: CliRunner) -> None:
    res = cli.invoke(app, ["remember", "Carbonara with guanciale and pecorino", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["path"].startswith("main/Knowledge/Domains/Cooking/")


def test_a_bulk_block_reads_each_topic_index_once_and_places_as_outside_it(
    topics: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Placing a bulk import's memories reads each topic's index.json once per block (the
    block sees the node indexes as they were when it began), and places them as before."""
    from brain._indexes import nodeindex

    reads: list[str] = []
    real = nodeindex.NodeIndex._read_file

    def counted(self: nodeindex.NodeIndex, rel: str) -> dict[str, object] | None:
        reads.append(rel)
        return real(self, rel)

    monkeypatch.setattr(nodeindex.NodeIndex, "_read_file", counted)
    texts = [
        "A new focaccia: bread flour, olive oil, rosemary and sourdough",
        "The ingress on the staging cluster needs a new Kubernetes probe",
    ] * 10
    with topics.bulk():
        placed = [topics.remember(text).node for text in texts]
    assert placed == ["Knowledge/Domains/Cooking", "Knowledge/Domains/Infra"] * 10
    assert reads and len(reads) == len(set(reads))  # each file once in the block
    reads.clear()
    assert topics.remember(texts[0]).node == "Knowledge/Domains/Cooking"
    assert reads  # outside a block, the files are looked at again
