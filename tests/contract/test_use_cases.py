"""The use cases on both storages: what test_hosted_core.py does not already run on both."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._errors import InvalidInput, NotFound
from brain._sources import connectors as conn
from brain._sources import documents
from tests.contract.conftest import Opener

GUIDE = "# Garden guide\n\n## Tomatoes\n\nStake the quince tomatoes in May.\n\n" + (
    "## Beans\n\nRunner beans climb the north fence.\n\n" * 3
)


def test_bulk_writes_all_land_and_are_recalled(both: Brain) -> None:
    with both.bulk():
        for n in range(25):
            both.remember(f"Crate {n} holds {n} quince jars.", title=f"Crate {n}")
    assert both.count(kind="titled") >= 25
    hits = both.recall("crate 17 quince jars", mode="text")
    assert hits and hits[0].title == "Crate 17"


def test_bulk_keeps_the_writes_made_before_an_error(both: Brain) -> None:
    """A write acknowledged inside a bulk block stays when a later one fails: on files each is
    on disk when it returns, in PostgreSQL each is a savepoint the block commits."""
    with pytest.raises(InvalidInput), both.bulk():
        for n in range(3):
            both.remember(f"Crate {n} holds {n} quince jars.", title=f"Crate {n}")
        both.remember("Crate 9 holds nothing.", title="Crate 9", kind="nonsense")
    titles = {note.title for note in both.list(kind="titled")}
    assert {"Crate 0", "Crate 1", "Crate 2"} <= titles and "Crate 9" not in titles
    hits = both.recall("crate 1 quince jars", mode="text")
    assert hits and hits[0].title == "Crate 1"
    both.remember("Crate 3 holds three jars.", title="Crate 3")  # and the vault writes on
    assert "Crate 3" in {note.title for note in both.list(kind="titled")}


def test_a_connected_documents_chunks_are_recalled_expanded_and_forgotten(
    storage: Opener, vault: Path, tmp_path: Path, clock: FixedClock
) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "guide.md").write_text(GUIDE)
    seeding = open_vault(vault, clock=clock)  # connectors read folders of this machine
    try:  # what `connect` does once the person typed the code shown at the terminal
        decl = conn.Declared("papers", str(folder), partition=seeding.partition)
        ident = conn.identity(folder)
        assert ident is not None
        with seeding._context.lock.hold():
            documents.confirm(seeding._context, decl, ident)
        seeding.sync()
    finally:
        seeding.close()
    brain = storage()
    [doc] = brain.list(kind="document")
    chunks = brain._context.caches.catalog.below(doc.id)
    assert chunks and all(c.kind == "chunk" for c in chunks)
    hits = brain.recall("quince tomatoes stake", mode="text")
    assert hits[0].id.startswith(doc.id + "#")
    assert "quince" in brain.expand(hits[0].id).body
    brain.forget(doc.id)
    assert brain._context.caches.catalog.below(doc.id) == []
    with pytest.raises(NotFound):
        brain.expand(doc.id)


def test_correct_history_and_forgetting_one_version(both: Brain) -> None:
    first = both.remember("The boiler is serviced in June.", title="Boiler")
    second = both.correct(first.id, "The boiler is serviced in October.")
    assert [n.id for n in both.history(second.id)] == [first.id, second.id]
    both.forget(second.id, mode="version")
    assert "June" in both.expand(first.id).body
    with pytest.raises(NotFound):
        both.expand(second.id)


def test_relations_made_read_and_removed(both: Brain) -> None:
    a = both.remember("The greenhouse needs a new pane.", title="Greenhouse")
    b = both.remember("Glass comes from the yard in town.", title="Glass")
    both.relate(a.id, "extends", b.id)
    links = both.links(a.id)
    assert [(r.type, r.target) for r in links.outgoing] == [("extends", b.id)]
    assert [r.source for r in both.links(b.id).incoming] == [a.id]
    both.unrelate(a.id, "extends", b.id)
    assert both.links(a.id).outgoing == ()


def test_a_private_note_is_listed_for_the_person_and_never_for_a_model(both: Brain) -> None:
    note = both.remember("The safe code is 4812.", title="Safe code")
    both.set_field(note.id, "visibility", "private")
    assert note.id in {r.id for r in both.list()}
    model = both.at(both.partition, for_model=True)
    assert note.id not in {
        r.id for r in model._context.caches.catalog.visible_notes(both.partition)
    }
    assert all(h.id != note.id for h in model.recall("safe code", mode="text"))


def test_list_and_count_agree(both: Brain) -> None:
    for n in range(4):
        both.remember(f"Hive {n} swarmed in spring.", title=f"Hive {n}")
    rows = both.list(kind="titled", limit=3)
    assert len(rows) == 3
    assert both.count(kind="titled") == 4


@pytest.mark.parametrize("kind", ["fact", "titled\x00"])
def test_list_and_count_refuse_a_kind_no_note_has_naming_it(both: Brain, kind: str) -> None:
    """On PostgreSQL a NUL in the filter was the database's own error, not the model's."""
    for ask in (both.list, both.count):
        with pytest.raises(InvalidInput, match="unknown kind"):
            ask(kind=kind)
    assert both.list(kind="singleton", limit=1)  # the session goes on after the refusal


def test_a_node_holds_its_sub_nodes_and_only_them_whatever_its_name(both: Brain) -> None:
    under = {
        node: both.remember(f"Apples of {node} are ripe.", node=f"{node}/Orchard").id
        for node in ("a_b", "axb", "100%", "1000")
    }
    for node, note in under.items():  # "_" and "%" in a folder's name mean themselves
        assert [r.id for r in both.list(node=node)] == [note]
        assert both.count(node=node) == 1
        assert [h.id for h in both.recall("ripe apples", node=node, mode="text")] == [note]
        assert [h.id for h in both.recall("ripe apples", scope=node, mode="text")] == [note]


def test_the_storage_says_what_it_can_do(both: Brain) -> None:
    caps = both._context.capabilities
    on_files = type(both._context.store).__module__.startswith("brain._vault")
    assert (caps.folder, caps.hand_edits, caps.connectors, caps.cold_tier, caps.local_only) == (
        (on_files,) * 5
    )


def test_neighbourhoods_read_at_once_are_each_read_alone(
    storage: Opener, vault: Path, clock: FixedClock
) -> None:
    """A recall reads its candidates' neighbours in one statement (`written_near_each`); each
    memory's are those `written_near` finds for it alone, on both storages, with filters."""
    from brain._indexes.fulltext import Filters
    from brain._recall.neighbours import Neighbourhood

    with open_vault(vault, clock=clock) as seeding:  # the vault's files, then either storage
        ids = [seeding.remember(f"Turn {n} of the harbour talk.").id for n in range(9)]
        seeding.forget(ids[4])  # a gap the filters step over
    brain = storage()
    catalog = brain._context.caches.catalog
    briefs = catalog.briefs([i for i in ids if i != ids[4]])
    hood = Neighbourhood(catalog)
    for filters in (Filters(), Filters(ids=frozenset(ids[2:7])), Filters(partition="nowhere")):
        asks = [hood._asks(b, filters) for b in briefs.values()]
        together = catalog.written_near_each(asks, filters)
        alone = {a[0].id: catalog.written_near(*a, filters) for a in asks}
        assert together == alone
        assert any(before or after for before, after in alone.values()) or filters.partition


