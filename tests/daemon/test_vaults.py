"""A person with more than one vault: copies, moves and the choice of vault, as real processes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._indexes import catchup
from tests.daemon.conftest import brain, stop_daemon, until

pytestmark = pytest.mark.usefixtures("autostart")

HAND_NOTE = "---\ntitle: Zebra crossing plan\n---\nThe zebra crossing plan of the copy.\n"


def test_a_copy_made_while_the_daemon_watches_catches_up_its_own_hand_edits(
    daemon: Path, tmp_path: Path
) -> None:
    with open_vault(daemon) as original:
        catalog = original._context.caches.catalog
        until(lambda: catalog.info(catchup.WATCHER), "the daemon's watcher to follow the vault")
    copy = tmp_path / "personal"
    subprocess.run(["cp", "-r", str(daemon), str(copy)], check=True)  # as a person starts one
    (copy / "main" / "Knowledge" / "Inbox" / "Zebra.md").write_text(HAND_NOTE)
    with open_vault(copy) as copied:  # in this process: the original's daemon is not the copy's
        hits = copied.recall("zebra crossing")
        assert [hit.title for hit in hits][:1] == ["Zebra crossing plan"]
        assert copied._context.last_catch_up["how"] != "watcher"
    assert brain(daemon, "daemon", "status").returncode == 0  # the original's daemon carries on
    stop_daemon(copy)
