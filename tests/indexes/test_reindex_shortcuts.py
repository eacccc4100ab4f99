"""A reindex's shortcuts keep what the slow way gave: node statistics summed in memory equal
those kept note by note, walked files are read without resolving paths and never through a
link, and a reindex stopped halfway leaves statistics that are rebuilt."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._vault import store as store_module

TOPICS = {
    "Knowledge/Domains/Cooking": ["Pesto wants basil, garlic and pine nuts", "Risotto by Marco"],
    "Knowledge/Domains/Infra": ["The NAS backs up at night", "Grafana alerts go to Ana"],
    "Memory/Facts": ["Otters hold hands while sleeping", "Herons stand in the shallows"],
}


def _fill(brain: Brain, clock: FixedClock) -> None:
    for n in range(4):
        for node, texts in TOPICS.items():
            for text in texts:
                brain.remember(f"{text} ({n})", node=node)
        clock.set(clock.now() + timedelta(days=3))


def _stats(vault: Path) -> dict[str, list[tuple[object, ...]]]:
    db = sqlite3.connect(vault / ".brain" / "catalog.sqlite")
    try:
        return {
            table: sorted(db.execute(f"SELECT * FROM {table}").fetchall())
            for table in ("node_notes", "node_counts", "node_terms")
        }
    finally:
        db.close()


def test_statistics_summed_by_a_reindex_equal_those_kept_note_by_note(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    _fill(brain, clock)
    brain.forget(brain.recall("Grafana alerts", mode="text")[0].id)
    incremental = _stats(vault)
    assert incremental["node_terms"] and incremental["node_counts"]
    brain.reindex()
    assert _stats(vault) == incremental


def test_reindex_resolves_no_path_and_reads_no_link(
    brain: Brain, vault: Path, clock: FixedClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(brain, clock)
    first = brain.reindex()
    outside = tmp_path / "outside.md"
    outside.write_text("---\ntitle: Leak\n---\nsecret ferret\n")
    (vault / "main" / "Knowledge" / "Leak.md").symlink_to(outside)
    resolved: list[str] = []
    real = store_module.inside

    def counting(root: Path, relative: str) -> Path:
        resolved.append(relative)
        return real(root, relative)

    monkeypatch.setattr(store_module, "inside", counting)
    assert brain.reindex() == first  # the link is not one of them
    assert not [rel for rel in resolved if rel.endswith(".md")]  # no note's path resolved
    assert brain.recall("secret ferret", mode="text") == []


def test_a_walked_file_swapped_for_a_link_is_not_read(brain: Brain, vault: Path) -> None:
    note = brain.remember("Quokkas smile at tourists", title="Quokka")
    secret = vault.parent / "secret.md"
    secret.write_text("---\ntitle: Secret\n---\nnot for the vault\n")
    path = vault / note.path
    path.unlink()
    path.symlink_to(secret)  # after a walk listed it, before it is read
    with pytest.raises(FileNotFoundError):
        brain._context.store.read_walked(note.path)
    (vault / "main" / "Gone.md").touch()
    (vault / "main" / "Gone.md").unlink()
    with pytest.raises(FileNotFoundError):
        brain._context.store.read_walked("main/Gone.md")


@pytest.mark.parametrize("where", ["files", "sums"])
def test_a_reindex_stopped_halfway_leaves_statistics_that_are_rebuilt(
    brain: Brain, vault: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    from brain._indexes.nodestats import NodeStats

    _fill(brain, clock)
    before = _stats(vault)
    calls = 0
    real = brain._context._index_file

    def stop_halfway(rel: str, *, walked: bool = False) -> str:
        nonlocal calls
        calls += 1
        if calls == 10:
            raise KeyboardInterrupt
        return real(rel, walked=walked)

    def stop_at_the_sums(self: NodeStats, tally: object) -> None:
        raise KeyboardInterrupt  # after every file, before the sums are written

    if where == "files":
        monkeypatch.setattr(brain._context, "_index_file", stop_halfway)
    else:
        monkeypatch.setattr(NodeStats, "_write", stop_at_the_sums)
    with pytest.raises(KeyboardInterrupt):
        brain.reindex()
    brain.close()
    monkeypatch.undo()
    again = open_vault(vault, clock=clock, embedder=None)
    try:
        again.recall("pesto", mode="text")  # opening repairs what the stop left
        assert _stats(vault) == before
    finally:
        again.close()
