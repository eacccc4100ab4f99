"""The catalog's briefs held in memory (Catalog.hold_briefs) stay what the catalog says: after
this connection's writes, another connection's, another process's, a rollback, a pruned change
log and a cleared catalog. A model's recall never sees a note made private elsewhere."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._indexes import catalog as catalogs
from brain._indexes import held as helds
from brain._indexes.catalog import Catalog
from brain._indexes.fulltext import Filters
from brain._indexes.held import Held
from brain._indexes.queries import Queries
from brain._indexes.rows import ObjectRow
from brain._recall import neighbours

NODES = ("Garden", "Home", "Work/Projects")


def _row(n: int, node: str = "Garden", **fields: str) -> ObjectRow:
    oid = f"01J{n:023d}"  # ULID-shaped: ids in write order
    values = {
        "id": oid,
        "note_id": oid,
        "path": f"{node}/{n}.md",
        "partition": "main",
        "node": node,
        "title": f"Note {n}",
        "norm_title": f"note {n}",
        "kind": "memory",
        "status": "active",
        "visibility": "normal",
        "created": "2026-01-01T00:00:00Z",
        "touched": "2026-01-01T00:00:00Z",
        "parent": None,
        "supersedes": None,
        "defining": None,
        "tags": (),
        "source": {},
        "heading_path": (),
        "text_hash": str(n),
    }
    values.update(fields)
    return ObjectRow(**values)  # type: ignore[arg-type]


def _check(catalog: Catalog) -> None:
    """The held briefs and write order are what reading the whole catalog gives now, and
    each memory's neighbours are what the catalog's own query gives."""
    held = catalog.held()
    assert held is not None
    whole = Held.of(catalog.every_brief_row(), 0)
    assert held.briefs == whole.briefs
    assert {k: v for k, v in held.order.items() if v} == whole.order
    shown = Filters(exclude_status=("superseded",), visibility=("normal",))
    for brief in list(whole.briefs.values())[::7]:
        low, high = "0", "9"  # every memory of the node is near enough here
        assert held.near(brief, low, high, 4, shown) == catalog.written_near(
            brief, low, high, 4, shown
        )


def test_held_briefs_follow_every_writer(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    mine, other = Catalog(path), Catalog(path)  # two connections: this process and another
    mine.hold_briefs()
    with mine.transaction():
        mine.put_objects(_row(n, NODES[n % 3]) for n in range(60))
    _check(mine)
    rng = random.Random(7)
    for step in range(40):
        writer = mine if step % 2 else other
        n = rng.randrange(90)
        with writer.transaction():
            if step % 5 == 0:
                writer.drop_note(_row(n).id)
            else:  # a new memory, or one changed: superseded, private, moved to another node
                status = rng.choice(("active", "superseded"))
                visibility = rng.choice(("normal", "private"))
                writer.put_objects(
                    [_row(n, rng.choice(NODES), status=status, visibility=visibility)]
                )
        _check(mine)
    # Many at once in one node (its order sorted again, not one insertion at a time).
    with other.transaction():
        other.put_objects(_row(n, "Garden") for n in range(100, 200))
    _check(mine)
    # Another process.
    script = (
        "import sys\nfrom pathlib import Path\nfrom brain._indexes.catalog import Catalog\n"
        "c = Catalog(Path(sys.argv[1]))\n"
        "with c.transaction():\n    c.drop_note(sys.argv[2])\n"
    )
    subprocess.run([sys.executable, "-c", script, str(path), _row(150).id], check=True)
    assert _row(150).id not in (mine.held() or Held({}, {}, 0)).briefs
    _check(mine)
    other.close()
    mine.close()


def test_inside_a_transaction_the_catalog_is_read_and_a_rollback_leaves_nothing_held(
    tmp_path: Path,
) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite")
    catalog.hold_briefs()
    with catalog.transaction():
        catalog.put_objects([_row(1), _row(2)])
    assert catalog.held() is not None
    with pytest.raises(RuntimeError), catalog.transaction():
        catalog.put_objects([_row(3)])
        assert catalog.held() is None  # uncommitted writes: not from memory
        raise RuntimeError("the write failed")
    held = catalog.held()
    assert held is not None and set(held.briefs) == {_row(1).id, _row(2).id}
    _check(catalog)
    catalog.close()


def test_held_briefs_are_read_whole_when_the_log_cannot_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "catalog.sqlite"
    mine, other = Catalog(path), Catalog(path)
    mine.hold_briefs()
    with other.transaction():
        other.put_objects(_row(n) for n in range(10))
    _check(mine)
    # More changes than a catch-up takes.
    monkeypatch.setattr(helds, "CATCH_UP_MOST", 5)
    with other.transaction():
        other.put_objects(_row(n, "Home") for n in range(10, 30))
    _check(mine)
    # The log pruned past what was held (the catalog compacted by `brain sleep`).
    monkeypatch.setattr(catalogs, "CHANGES_KEPT", 2)
    with other.transaction():
        for n in range(12):
            other.drop_note(_row(n).id)
    other.compact()
    _check(mine)
    # Cleared for a reindex, then filled again.
    with other.transaction():
        other.clear()
        other.put_objects([_row(500)])
    _check(mine)
    held = mine.held()
    assert held is not None and list(held.briefs) == [_row(500).id]
    other.close()
    mine.close()


def test_a_model_never_recalls_a_note_made_private_by_another_process(
    vault: Path, clock: FixedClock
) -> None:
    daemon = open_vault(vault, clock=clock)
    daemon._context.catch_up_every = 3600.0  # it does not walk the files: the catalog tells it
    daemon._context.caches.catalog.hold_briefs()
    note = daemon.remember("The otters nest under the old boathouse", node="Garden")
    model = daemon.at(for_model=True)
    assert [h.id for h in model.recall("otters boathouse")] == [note.id]
    elsewhere = open_vault(vault, clock=clock)  # another process's writes, to the same catalog
    elsewhere.set_field(note.id, "visibility", "private")
    elsewhere.close()
    assert model.recall("otters boathouse") == []
    assert [h.id for h in daemon.recall("otters boathouse")] == [note.id]  # the person's own
    daemon.close()


def test_neighbours_from_memory_are_the_catalogs(vault: Path, clock: FixedClock) -> None:
    """A recall's neighbour context is the same from the held briefs as from the catalog."""
    brain = open_vault(vault, clock=clock)
    for n in range(12):
        brain.remember(f"Turn {n} of the talk about the heat pump and its noise", node="Home")
        clock.set(clock.now() + timedelta(seconds=5))
    from_catalog = brain.recall("heat pump noise", k=10, explain=True)
    brain._context.caches.catalog.hold_briefs()
    from_memory = brain.recall("heat pump noise", k=10, explain=True)
    assert [(h.id, h.score) for h in from_memory] == [(h.id, h.score) for h in from_catalog]
    assert neighbours.WINDOW > 0 and from_memory
    brain.close()


