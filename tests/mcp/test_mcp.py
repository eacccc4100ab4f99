"""The MCP server through the SDK's own in-memory client: allowlist, strict schemas, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._mcp_server import TOOLS, build_server
from brain.testing import tree_digest
from tests.mcp.conftest import call, refused, run

ISSUE_TOOLS = (
    "remember recall forget expand list_memories diagnostics usage ping partition_create "
    "partition_list partition_use partition_rename partition_archive partition_restore session "
    "addendum maintain remarks diary close"
).split()

# Valid arguments for every tool (partition tools name a partition made in the test).
VALID: dict[str, dict[str, Any]] = {
    "remember": {"text": "note"},
    "recall": {"query": "note"},
    "forget": {"note_id": "01JE2Z3K4M5N6P7Q8R9S0T1V2W"},
    "expand": {"note_id": "01JE2Z3K4M5N6P7Q8R9S0T1V2W"},
    "list_memories": {},
    "diagnostics": {},
    "usage": {},
    "ping": {},
    "partition_create": {"name": "extra"},
    "partition_list": {},
    "partition_use": {"name": "main"},
    "partition_rename": {"name": "main", "new_name": "other"},
    "partition_archive": {"name": "main"},
    "partition_restore": {"name": "main"},
    "session": {},
    "addendum": {"text": "x"},
    "maintain": {},
    "remarks": {},
    "diary": {"text": "x"},
    "close": {},
}


def test_the_tools_are_exactly_the_allowlist(brain: Brain) -> None:
    assert sorted(TOOLS) == sorted(ISSUE_TOOLS) and len(TOOLS) == 20

    async def scenario(client: Client) -> None:
        listed = (await client.list_tools()).tools
        assert [t.name for t in listed] == list(TOOLS)
        for tool in listed:
            schema = tool.input_schema
            assert schema.get("additionalProperties") is False, tool.name
            props = set(schema.get("properties", {}))
            assert not props & {"visibility", "source", "partition", "path", "settings"}
            assert tool.description and len(tool.description) > 20, tool.name
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is not None
        by_name = {t.name: t for t in listed}
        assert by_name["recall"].annotations.read_only_hint is True  # type: ignore[union-attr]
        assert by_name["forget"].annotations.destructive_hint is True  # type: ignore[union-attr]
        assert by_name["remember"].input_schema["properties"]["text"]["maxLength"] == 65536

    run(brain, scenario)


def test_an_extra_argument_is_refused_by_every_tool(brain: Brain, vault: Path) -> None:
    before = tree_digest(vault)

    async def scenario(client: Client) -> None:
        for name in TOOLS:
            args = {**VALID[name], "visibility": "private"}
            text = await refused(client, name, args)
            assert text.startswith("unknown argument 'visibility'; allowed: "), text
            text = await refused(client, name, {**VALID[name], "source": {"via": "model"}})
            assert "source" in text

    run(brain, scenario)
    assert tree_digest(vault) == before


def test_bad_input_is_a_clear_tool_error_and_changes_nothing(brain: Brain, vault: Path) -> None:
    before = tree_digest(vault)

    async def scenario(client: Client) -> None:
        assert "Unknown tool" in await refused(client, "sleep", {})
        assert "Unknown tool" in await refused(client, "connect", {"path": "/"})
        assert "text" in await refused(client, "remember", {})
        assert "query" in await refused(client, "recall", {})
        assert "at most 65536" in await refused(client, "remember", {"text": "a" * 65537})
        # Under the schema's character limit but over the vault's byte limit: the core says so.
        core = await refused(client, "remember", {"text": "é" * 40000})
        assert "80000 bytes; the limit is 65536 bytes" in core
        assert "k" in await refused(client, "recall", {"query": "x", "k": 1000})
        assert "no partition 'nope'" in await refused(client, "partition_use", {"name": "nope"})
        assert "no partition" in await refused(client, "partition_archive", {"name": "nope"})
        assert "'/'" in await refused(client, "partition_create", {"name": "../escape"})
        assert "'.'" in await refused(client, "partition_create", {"name": ".brain"})
        assert "reserved" in await refused(client, "partition_create", {"name": "local-only"})
        assert "not a note id" in await refused(client, "expand", {"note_id": "../../etc"})
        unknown = await refused(client, "forget", {"note_id": "01JE2Z3K4M5N6P7Q8R9S0T1V2W"})
        assert "no note with id" in unknown
        # a hint that names the command line is told as the person's, not the model's to run
        assert "(for the person, at their terminal: check the id with `brain list`)" in unknown
        assert "node" in await refused(client, "remember", {"text": "x", "node": "../up"})
        assert "'~'" in await refused(client, "remember", {"text": "x", "node": "~/Notes"})
        assert "out of order" in await refused(client, "diary", {"text": "early"})

    run(brain, scenario)
    assert tree_digest(vault) == before
    assert not (vault / "escape").exists()


def test_remember_recall_expand_list_forget_with_mcp_provenance(brain: Brain) -> None:
    async def scenario(client: Client) -> None:
        note = await call(
            client,
            "remember",
            {"text": "The launch moved to March.", "title": "Launch date", "tags": ["launch"]},
        )
        hits = (await call(client, "recall", {"query": "when is the launch"}))["hits"]
        assert hits[0]["id"] == note["id"]
        assert set(hits[0]) >= {"id", "title", "snippet", "created", "source", "flags"}
        assert hits[0]["source"]["via"] == "mcp" and hits[0]["source"]["session"]
        whole = await call(client, "expand", {"note_id": note["id"]})
        assert whole["body"] == "The launch moved to March.\n"
        assert "visibility" not in whole
        listed = (await call(client, "list_memories", {"node": "Knowledge"}))["notes"]
        assert [n["id"] for n in listed] == [note["id"]]
        assert (await call(client, "forget", {"note_id": note["id"]}))["objects_removed"] == 1
        assert (await call(client, "recall", {"query": "launch"}))["hits"] == []
        assert (await call(client, "ping"))["partition"] == "main"

    run(brain, scenario)
    assert not list((brain.root / "main/Knowledge/Inbox").glob("Launch*"))


def test_one_session_id_per_server_process(vault: Path, clock: FixedClock) -> None:
    sessions = []
    for server in range(2):
        brain = open_vault(vault, clock=clock)

        async def scenario(client: Client, brain: Brain = brain, n: int = server) -> None:
            one = await call(client, "remember", {"text": f"one ({n})"})
            two = await call(client, "remember", {"text": f"two ({n})"})
            sessions.append(brain._context.get(two["id"]).source["session"])
            assert brain._context.get(one["id"]).source == {"via": "mcp", "session": sessions[-1]}

        run(brain, scenario)
        brain.close()
    assert sessions[0] != sessions[1]


def _secret_notes(vault: Path, clock: FixedClock) -> tuple[str, str, str]:
    """One private and one local-only note, set by the person; one normal note as a control."""
    person = open_vault(vault, clock=clock)
    private = person.remember("zebrafruit diary of a private matter", title="Zebra private")
    hidden = person.remember("zebrafruit kept on this machine only", title="Zebra local")
    normal = person.remember("zebrafruit shared thoughts", title="Zebra shared")
    person.set_field(private.id, "visibility", "private")
    person.set_field(hidden.id, "visibility", "local-only")
    person.set_field(private.id, "defining", "decision")
    person.remember("zebrafruit private thread", kind="thread", title="Zebra thread")
    thread = person.list(kind="thread")[0]
    person.set_field(thread.id, "visibility", "private")
    person.close()
    return private.id, hidden.id, normal.id


def test_private_and_local_only_notes_never_reach_any_tool(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    private, hidden, normal = _secret_notes(vault, clock)
    secrets = (
        private,
        hidden,
        "private matter",
        "this machine",
        "Zebra private",
        "Zebra local",
        "Zebra thread",
    )
    seen: dict[str, str] = {}

    async def scenario(client: Client) -> None:
        async def record(name: str, args: dict[str, Any] | None = None) -> Any:
            result = await client.call_tool(name, args or {})
            seen[f"{name} {args}"] = json.dumps(result.structured_content) + str(result.content)
            return result

        hits = (await record("recall", {"query": "zebrafruit", "k": 20})).structured_content
        assert [h["id"] for h in hits["hits"]] == [normal]
        for note_id in (private, hidden):
            assert (await record("expand", {"note_id": note_id})).is_error
            assert (await record("forget", {"note_id": note_id})).is_error
        listed = (await record("list_memories", {"limit": 50})).structured_content["notes"]
        assert normal in [n["id"] for n in listed]
        counted = (await record("usage")).structured_content
        assert counted["notes"] == len(listed)
        await record("diagnostics")
        await record("ping")
        await record("partition_list")
        for step, args in (
            ("session", {}),
            ("addendum", {"text": "x"}),
            ("maintain", {}),
            ("remarks", {}),
            ("diary", {"text": "x"}),
            ("close", {}),
        ):
            assert not (await record(step, args)).is_error
        # Writing under a private note's title does not reveal or change it: a model's
        # remember makes its own note, as if the hidden one were not there.
        assert not (await record("remember", {"text": "more", "title": "Zebra private"})).is_error
        await record("remember", {"text": "zebrafruit new"})
        await record("partition_create", {"name": "work"})
        await record("partition_rename", {"name": "work", "new_name": "job"})
        await record("partition_archive", {"name": "job"})
        await record("partition_restore", {"name": "job"})
        await record("partition_use", {"name": "job"})
        await record("recall", {"query": "zebrafruit"})

    run(brain, scenario)
    assert {k.split()[0] for k in seen} == set(TOOLS)
    for call_text, result in seen.items():
        for secret in secrets:
            if secret in call_text:
                continue  # an error may repeat the id it was given, and nothing more
            assert secret not in result, f"{call_text} revealed {secret!r}"
    person = open_vault(vault, clock=clock)
    assert "more" not in person._context.get(private).body  # the private note is untouched


def test_partitions_over_mcp(brain: Brain, vault: Path) -> None:
    async def scenario(client: Client) -> None:
        made = await call(client, "partition_create", {"name": "work"})
        assert made == {"name": "work", "archived": False, "current": False}
        assert (vault / "work/Master/Biography.md").is_file()
        assert "already exists" in await refused(client, "partition_create", {"name": "work"})
        home = await call(client, "remember", {"text": "Lunch with Ana on Friday"})
        await call(client, "partition_use", {"name": "work"})
        assert (await call(client, "ping"))["partition"] == "work"
        job = await call(client, "remember", {"text": "Quarterly report due Friday"})
        assert brain._context.get(job["id"]).partition == "work" and "path" not in job
        # No tool reaches across partitions: ids from another partition are unknown here.
        hits = (await call(client, "recall", {"query": "Friday"}))["hits"]
        assert [h["id"] for h in hits] == [job["id"]]
        assert "no note with id" in await refused(client, "expand", {"note_id": home["id"]})
        assert "no note with id" in await refused(client, "forget", {"note_id": home["id"]})
        # Rename: ids unchanged, the server follows its current partition.
        renamed = await call(client, "partition_rename", {"name": "work", "new_name": "job"})
        assert renamed == {"name": "job", "archived": False, "current": True}
        assert (await call(client, "expand", {"note_id": job["id"]}))["id"] == job["id"]
        hits = (await call(client, "recall", {"query": "report"}))["hits"]
        assert hits[0]["id"] == job["id"]
        # Archive: read-only and out of recall, until restored.
        await call(client, "partition_archive", {"name": "job"})
        assert "archived" in await refused(client, "recall", {"query": "report"})
        assert "archived" in await refused(client, "remember", {"text": "more"})
        assert "archived" in await refused(client, "forget", {"note_id": job["id"]})
        assert "archived" in await refused(client, "session")
        await call(client, "partition_use", {"name": "main"})
        assert "archived" in await refused(client, "partition_use", {"name": "job"})
        listed = (await call(client, "partition_list"))["partitions"]
        assert listed == [
            {"name": "job", "archived": True, "current": False},
            {"name": "main", "archived": False, "current": True},
        ]
        await call(client, "partition_restore", {"name": "job"})
        await call(client, "partition_use", {"name": "job"})
        assert (await call(client, "recall", {"query": "report"}))["hits"][0]["id"] == job["id"]

    run(brain, scenario)
    assert not (vault / "work").exists() and (vault / "job").is_dir()
    assert brain.doctor().ok


GATE = (
    ("session", {}),
    ("addendum", {"text": "We planned the launch."}),
    ("maintain", {}),
    ("remarks", {}),
    ("diary", {"text": "A calm day."}),
    ("close", {"summary": "Done."}),
)


def test_the_session_gate_runs_in_order_only(brain: Brain, vault: Path) -> None:
    person = open_vault(vault)
    person.remember(
        "Ana, a product manager in Lisbon.", kind="singleton", node="Master", title="Biography"
    )
    person.remember("Ship the launch.", kind="thread", title="Launch")
    chosen = person.remember("We chose March for the launch.", title="Launch month")
    person.set_field(chosen.id, "defining", "decision")
    person.close()

    async def scenario(client: Client) -> None:
        for n, (step, args) in enumerate(GATE):
            for other, other_args in GATE:
                if other != step:
                    text = await refused(client, other, other_args)
                    assert f"the step due is {step}" in text
            done = await call(client, step, args)
            assert done["step"] == step
            if n == 0:
                briefing = done["briefing"]
                assert "Lisbon" in briefing["Biography"]
                assert set(briefing) == {
                    "Biography",
                    "Goals",
                    "Preferences",
                    "Responsibilities",
                    "Protocols",
                }
                assert [t["title"] for t in done["active_threads"]] == ["Launch"]
                assert done["defining_memories"][0]["id"] == chosen.id
        assert (await call(client, "session"))["next"] == "addendum"  # a new session may open

    run(brain, scenario)
    day = (vault / "main/Memory/Sessions/2026-12-02.md").read_text()
    assert "gate: session" in day and "We planned the launch." in day
    assert "A calm day." in (vault / "main/LLM/Diary/2026-12-02.md").read_text()


def test_the_gate_survives_a_restart_and_is_shared_by_two_servers(
    vault: Path, clock: FixedClock
) -> None:
    first = open_vault(vault, clock=clock)
    run(first, lambda c: call(c, "session"))
    first.close()
    again, other = open_vault(vault, clock=clock), open_vault(vault, clock=clock)
    server_a, server_b = build_server(again), build_server(other)

    async def main() -> None:
        async with Client(server_a) as a, Client(server_b) as b:
            text = await refused(a, "session")
            assert "the step due is addendum" in text
            await call(b, "addendum", {"text": "from b"})
            assert "the step due is maintain" in await refused(a, "addendum", {"text": "x"})
            await call(a, "maintain")

    anyio.run(main)
    assert "gate: maintain" in (vault / "main/Memory/Sessions/2026-12-02.md").read_text()


def test_remarks_cue_corrections_suspects_and_threads(brain: Brain, vault: Path) -> None:
    async def scenario(client: Client) -> None:
        await call(client, "session")
        wrong = await call(client, "remember", {"text": "Launch is in May", "title": "Launch"})
        sibling = await call(client, "remember", {"text": "Budget is 5k", "title": "Budget"})
        await call(client, "remember", {"text": "Kickoff", "kind": "thread", "title": "Plan"})
        # A correction, made the way the core will: a new version superseding the old one.
        with brain._context.lock.hold():
            old = brain._context.get(wrong["id"])
            brain._context.save(old.with_meta(status="superseded"))
            fix = brain.remember("Launch is in March", title="Launch fixed")
            brain._context.save(brain._context.get(fix.id).with_meta(supersedes=wrong["id"]))
        await call(client, "addendum", {"text": "x"})
        await call(client, "maintain")
        cues = await call(client, "remarks")
        assert [c["id"] for c in cues["corrected_today"]] == [fix.id]
        assert sibling["id"] in [s["id"] for s in cues["suspect"]]
        assert [t["title"] for t in cues["threads_touched"]] == ["Plan"]

    run(brain, scenario)


def test_usage_and_diagnostics(brain: Brain, vault: Path) -> None:
    async def scenario(client: Client) -> None:
        before = await call(client, "usage")
        await call(client, "remember", {"text": "one more"})
        after = await call(client, "usage")
        assert after["notes"] == before["notes"] + 1
        assert after["by_kind"]["titled"] == before["by_kind"].get("titled", 0) + 1
        assert after["bytes"] > before["bytes"]
        health = await call(client, "diagnostics")
        assert health["caches_fresh"] is True and health["broken_notes"] == 0
        assert {"pending_connectors", "model_loaded", "retrievers"} <= set(health)
        (vault / "main/Knowledge/Inbox/hand.md").write_text("typed by hand\n")
        assert (await call(client, "diagnostics"))["caches_fresh"] is False

    run(brain, scenario)


@pytest.mark.parametrize("name", ["..", "a/b", "con", " lead", "x" * 101, "a:b", "cold"])
def test_partition_names_with_path_tricks_are_refused(brain: Brain, vault: Path, name: str) -> None:
    before = tree_digest(vault)

    async def scenario(client: Client) -> None:
        await refused(client, "partition_create", {"name": name})
        await refused(client, "partition_rename", {"name": "main", "new_name": name})

    run(brain, scenario)
    assert tree_digest(vault) == before


def test_a_singleton_named_as_the_briefings_replaces_that_note(brain: Brain, vault: Path) -> None:
    # The tool's own words: "singleton: one maintained note such as Biography or Goals".
    async def scenario(client: Client) -> None:
        args = {"text": "Ana lives in Porto.", "kind": "singleton", "title": "Biography"}
        written = await call(client, "remember", args)
        assert (written["node"], written["outcome"]) == ("Master", "replaced")
        briefing = (await call(client, "session"))["briefing"]
        assert "Ana lives in Porto." in briefing["Biography"]

    run(brain, scenario)
    assert not (vault / "main/Knowledge/Inbox/Biography.md").exists()
