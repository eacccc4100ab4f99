"""Forgetting a note with children (a document and its chunks, a thread and its days)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._indexes.caches import IndexObject
from brain._indexes.fulltext import Filters, TextDoc
from brain._model import Note
from brain.testing import T0, tree_digest

_register()
ROOT = Path(__file__).resolve().parents[2]

DOCUMENT = """---
id: 01JE2Z3K4M5N6P7Q8R9S0T1V2W
title: Quarterly report
kind: document
status: active
created: 2026-11-30T09:00:00Z
source: {via: connector, uri: 'file:///tmp/report.md'}
---
# Quarterly report

Revenue grew in the zanzibarian market.
"""
CHILD = """---
id: 01JE2Z3K4M5N6P7Q8R9S0T1V2X
title: Report appendix
kind: titled
status: active
created: 2026-11-30T09:00:00Z
parent: 01JE2Z3K4M5N6P7Q8R9S0T1V2W
---
The appendix lists quokkaberry suppliers.
"""
DOC_ID = "01JE2Z3K4M5N6P7Q8R9S0T1V2W"
CHILD_ID = "01JE2Z3K4M5N6P7Q8R9S0T1V2X"


def document(brain: Brain, vault: Path) -> None:
    """A document note, a child note by `parent`, and two chunk objects inside the document."""
    folder = vault / "main/Knowledge/Docs"
    folder.mkdir(parents=True)
    (folder / "Quarterly report.md").write_text(DOCUMENT)
    (folder / "Report appendix.md").write_text(CHILD)
    brain._context.catch_up()
    # Chunks are objects `<doc>#<n>` of the document note in every cache (no files of their own).
    row = brain._context.caches.catalog.get(DOC_ID)
    assert row is not None
    texts = ((1, "Chunk about the marmalade pipeline."), (2, "Chunk on zebrafish."))
    chunks = [
        IndexObject(replace(row, id=f"{DOC_ID}#{n}", parent=DOC_ID), text) for n, text in texts
    ]
    with brain._context.lock.hold():
        brain._context.caches.catalog.put_objects([c.row for c in chunks])
        brain._context.caches.fulltext.upsert(
            [
                TextDoc(
                    c.row.id,
                    DOC_ID,
                    "main",
                    c.row.node,
                    "active",
                    "normal",
                    "document",
                    c.row.title,
                    c.text,
                )
                for c in chunks
            ]
        )


def search(brain: Brain, phrase: str) -> list[tuple[str, float]]:
    brain._context.flush()
    return brain._context.caches.fulltext.search(phrase, 10, Filters(exclude_status=()))


def test_forget_a_document_removes_it_its_chunks_and_children_everywhere(
    brain: Brain, vault: Path
) -> None:
    document(brain, vault)
    heard: list[str] = []

    def listener(_added: Sequence[IndexObject], removed: Sequence[str]) -> None:
        heard.extend(removed)

    brain._context.caches.listeners.append(listener)  # how the vector cache follows every change
    plan = brain.forget_plan(DOC_ID)
    assert {r.id for r in plan.remove} == {DOC_ID, CHILD_ID}
    expected = {*brain._context.caches.catalog.object_ids_of(DOC_ID), CHILD_ID}
    assert expected >= {DOC_ID, f"{DOC_ID}#1", f"{DOC_ID}#2", CHILD_ID}
    removed = brain.forget(DOC_ID)
    assert set(removed) == expected and set(heard) == expected
    assert list((vault / "main/Knowledge").rglob("*report*.md")) == []
    assert not (vault / "main/Knowledge/Docs").exists()
    assert brain._context.caches.catalog.count("note_id IN (?, ?)", [DOC_ID, CHILD_ID]) == 0
    for phrase in ("marmalade pipeline", "zebrafish", "zanzibarian", "quokkaberry"):
        assert search(brain, phrase) == [], phrase
        assert brain.recall(phrase) == []
    assert brain.doctor().ok


def thread(brain: Brain, clock: FixedClock) -> Note:
    index = brain.remember("Planning the garden", kind="thread", title="Garden")
    for day in (1, 2):
        clock.set(T0 + timedelta(days=day))
        brain.remember(f"Planted row {day} of tomatillos", kind="thread", title="Garden")
    return index


def test_forget_a_thread_removes_its_days(brain: Brain, clock: FixedClock, vault: Path) -> None:
    index = thread(brain, clock)
    assert len(brain.forget_plan(index.id).remove) == 3
    brain.forget(index.id)
    assert not (vault / "main/Memory/Threads/Garden").exists()
    assert brain.recall("tomatillos") == []


def test_cli_asks_before_removing_more_than_one_note(
    cli: CliRunner, brain: Brain, clock: FixedClock, vault: Path
) -> None:
    index = thread(brain, clock)
    before = tree_digest(vault)
    res = cli.invoke(app, ["forget", index.id])  # no terminal, no --yes
    assert res.exit_code == 2 and "removes 3 notes" in res.stderr and "--yes" in res.stderr
    assert tree_digest(vault) == before
    res = cli.invoke(app, ["forget", index.id, "--yes", "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout)["removed"]) == 3
    assert not (vault / "main/Memory/Threads/Garden").exists()


def _on_a_terminal(vault: Path, args: list[str], answer: bytes) -> tuple[int, str]:
    """Run the real command with a pseudo-terminal as its stdin and stdout."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BRAIN_VAULT": str(vault)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "brain", *args],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        cwd=ROOT,
    )
    os.close(follower)
    seen = b""
    sent = False
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not sent and b"[y/N]" in seen:
            os.write(leader, answer)
            sent = True
    code = proc.wait(timeout=60)
    os.close(leader)
    return code, seen.decode(errors="replace")


def test_the_terminal_question_can_be_declined_or_accepted(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    index = thread(brain, clock)
    brain.close()
    before = tree_digest(vault)
    code, text = _on_a_terminal(vault, ["forget", index.id], b"n\n")
    assert code == 1 and "Forget these 3 notes?" in text and "Nothing forgotten" in text
    assert tree_digest(vault) == before
    code, text = _on_a_terminal(vault, ["forget", index.id], b"y\n")
    assert code == 0, text
    assert not (vault / "main/Memory/Threads/Garden").exists()


def test_revert_of_a_thread_index_keeps_its_days(brain: Brain, clock: FixedClock) -> None:
    index = thread(brain, clock)
    clock.set(T0 + timedelta(days=3))
    new = brain.correct(index.id, "Planning the vegetable garden")
    clock.set(T0 + timedelta(days=4))
    day = brain.remember("Watered the tomatillos", kind="thread", title="Garden")
    assert day.parent == new.id
    brain.forget(new.id)
    assert brain._context.get(day.id).parent == index.id
    assert len(brain.forget_plan(index.id).remove) == 4
