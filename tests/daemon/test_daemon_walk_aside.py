"""A real daemon on a vault of 10k files: its first full walk runs aside (beside the calls it
serves) and still finds a note rewritten in place while no daemon ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._indexes.catchup import QUICK_ABOVE
from brain._model import iso, new_id
from tests.daemon.conftest import brain, stop_daemon, until

pytestmark = pytest.mark.usefixtures("autostart")


def test_the_first_walk_runs_aside_and_finds_an_edit_in_place(
    vault: Path, clock: FixedClock
) -> None:
    inbox = vault / "main/Knowledge/Inbox"
    now = iso(clock.now())
    for n in range(QUICK_ABOVE):
        (inbox / f"Note {n}.md").write_text(
            f"---\nid: {new_id(clock.now())}\ntitle: Note {n}\nkind: titled\nstatus: active\n"
            f"created: {now}\ntouched: {now}\n---\nMemory {n} about the garden plan.\n"
        )
    indexed = open_vault(vault, clock=clock)
    indexed._context.catch_up(force=True)  # the walk that records the folders and counts the files
    indexed.close()
    edited = inbox / "Note 7.md"
    inode = edited.stat().st_ino
    edited.write_text(edited.read_text().replace("the garden plan", "the zeppelin ride"))
    assert edited.stat().st_ino == inode  # in place: no folder shows it
    try:
        assert brain(vault, "recall", "garden plan").returncode == 0  # starts the daemon

        def status() -> dict[str, Any]:
            return dict(json.loads(brain(vault, "daemon", "status", "--json").stdout))

        until(lambda: status().get("first_catch_up"), "the watcher's first catch-up")
        info = status()
        # (the last may be a catch-up by path since: brain's own writes are events too)
        assert info["first_catch_up"]["how"] == "walk aside"
        assert info["first_catch_up"]["changed"] == 1 and info["walks"] == 1
        found = brain(vault, "recall", "zeppelin ride", "--json")
        assert "Note 7" in found.stdout, found.stdout + found.stderr
    finally:
        stop_daemon(vault)
