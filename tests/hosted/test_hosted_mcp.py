"""Every one of the 20 MCP tools over a hosted brain gives what it gives over files."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from mcp import Client

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from tests.conftest import pushed
from tests.mcp.conftest import call, refused, run

_ID = re.compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b")


def script_of(brain: Brain) -> list[Any]:
    """The same calls, in the gate's order, with every id and date taken out of the answers."""
    said: list[Any] = []

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            # Dates differ run to run, scores from one ranking function to the other.
            drop = {"created", "touched", "session", "date", "now", "score"}
            return {k: plain(v) for k, v in sorted(value.items()) if k not in drop}
        if isinstance(value, list):
            # Notes written at one instant (a fixed clock) tie; their ids, random, order them.
            return sorted((plain(v) for v in value), key=repr)
        if isinstance(value, str):
            return _ID.sub("<id>", value)  # ULIDs are random
        return value

    async def scenario(client: Client) -> None:
        async def ok(name: str, args: dict[str, Any] | None = None) -> Any:
            said.append((name, plain(await call(client, name, args))))
            return said[-1][1]

        await ok("ping")
        await ok("session")
        note = await call(
            client, "remember", {"text": "The launch moved to March.", "title": "Launch date"}
        )
        await ok("recall", {"query": "when is the launch"})
        await ok("expand", {"note_id": note["id"]})
        await ok("list_memories", {})
        await ok("usage")
        await ok("partition_create", {"name": "extra"})
        await ok("partition_list")
        await ok("partition_use", {"name": "extra"})
        await ok("remember", {"text": "Extra things.", "title": "Extra"})
        await ok("partition_use", {"name": "main"})
        await ok("partition_rename", {"name": "extra", "new_name": "spare"})
        await ok("partition_archive", {"name": "spare"})
        said.append(await refused(client, "partition_use", {"name": "spare"}))
        await ok("partition_restore", {"name": "spare"})
        said.append(await refused(client, "diary", {"text": "early"}))
        await ok("addendum", {"text": "Talked about the launch."})
        await ok("maintain")
        await ok("remarks")
        await ok("diary", {"text": "A good day."})
        await ok("close")
        await ok("forget", {"note_id": note["id"]})
        await ok("recall", {"query": "launch"})
        diagnostics = await call(client, "diagnostics")
        said.append(("diagnostics", sorted(diagnostics)))

    run(brain, scenario)
    return said


def test_all_twenty_tools_answer_the_same_on_both_storages(
    hosted_dsn: str, vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(vault, copy)
    files = open_vault(vault, clock=clock)
    on_files = script_of(files)
    files.close()
    hosted = pushed(hosted_dsn, copy, clock)
    on_postgres = script_of(hosted)
    hosted.close()
    assert on_postgres == on_files
    names = {entry[0] for entry in on_files if isinstance(entry, tuple)}
    assert len(names | {"remember"}) == 20
    first = next(e[1] for e in on_files if isinstance(e, tuple) and e[0] == "recall")
    assert [h["title"] for h in first["hits"]] == ["Launch date"]
    assert any("archived" in e for e in on_files if isinstance(e, str))
    assert any("the step due is addendum" in e for e in on_files if isinstance(e, str))
