"""An ordinary assistant over weeks: facts said again, facts that change, long memories."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from mcp import Client

from brain._brain import Brain
from brain._clock import FixedClock
from tests.mcp.conftest import call, run

DARK = "The user prefers dark mode in every editor."
LONG = "The Falcon plan covers budgets, hiring and the billing migration. " * 20


def test_a_fact_said_again_in_another_case_or_without_its_full_stop_is_the_same_memory(
    brain: Brain, clock: FixedClock
) -> None:
    said: list[dict[str, str]] = []

    async def scenario(client: Client) -> None:
        for day, text in enumerate([DARK, "the user prefers  dark mode in every editor", DARK]):
            clock.set(clock.now() + timedelta(days=3 * day))
            said.append(await call(client, "remember", {"text": text}))
        found = await call(client, "recall", {"query": "dark mode editor", "k": 10})
        assert [h["id"] for h in found["hits"]].count(said[0]["id"]) == 1
        assert len(found["hits"]) == 1

    run(brain, scenario)
    assert [s["outcome"] for s in said] == ["created", "unchanged", "unchanged"]
    assert {s["id"] for s in said} == {said[0]["id"]}


def test_a_fact_said_in_other_words_is_not_taken_for_the_same_memory(brain: Brain) -> None:
    async def scenario(client: Client) -> None:
        first = await call(client, "remember", {"text": DARK})
        other = await call(client, "remember", {"text": DARK.replace("dark", "light")})
        assert (other["outcome"], other["id"] != first["id"]) == ("created", True)

    run(brain, scenario)


def test_a_recall_hit_says_when_its_memory_holds_more_than_the_snippet(brain: Brain) -> None:
    async def scenario(client: Client) -> None:
        await call(client, "remember", {"text": LONG, "title": "Falcon plan"})
        await call(client, "remember", {"text": "The Falcon budget is small."})
        found = await call(client, "recall", {"query": "Falcon budget", "k": 5})
        more = {h["title"]: (h["more"], len(h["snippet"])) for h in found["hits"]}
        assert more["Falcon plan"][0] is True and more["Falcon plan"][1] <= 200
        assert more["The Falcon budget is small."] == (False, len("The Falcon budget is small."))

    run(brain, scenario)


def test_the_tools_tell_a_model_how_to_keep_a_changed_fact_and_read_a_long_one(
    brain: Brain, vault: Path
) -> None:
    async def scenario(client: Client) -> None:
        tools = {
            t.name: " ".join((t.description or "").split())
            for t in (await client.list_tools()).tools
        }
        assert "no tool to edit a memory" in tools["remember"]
        assert "the newer `updated` is current" in tools["recall"]
        assert "`more`" in tools["recall"] and "`expand`" in tools["recall"]
        assert "Only when the person asks" in tools["forget"]

    run(brain, scenario)
