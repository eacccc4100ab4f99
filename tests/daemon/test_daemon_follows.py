"""A running daemon follows brain.yaml: git enabled, another embedder, its own settings, limits,
each taken for the very next command (real daemon processes, real git)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._daemon.client import DaemonClient, running_pid
from tests.daemon.conftest import brain, settle, until
from tests.ingest.test_documents import attach

pytestmark = pytest.mark.usefixtures("autostart")


def status(vault: Path) -> dict[str, object]:
    client = DaemonClient.connect(vault)
    try:
        return dict(client.call("status"))
    finally:
        client.close()


def edit(vault: Path, old: str, new: str) -> None:
    settings = vault / "brain.yaml"
    text = settings.read_text()
    assert re.search(old, text, flags=re.M), old
    settings.write_text(re.sub(old, new, text, flags=re.M))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_enable_under_a_running_daemon_makes_its_next_write_a_commit(daemon: Path) -> None:
    pid = running_pid(daemon)
    assert brain(daemon, "remember", "a").returncode == 0
    enabled = brain(daemon, "git", "enable")
    assert enabled.returncode == 0, enabled.stderr
    made = brain(daemon, "remember", "b", "--title", "B")
    assert made.returncode == 0, made.stderr
    assert running_pid(daemon) == pid  # the same daemon wrote it, not a new one
    log = subprocess.run(
        ["git", "-C", str(daemon), "log", "--format=%s"], capture_output=True, text=True, check=True
    ).stdout
    assert 'brain: remember "B"' in log
    gitstatus = brain(daemon, "git", "status", "--json")
    assert gitstatus.returncode == 0 and "B.md" not in gitstatus.stdout  # nothing "by hand"


def retrievers(vault: Path, query: str) -> set[str]:
    found = brain(vault, "recall", query, "--json", "--explain")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert hits, found.stdout
    return set(hits[0]["explain"]["retrievers"])


def test_an_embedder_change_is_used_by_the_next_recall_and_remember(daemon: Path) -> None:
    pid = running_pid(daemon)
    assert brain(daemon, "remember", "The kettle descaler lives under the sink").returncode == 0
    assert "vector" in retrievers(daemon, "kettle descaler")
    edit(daemon, r"^embedder: hashing", "embedder: none")
    assert retrievers(daemon, "kettle descaler") == {"text"}  # no vectors at all now
    assert status(daemon)["embedder"] == "none"
    edit(daemon, r"^embedder: none", "embedder: hashing")
    made = brain(daemon, "remember", "The spare fuses are in the blue tin", "--json")
    assert made.returncode == 0, made.stderr
    assert "vector" in retrievers(daemon, "spare fuses blue tin")
    assert status(daemon)["embedder"] == "hashing" and running_pid(daemon) == pid


def test_a_limit_change_holds_for_the_next_remember(daemon: Path) -> None:
    (daemon / "brain.yaml").open("a").write("limits:\n  max_text_bytes: 10\n")
    refused = brain(daemon, "remember", "far more than ten bytes of text")
    assert refused.returncode == 2 and "max_text_bytes" in refused.stderr


def test_a_daemon_setting_change_takes_effect_without_a_restart(daemon: Path) -> None:
    assert status(daemon)["idle_seconds"] == 900
    settle(daemon, "  autostart: true\n  idle_seconds: 600\n")
    assert status(daemon)["idle_seconds"] == 600  # the next command sees it
    settle(daemon, "  autostart: true\n  idle_seconds: 1\n")
    # No command since: the daemon that started with 900 s is the one that goes after 1 s.
    until(lambda: running_pid(daemon) is None, "the daemon to exit after its new idle time")
    assert "idle for 1 s" in (daemon / ".brain/daemon.log").read_text()


def test_watching_is_stopped_and_started_as_brain_yaml_says(daemon: Path) -> None:
    log = daemon / ".brain/daemon.log"
    settle(daemon, "  autostart: true\n  watch: false\n")
    assert brain(daemon, "list").returncode == 0
    assert "watch off" in log.read_text()
    settle(daemon, "  autostart: true\n")
    (daemon / "main/Knowledge/Hand.md").write_text(
        "# Hand\n\nwritten by hand, seen by the watcher\n"
    )
    assert "watch on" in log.read_text() or brain(daemon, "list").returncode == 0
    until(lambda: "watch on" in log.read_text(), "the watcher to start again")
    found = brain(daemon, "recall", "written by hand", "--json")
    assert json.loads(found.stdout)["hits"], found.stderr


def test_a_broken_brain_yaml_is_said_by_the_daemon_and_mended_by_the_next_edit(
    daemon: Path,
) -> None:
    settings = daemon / "brain.yaml"
    good = settings.read_text()
    settings.write_text(good + "recall: [unclosed\n")
    broken = brain(daemon, "recall", "anything")
    assert broken.returncode == 2 and "brain.yaml line" in broken.stderr
    assert len(broken.stderr.strip().splitlines()) == 1
    settings.write_text(good)
    assert brain(daemon, "recall", "anything").returncode == 0


def test_a_folder_connected_while_the_daemon_runs_is_watched_at_once(
    daemon: Path, tmp_path: Path, clock: FixedClock
) -> None:
    """`brain connect` confirms in .brain/connectors.json: the running daemon's watcher takes
    the new folder in without a restart (before, not until the daemon idled out)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "plan.md").write_text("# Plan\n\nPlant the cherry tree in autumn.\n")
    local = open_vault(daemon, clock=clock)
    try:
        attach(local, folder)  # what `connect` does once the person typed the code
    finally:
        local.close()
    assert brain(daemon, "list").returncode == 0  # a request: the daemon looks again
    (folder / "kayak.md").write_text("# Kayak\n\nThe kayak trip is on Saturday.\n")

    def found() -> bool:
        said = brain(daemon, "recall", "kayak trip Saturday", "--json", "--mode", "text")
        return any("kayak" in hit["path"] for hit in json.loads(said.stdout)["hits"])

    until(found, "the new file in the connected folder to be a document")
