"""`brain daemon status` shows memories, the vector index kind and size, the last catch-up,
and the catalog's briefs held in memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.daemon.conftest import brain, until

pytestmark = pytest.mark.usefixtures("autostart")


def test_status_shows_memories_vectors_and_the_last_catch_up(daemon: Path) -> None:
    def status() -> dict[str, Any]:
        return dict(json.loads(brain(daemon, "daemon", "status", "--json").stdout))

    before = status()["memories"]  # the template's own notes
    for n in range(3):
        assert brain(daemon, "remember", f"Status note {n} about kayaks").returncode == 0
    assert brain(daemon, "recall", "kayaks").returncode == 0  # embeds: the vector index fills
    until(lambda: status().get("last_catch_up"), "the watcher's first catch-up")
    info = status()
    assert info["memories"] == before + 3
    assert info["vectors"]["kind"] == "flat" and info["vectors"]["size"] >= 3
    last = info["last_catch_up"]
    assert isinstance(last, dict) and last["how"] in ("walk", "paths") and last["ms"] >= 0
    # One walk of the files at start, the watcher's (after its observer runs), not a second
    # one before it (at 1M memories each walk held a call ~15 s).
    assert info["walks"] == 1
    # The catalog's briefs, held in memory once the first catch-up is done: every object's.
    until(lambda: status().get("briefs_held"), "the briefs held in memory")
    held = status()["briefs_held"]
    assert held >= info["memories"]  # notes, and the sections of any document
    text = brain(daemon, "daemon", "status").stdout
    assert f"memories  {before + 3}" in text and "catch-up" in text
    assert f"briefs    {held} in memory" in text
    assert f"flat, {info['vectors']['size']} vectors" in text