def test_a_hand_edit_the_recall_catches_up_with_is_in_its_briefs(
    vault: Path, clock: FixedClock
) -> None:
    """The recall takes the held briefs after its own catch-up: a note marked superseded, or
    made private, by hand is out of that very recall."""
    brain = open_vault(vault, clock=clock)
    brain._context.caches.catalog.hold_briefs()
    note = brain.remember("The otters nest under the old boathouse", node="Garden")
    brain.remember("Herons fish by the boathouse at dawn", node="Garden")
    model = brain.at(for_model=True)
    for mode in ("hybrid", "vector", "text"):
        assert note.id in [h.id for h in model.recall("otters boathouse", mode=mode)]
    path = brain.root / note.path
    text = path.read_text()
    path.write_text(text.replace("status: active", "status: superseded"))
    for mode in ("vector", "hybrid", "text"):  # superseded: not recalled unless asked for
        assert note.id not in [h.id for h in brain.recall("otters boathouse", mode=mode)], mode
    path.write_text(text.replace("status: active", "status: active\nvisibility: private"))
    for mode in ("vector", "hybrid", "text"):
        assert note.id not in [h.id for h in model.recall("otters boathouse", mode=mode)], mode
    assert note.id in [h.id for h in brain.recall("otters boathouse")]  # the person's own
    brain.close()


def test_a_stale_copy_of_the_briefs_still_shows_a_model_nothing_private(
    vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last guard: a recall's hits are checked against the catalog's rows as they are at
    its end, so even briefs held from before a note went private show it to no model."""
    brain = open_vault(vault, clock=clock)
    brain._context.caches.catalog.hold_briefs()
    note = brain.remember("The otters nest under the old boathouse", node="Garden")
    stale = brain._context.caches.catalog.held()
    assert stale is not None
    kept = Held(dict(stale.briefs), {k: list(v) for k, v in stale.order.items()}, stale.seq)
    brain.set_field(note.id, "visibility", "private")
    monkeypatch.setattr(Catalog, "held", lambda self: kept)  # as if the log had been missed
    model = brain.at(for_model=True)
    for mode in ("vector", "hybrid"):
        assert note.id not in [h.id for h in model.recall("otters boathouse", mode=mode)], mode
    brain.close()


def test_briefs_read_apart_are_taken_once_read_and_caught_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon reads them whole on a thread of its own: until that is done a recall reads
    the catalog, and what was written meanwhile is caught up when they are taken."""
    catalog = Catalog(tmp_path / "catalog.sqlite")
    with catalog.transaction():
        catalog.put_objects(_row(n) for n in range(10))
    reading, real = threading.Event(), helds.current

    def slow(where: Queries, held: Held | None) -> Held:
        if threading.current_thread().name == "brain-held":
            assert reading.wait(10)
        return real(where, held)

    monkeypatch.setattr(helds, "current", slow)
    catalog.hold_briefs(apart=True)
    assert catalog.held() is None  # not read yet: the catalog is read
    with catalog.transaction():
        catalog.put_objects([_row(3, "Home", status="superseded"), _row(50)])
    reading.set()
    thread = catalog._reading
    assert thread is not None
    thread.join(10)
    _check(catalog)  # taken, with the writes made while it was read
    catalog.close()