def test_a_stored_vector_reads_back_as_the_index_holds_it(both: Brain) -> None:
    """What neighbour blending reads (`stacked`) is the vector the index searches with: as
    the nearest to itself, at a cosine of 1 (PostgreSQL sends it in pgvector's binary form)."""
    import numpy as np

    notes = [
        both.remember(f"Crate {n} holds {n} quince jars by the {w} door.")
        for n, w in enumerate(["north", "south", "harbour"])
    ]
    both._context.flush()
    index = both._context.caches.vectors
    names, matrix = index.stacked([n.id for n in notes])
    assert names == [n.id for n in notes] and matrix.dtype == np.float32
    for name, vector in zip(names, matrix, strict=True):
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3  # files keep half precision
        best, score = index.search(vector, 1)[0]
        assert best == name and score > 0.99


def test_a_node_named_in_another_case_is_the_folder_already_there(both: Brain) -> None:
    """'knowledge/projects' beside Knowledge/Projects would be one folder on macOS and Windows:
    a new note goes to the folder as it is spelled."""
    first = both.remember("The shed needs paint", node="Knowledge/Projects")
    second = both.remember("Buy primer for the shed", node="knowledge/projects")
    third = both.remember("Sand the door first", node="KNOWLEDGE/projects/Shed")  # a new sub-node
    assert second.node == first.node == "Knowledge/Projects"
    assert third.node == "Knowledge/Projects/Shed"
    listed = both.list(node="Knowledge/Projects")
    assert {n.id for n in listed} == {first.id, second.id, third.id}
    assert not both.list(node="knowledge")  # no second folder was made


def test_a_name_in_another_case_matches_one_folder_only() -> None:
    from brain._vault.paths import spelled_as

    assert spelled_as(["Knowledge", "Master"], "knowledge") == "Knowledge"
    assert spelled_as(["Knowledge", "knowledge"], "knowledge") == "knowledge"  # its own first
    assert spelled_as(["Work", "WORK"], "work") is None  # which of two? neither: as written
    assert spelled_as(["Knowledge"], "Garden") is None
