"""A person with more than one vault: copies, moves and the choice of vault, as real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._indexes import catchup
from brain.testing import NO_AUTOSTART, new_vault
from tests.daemon.conftest import brain, env, stop_daemon, until

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


def ended(pid: int) -> bool:
    """Whether a process has ended: gone, or a zombie not yet reaped whose every thread has
    ended too (a main thread that returned shows as a zombie while its other threads, and the
    connections they hold, live on)."""
    tasks = Path(f"/proc/{pid}/task")
    try:
        states = [(t / "stat").read_text().rsplit(")", 1)[1].split()[0] for t in tasks.iterdir()]
    except OSError:
        return True  # gone (or going)
    return all(state in "ZX" for state in states)


def recall_in(folder: Path, chosen: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """`brain recall` typed in `folder` with BRAIN_VAULT naming `chosen`."""
    return subprocess.run(
        [sys.executable, "-m", "brain", "recall", "dentist"],
        capture_output=True,
        text=True,
        env=env(BRAIN_VAULT=str(chosen), **extra),
        cwd=folder,
        timeout=300,
    )


def test_brain_vault_naming_another_vault_than_the_one_a_command_runs_in_is_said_on_stderr(
    daemon: Path, tmp_path: Path
) -> None:
    brain(daemon, "remember", "My dentist is Dr Silva")
    work = new_vault(tmp_path / "work", daemon=NO_AUTOSTART)
    inside = work / "main" / "Knowledge"
    said = (
        f"note: this command uses the vault at {daemon} (BRAIN_VAULT), not the one at {work} "
        f"where it runs; --vault {work} uses that one\n"
    )
    for way in ({}, {"BRAIN_DAEMON": "off"}):  # the fast path through the daemon, and in process
        done = recall_in(inside, daemon, **way)
        assert done.returncode == 0, done.stderr
        assert "My dentist is Dr Silva" in done.stdout  # BRAIN_VAULT still chooses
        assert done.stderr == said
    outside = recall_in(tmp_path, daemon)
    assert outside.stderr == "" and "My dentist is Dr Silva" in outside.stdout
    within = recall_in(daemon / "main", daemon)  # inside the vault BRAIN_VAULT names: nothing
    assert within.stderr == ""


def test_a_serve_whose_daemon_ended_between_two_calls_runs_the_next_call_anew(
    daemon: Path,
) -> None:
    import anyio

    from brain._daemon.client import McpForwarder
    from brain._mcp_server import TOOLS

    forward = McpForwarder(daemon, env(), "01SESSION0000000000000000A", "main", TOOLS)

    async def local(**_kw: object) -> dict[str, object]:
        raise AssertionError("a daemon can be started, so nothing runs here")

    async def main() -> None:
        made = await forward("remember", {"text": "Kayak trip in June"}, local)
        first = forward.client
        assert first is not None and first.pid is not None
        stop_daemon(daemon)  # as when its vault moved, or an upgrade had it step down
        until(lambda: ended(first.pid), "the daemon's process to end")
        hits = await forward("recall", {"query": "kayak", "k": 5, "node": None}, local)
        assert hits["hits"][0]["id"] == made["id"]
        assert forward.client is not first

    try:
        anyio.run(main)
    finally:
        forward.close()


def test_doctor_names_a_vault_moved_into_a_folder_of_another(vault: Path, tmp_path: Path) -> None:
    inner = new_vault(tmp_path / "Projects vault", daemon=NO_AUTOSTART)
    brain(inner, "remember", "Otters hold hands while they sleep", BRAIN_DAEMON="off")
    inner.rename(vault / "main" / "Knowledge" / "Projects")  # mv, as a person tidies folders
    done = brain(vault, "doctor", "--json", BRAIN_DAEMON="off")
    assert done.returncode == 1, done.stderr
    assert [line.split(":")[0] for line in json.loads(done.stdout)["nested"]] == [
        "main/Knowledge/Projects"
    ]
    text = brain(vault, "doctor", BRAIN_DAEMON="off").stdout
    assert "vault    main/Knowledge/Projects: another vault (its brain.yaml)" in text
