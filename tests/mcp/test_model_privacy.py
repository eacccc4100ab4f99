"""A model over MCP learns nothing of notes hidden from it and cannot change the person's
settings: the gate, remember, forget, diagnostics and the partition tools (issue 13, 2 and 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain.testing import tree_digest
from tests.mcp.conftest import call, refused, run

DAY = "2026-12-02"


def _person(vault: Path, clock: FixedClock) -> Brain:
    return open_vault(vault, clock=clock)


def _gate_to_diary(client: Client, seen: list[str]) -> Any:
    async def go() -> None:
        for step, args in (
            ("session", {}),
            ("addendum", {"text": "x"}),
            ("maintain", {}),
            ("remarks", {}),
        ):
            seen.append(json.dumps(await call(client, step, args)))

    return go()


@pytest.mark.parametrize("visibility", ["private", "local-only"])
def test_the_gate_never_writes_into_a_hidden_diary_nor_names_it(
    brain: Brain, vault: Path, clock: FixedClock, visibility: str
) -> None:
    person = _person(vault, clock)
    diary = person.remember("My own words about today.", node="LLM/Diary")
    person.set_field(diary.id, "visibility", visibility)
    person.close()
    shared = vault / f"main/LLM/Diary/{DAY}.md"
    path = vault / "local-only" / shared.relative_to(vault) if visibility != "private" else shared
    before = path.read_bytes()
    seen: list[str] = []

    async def scenario(client: Client) -> None:
        await _gate_to_diary(client, seen)
        text = await refused(client, "diary", {"text": "The model's diary entry."})
        seen.append(text)
        assert "kept by the person" in text
        # The gate stays where it was: nothing was written for the diary step.
        assert "the step due is diary" in await refused(client, "close")

    run(brain, scenario)
    assert path.read_bytes() == before
    assert path == shared or not shared.exists()  # no second diary beside a local-only one
    assert not any(diary.id in s for s in seen)
    assert "The model's diary entry." not in (vault / f"main/Memory/Sessions/{DAY}.md").read_text()


def test_a_private_session_note_closes_the_gate_and_stays_unread(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    person = _person(vault, clock)
    session = person.remember("What I did today, for me.", node="Memory/Sessions")
    person.set_field(session.id, "visibility", "private")
    person.close()
    before = tree_digest(vault)

    async def scenario(client: Client) -> None:
        text = await refused(client, "session")
        assert "kept by the person" in text and session.id not in text

    run(brain, scenario)
    assert tree_digest(vault) == before


def test_remember_under_a_hidden_title_makes_the_models_own_note(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    person = _person(vault, clock)
    secret = person.remember("1234", title="Bank pin")
    person.set_field(secret.id, "visibility", "private")
    person.close()
    secret_file = vault / secret.path
    before = secret_file.read_bytes()

    async def scenario(client: Client) -> None:
        made = await call(client, "remember", {"text": "call the bank", "title": "Bank pin"})
        again = await call(client, "remember", {"text": "and ask", "title": "Bank pin"})
        assert made["id"] != secret.id and again["id"] == made["id"]  # its own note, deduped
        assert secret.id not in json.dumps(made) and "1234" not in json.dumps(made)
        assert "Bank pin 2" not in json.dumps(made)  # the file name would say one is taken

    run(brain, scenario)
    assert secret_file.read_bytes() == before


def test_a_private_singleton_is_refused_without_a_word_of_it(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    person = _person(vault, clock)
    bio = person.remember(
        "Ana, born 1980 in Porto.", kind="singleton", node="Master", title="Biography"
    )
    person.set_field(bio.id, "visibility", "private")
    person.close()
    before = tree_digest(vault)

    async def scenario(client: Client) -> None:
        args = {
            "text": "Ana likes tea",
            "kind": "singleton",
            "node": "Master",
            "title": "Biography",
        }
        text = await refused(client, "remember", args)
        assert bio.id not in text and "Porto" not in text

    run(brain, scenario)
    assert tree_digest(vault) == before


def test_remember_a_private_threads_title_starts_a_thread_of_its_own(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    person = _person(vault, clock)
    person.remember("Secret negotiation", kind="thread", title="Merger")
    thread = person.list(kind="thread")[0]
    person.set_field(thread.id, "visibility", "private")
    person.close()
    folder = vault / "main/Memory/Threads/Merger"
    before = sorted(p.name for p in folder.iterdir())

    async def scenario(client: Client) -> None:
        made = await call(
            client,
            "remember",
            {"text": "Plan the merger talk", "kind": "thread", "title": "Merger"},
        )
        # What a model gets when no thread of that title exists: a new thread index.
        assert made["kind"] == "thread" and made["id"] != thread.id
        assert thread.id not in json.dumps(made)
        again = await call(
            client, "remember", {"text": "More", "kind": "thread", "title": "Merger"}
        )
        assert again["kind"] == "dated" and again["node"] == made["node"] != "Memory/Threads/Merger"

    run(brain, scenario)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_forget_never_removes_a_hidden_part_of_a_note(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    person = _person(vault, clock)
    index = person.remember("Open question", kind="thread", title="Garden")
    child = person.remember("A private day of it", kind="thread", title="Garden")
    person.set_field(child.id, "visibility", "private")
    person.close()
    before = tree_digest(vault)

    async def scenario(client: Client) -> None:
        text = await refused(client, "forget", {"note_id": index.id})
        assert child.id not in text and "private day" not in text

    run(brain, scenario)
    assert tree_digest(vault) == before


def test_diagnostics_and_maintain_count_nothing_private(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    person = _person(vault, clock)
    secret = person.remember("a private matter", title="Secret plans")
    person.set_field(secret.id, "visibility", "private")
    person.close()
    with (vault / secret.path).open("a") as f:
        f.write("\nEdited by hand.\n")
    (vault / "main/Knowledge/Inbox/Broken.md").write_text("---\ntitle: [unclosed\n---\nx\n")

    async def scenario(client: Client) -> None:
        health = await call(client, "diagnostics")
        assert health["files_out_of_step"] == 1  # the broken file, not the private edit
        await call(client, "session")
        await call(client, "addendum", {"text": "x"})
        kept = await call(client, "maintain")
        assert kept["broken_notes"] == 1  # a count: a file name is a title
        assert kept["caught_up"] == {"changed": 0}

    run(brain, scenario)


def test_a_model_cannot_rename_or_archive_the_default_partition(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    settings = (vault / "brain.yaml").read_bytes()
    before = tree_digest(vault)

    async def scenario(client: Client) -> None:
        for tool, args in (
            ("partition_rename", {"name": "main", "new_name": "mine"}),
            ("partition_archive", {"name": "main"}),
        ):
            assert "only they can" in await refused(client, tool, args)
        # Any other partition is the model's to manage.
        await call(client, "partition_create", {"name": "work"})
        await call(client, "partition_rename", {"name": "work", "new_name": "job"})
        await call(client, "partition_archive", {"name": "job"})

    run(brain, scenario)
    assert (vault / "brain.yaml").read_bytes() == settings
    assert (vault / "main").is_dir() and not (vault / "main/.archived").exists()
    assert before != tree_digest(vault)  # job/ was made
    person = _person(vault, clock)
    try:
        assert person.remember("still mine").path.startswith("main/")
    finally:
        person.close()


def test_a_hidden_correction_flags_nothing_for_a_model(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    async def scenario(client: Client) -> None:
        wrong = await call(client, "remember", {"text": "Launch is in May", "title": "Launch"})
        sibling = await call(client, "remember", {"text": "Budget is 5k", "title": "Budget"})
        person = _person(vault, clock)
        fix = person.correct(wrong["id"], "Launch is in March, a private matter")
        person.set_field(fix.id, "visibility", "private")
        assert person.recall("budget", mode="text")[0].flags  # the person sees the suspicion
        person.close()
        hits = (await call(client, "recall", {"query": "budget"}))["hits"]
        assert [h["flags"] for h in hits if h["id"] == sibling["id"]] == [[]]

    run(brain, scenario)


def test_expand_never_shows_a_relation_to_a_hidden_note(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    person = _person(vault, clock)
    shared = person.remember("Gardening plan", title="Garden")
    secret = person.remember("Neighbour dispute", title="Dispute")
    other = person.remember("Compost bins", title="Compost")
    person.relate(shared.id, "references", secret.id)
    person.relate(shared.id, "references", other.id)
    person.set_field(secret.id, "visibility", "private")
    person.close()

    async def scenario(client: Client) -> None:
        note = await call(client, "expand", {"note_id": shared.id})
        assert [r["target"] for r in note["relations"]] == [other.id]

    run(brain, scenario)
