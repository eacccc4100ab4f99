"""Typed relations by id, incoming and outgoing; the Mermaid graph; hand-edit damage reported."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import InvalidInput, NotFound
from brain._model import RELATION_TYPES
from brain._upkeep import graph
from brain.testing import tree_digest

_register()


def two(brain: Brain) -> tuple[str, str]:
    a = brain.remember("Widget Pro has a 5 inch screen", title="Widget Pro")
    b = brain.remember("Widget Mini is the small one", title="Widget Mini")
    return a.id, b.id


def test_relate_stores_the_edge_by_id_in_the_source_front_matter(brain: Brain, vault: Path) -> None:
    a, b = two(brain)
    note = brain.relate(a, "supports", b, weight=0.8)
    text = (vault / note.path).read_text()
    assert f"- {{type: supports, target: {b}, weight: 0.8}}" in text
    brain.relate(a, "supports", b, weight=0.5)  # the same edge again: re-weighed, not doubled
    assert [(r.type, r.target, r.weight) for r in brain._context.get(a).relations] == [
        ("supports", b, 0.5)
    ]
    brain.unrelate(a, "supports", b)
    assert brain._context.get(a).relations == () and "relations" not in brain._context.get(a).meta


def test_relations_survive_renames_and_moves(brain: Brain, vault: Path) -> None:
    a, b = two(brain)
    brain.relate(a, "extends", b)
    source = vault / brain._context.get(a).path
    moved = vault / "main/Knowledge/Domains/Gadgets/Renamed.md"
    moved.parent.mkdir(parents=True)
    shutil.move(source, moved)
    target = vault / brain._context.get(b).path
    shutil.move(target, target.with_name("Tiny.md"))
    links = brain.links(b)
    assert [(e.source, e.type) for e in links.incoming] == [(a, "extends")]
    assert [(e.type, e.target) for e in brain.links(a).outgoing] == [("extends", b)]
    assert brain.doctor().ok


def test_expand_shows_incoming_and_outgoing(cli: CliRunner, brain: Brain) -> None:
    a, b = two(brain)
    c = brain.remember("Widget Max is the big one", title="Widget Max").id
    brain.relate(a, "references", b)
    brain.relate(c, "contradicts", a, weight=0.3)
    res = cli.invoke(app, ["expand", a])
    assert res.exit_code == 0, res.output
    assert f"→ references {b} Widget Mini" in res.stdout
    assert f"← contradicts {c} Widget Max (weight 0.3)" in res.stdout
    data = json.loads(cli.invoke(app, ["expand", a, "--json"]).stdout)
    assert data["relations"]["outgoing"] == [
        {"type": "references", "id": b, "title": "Widget Mini", "weight": None}
    ]
    assert data["relations"]["incoming"] == [
        {"type": "contradicts", "id": c, "title": "Widget Max", "weight": 0.3}
    ]


def test_unknown_relation_type_is_refused_with_the_allowed_list(
    cli: CliRunner, brain: Brain, vault: Path
) -> None:
    a, b = two(brain)
    before = tree_digest(vault)
    res = cli.invoke(app, ["relate", a, "likes", b])
    assert res.exit_code == 2
    assert "unknown relation type 'likes'; allowed: " + ", ".join(RELATION_TYPES) in res.stderr
    assert tree_digest(vault) == before


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["relate", "{a}", "supports", "{a}"], "cannot be related to itself"),
        (["relate", "{a}", "supports", "01JE2Z3K4M5N6P7Q8R9S0T1V2W"], "no note with id"),
        (["relate", "01JE2Z3K4M5N6P7Q8R9S0T1V2W", "supports", "{b}"], "no note with id"),
        (["relate", "{a}", "supports", "nope"], "not a note id"),
        (["relate", "{a}", "supports", "{b}", "--weight", "1.5"], "between 0 and 1"),
        (["relate", "{a}", "supports", "{b}#4"], "no chunk with id"),
        (["unrelate", "{a}", "supports", "{b}"], "has no relation supports"),
        (["unrelate", "{a}", "liked", "{b}"], "unknown relation type 'liked'"),
    ],
)
def test_bad_relations_are_refused_and_change_nothing(
    cli: CliRunner, brain: Brain, vault: Path, args: list[str], expected: str
) -> None:
    a, b = two(brain)
    before = tree_digest(vault)
    res = cli.invoke(app, [x.format(a=a, b=b) for x in args])
    assert res.exit_code == 2, res.output
    assert expected in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert tree_digest(vault) == before


def test_a_superseded_version_is_not_related(brain: Brain, clock: FixedClock) -> None:
    a, b = two(brain)
    new = brain.correct(a, "Widget Pro has a 6 inch screen")
    with pytest.raises(InvalidInput, match=f"current version is {new.id}"):
        brain.relate(a, "supports", b)
    with pytest.raises(InvalidInput, match=f"current version is {new.id}") as refused:
        brain.unrelate(a, "supports", b)
    assert "added and removed on the current version" in refused.value.hint  # not "relate"


def test_a_dangling_target_after_a_hand_edit_is_reported_not_fatal(
    cli: CliRunner, brain: Brain, vault: Path
) -> None:
    a, b = two(brain)
    brain.relate(a, "supports", b)
    (vault / brain._context.get(b).path).unlink()  # deleted by hand
    report = brain.doctor()
    assert not report.ok and len(report.dangling) == 1 and b in report.dangling[0]
    assert brain.recall("widget")  # everything else keeps working
    res = cli.invoke(app, ["expand", a])
    assert res.exit_code == 0 and "(missing)" in res.stdout
    res = cli.invoke(app, ["doctor", "--json"])
    assert res.exit_code == 1 and json.loads(res.stdout)["dangling"]


def test_a_missing_relation_target_in_a_hand_edit_of_a_brand_new_note(
    brain: Brain, vault: Path
) -> None:
    path = vault / "main/Knowledge/Inbox/Hand.md"
    path.write_text(
        "---\nid: 01JE2Z3K4M5N6P7Q8R9S0T1V2V\ntitle: Hand\nrelations:\n"
        "- {type: supports, target: 01JE2Z3K4M5N6P7Q8R9S0T1V2W}\n---\nx\n"
    )
    assert any("01JE2Z3K4M5N6P7Q8R9S0T1V2W" in d for d in brain.doctor().dangling)
    with pytest.raises(NotFound):
        brain.relate("01JE2Z3K4M5N6P7Q8R9S0T1V2V", "supports", "01JE2Z3K4M5N6P7Q8R9S0T1V2W")


# The graph -------------------------------------------------------------------------------------


def test_graph_writes_mermaid_in_place_deterministically(
    cli: CliRunner, brain: Brain, clock: FixedClock, vault: Path
) -> None:
    a, b = two(brain)
    odd = brain.remember("Odd characters", title='Say "hi" <b>#1</b> | [x] {y}')
    brain.relate(a, "supports", b, weight=0.8)
    brain.relate(odd.id, "references", a)
    res = cli.invoke(app, ["graph"])
    assert res.exit_code == 0, res.output
    path = vault / "main/Insights/Graph.md"
    first = path.read_bytes()
    text = first.decode()
    assert "```mermaid\nflowchart LR\n" in text and "kind: log" in text
    assert "-->|supports 0.8|" in text and "-->|references|" in text
    line = next(x for x in text.splitlines() if "Say" in x)
    inner = line.split('["', 1)[1].rsplit('"]', 1)[0]
    assert not set(inner) & set('"<>[]{}|'), inner
    assert inner == "Say #34;hi#34; #60;b#62;#35;1#60;/b#62; #124; #91;x#93; #123;y#125;"
    assert graph.label('a "b"') == "a #34;b#34;"
    # Regenerated in place: one Graph.md, same id, and the same bytes while nothing changed.
    note_id = brain._context.get(brain.list(node="Insights")[0].id).id
    assert cli.invoke(app, ["graph"]).exit_code == 0
    assert path.read_bytes() == first
    again = open_vault(vault, clock=clock)
    assert again.write_graph().id == note_id and path.read_bytes() == first
    again.close()
    brain.unrelate(odd.id, "references", a)
    brain.write_graph()
    assert "-->|references|" not in path.read_text()
    assert [p.name for p in path.parent.glob("Graph*.md")] == ["Graph.md"]


def test_graph_is_capped_and_says_what_was_left_out(
    brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub = brain.remember("The hub", title="Hub").id
    for n in range(6):
        spoke = brain.remember(f"Spoke number {n}", title=f"Spoke {n}").id
        brain.relate(spoke, "partOf", hub)
    monkeypatch.setattr(graph, "MAX_NODES", 4)
    body = brain.write_graph().body
    assert body.count("-->|partOf|") == 3
    assert "Left out to keep the diagram readable: 3 notes and 3 relations" in body


def test_a_full_graph_draws_the_newest_of_equally_connected_notes(
    brain: Brain, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(4):
        clock.set(clock.now() + timedelta(days=1))
        a = brain.remember(f"Month {n} plan", title=f"Plan {n}").id
        b = brain.remember(f"Month {n} budget", title=f"Budget {n}").id
        brain.relate(a, "extends", b)
    monkeypatch.setattr(graph, "MAX_NODES", 4)
    body = brain.write_graph().body
    assert "Plan 3" in body and "Plan 2" in body, "a year on, the graph still shows this month"
    assert "Plan 0" not in body and "Plan 1" not in body


def test_graph_leaves_out_private_notes(brain: Brain, vault: Path) -> None:
    a, b = two(brain)
    secret = brain.remember("My secret diagnosis", title="Secret diagnosis")
    path = vault / secret.path
    private = path.read_text().replace("status: active", "status: active\nvisibility: private")
    path.write_text(private)
    brain.relate(a, "references", secret.id)
    brain.relate(a, "supports", b)
    body = brain.write_graph().body
    assert "Secret" not in body and "Not drawn: 1 relations" in body


def test_empty_graph(brain: Brain) -> None:
    assert "No relations to draw yet" in brain.write_graph().body


def test_an_older_catalog_is_rebuilt_once_with_the_relations(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    a, b = two(brain)
    brain.relate(a, "supports", b)
    brain._context.caches.catalog.db.execute("DELETE FROM relations")
    brain._context.caches.catalog.set_info("schema", "1")
    brain.close()
    again = open_vault(vault, clock=clock)  # an older schema: rebuilt from the files
    assert [e.source for e in again.links(b).incoming] == [a]
    again.close()
    third = open_vault(vault, clock=clock)
    assert not third._context.caches.catalog.stale  # and only once
    third.close()


def test_expand_names_a_related_chunk_by_its_title(
    cli: CliRunner, brain: Brain, tmp_path: Path
) -> None:
    from tests.ingest.test_documents import attach

    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "boat.md").write_text("# Boat\n\nThe boat is moored at pier 7.\n")
    attach(brain, folder)
    brain.sync()
    [chunk] = [h.id for h in brain.recall("boat moored pier", k=1)]
    assert "#" in chunk  # the passage, not the document
    a = brain.remember("Ana keeps the boat key", title="Boat key").id
    brain.relate(a, "references", chunk)
    res = cli.invoke(app, ["expand", a])
    assert f"→ references {chunk} Boat" in res.stdout and "(missing)" not in res.stdout
