"""A vault kept in a file-sync folder (docs/lab/probe-filesync.md): Syncthing and Dropbox
told to leave `.brain/` on this machine, their conflict copies named by doctor, a copy's new
id the same on every machine, and `brain init` into a folder such a tool (or a shell) holds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._vault import notefile, synced
from brain.testing import NO_AUTOSTART, new_vault

ROOT = Path(__file__).resolve().parents[2]
INBOX = "main/Knowledge/Inbox"
CONFLICT = "Tulips.sync-conflict-20261207-201744-OX6ZGZU.md"


def _brain(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "BRAIN_DAEMON": "off"}
    env.pop("BRAIN_VAULT", None)
    return subprocess.run(
        [sys.executable, "-m", "brain", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def test_a_vault_at_the_root_of_a_syncthing_folder_keeps_its_caches_out_of_it(
    tmp_path: Path, clock: FixedClock
) -> None:
    folder = tmp_path / "Sync"
    (folder / ".stfolder").mkdir(parents=True)
    (folder / ".stignore").write_text("*.tmp")  # the person's own pattern, no newline after
    new_vault(folder, clock.now(), daemon=NO_AUTOSTART)  # the marks count as an empty folder
    lines = (folder / ".stignore").read_text().splitlines()  # before `.brain/` is made
    assert lines[0] == "*.tmp" and lines[-1] == "/.brain"
    brain = open_vault(folder, clock=clock)
    try:
        assert brain.doctor().synced == ()
    finally:
        brain.close()
    open_vault(folder, clock=clock).close()  # said once, not once per opening
    assert (folder / ".stignore").read_text().count("/.brain") == 1


def test_a_vault_put_inside_a_syncthing_folder_later_is_ignored_from_that_folders_root(
    tmp_path: Path, clock: FixedClock
) -> None:
    folder = tmp_path / "Sync"
    vault = new_vault(folder / "Notes", clock.now(), daemon=NO_AUTOSTART)
    (folder / ".stfolder").mkdir()  # Syncthing set up on the folder above, after the vault
    open_vault(vault, clock=clock).close()
    assert "/Notes/.brain" in (folder / ".stignore").read_text().splitlines()


def test_doctor_says_a_syncthing_folder_brain_could_not_tell(
    tmp_path: Path, clock: FixedClock
) -> None:
    folder = tmp_path / "Sync"
    (folder / ".stfolder").mkdir(parents=True)
    vault = new_vault(folder / "Notes [2026]", clock.now(), daemon=NO_AUTOSTART)
    brain = open_vault(vault, clock=clock)  # brackets are a pattern to Syncthing: not written
    try:
        assert not (folder / ".stignore").exists()
        report = brain.doctor()
        [said] = report.synced
        assert "Syncthing folder" in said and str(folder / ".stignore") in said
        assert not report.ok and report.to_json()["synced"] == [said]
    finally:
        brain.close()


def _xattrs_work(path: Path) -> bool:
    try:
        os.setxattr(path, "user.brain-test", b"1")
    except (OSError, AttributeError):
        return False
    return True


def test_a_vault_in_a_dropbox_folder_marks_its_caches_ignored(
    tmp_path: Path, clock: FixedClock
) -> None:
    if not _xattrs_work(tmp_path):
        pytest.skip("this file system keeps no user attributes")
    dropbox = tmp_path / "Dropbox"
    dropbox.mkdir()
    (dropbox / ".dropbox").write_text("{}")
    vault = new_vault(dropbox / "Notes", clock.now(), daemon=NO_AUTOSTART)
    brain = open_vault(vault, clock=clock)
    try:
        assert os.getxattr(vault / ".brain", synced.DROPBOX_IGNORED) == b"1"
        assert brain.doctor().synced == ()
        os.removexattr(vault / ".brain", synced.DROPBOX_IGNORED)  # as if it could not be set
        [said] = brain.doctor().synced
        assert "attr -s com.dropbox.ignored -V 1" in said
    finally:
        brain.close()


def test_doctor_names_a_sync_tools_conflict_copies(brain: Brain, vault: Path) -> None:
    note = brain.remember("Ana likes tulips", title="Tulips")
    original = vault / note.path
    shutil.copy(original, original.with_name(CONFLICT))
    (vault / INBOX / "index.sync-conflict-20261207-201744-OX6ZGZU.json").write_text("{}")
    dropbox = "Tulips (Ana's conflicted copy 2026-12-07).md"
    shutil.copy(original, original.with_name(dropbox))
    brain.list()  # a catch-up: each copy gets an id of its own
    report = brain.doctor()
    assert not report.ok
    said = "\n".join(report.sync_copies)
    assert f"{INBOX}/{CONFLICT}: Syncthing kept this version of {note.path}" in said
    assert f"{INBOX}/{dropbox}: Dropbox kept this version of {note.path}" in said
    assert f"Syncthing's conflict copy of {INBOX}/index.json" in said
    (vault / INBOX / "photo (Ana's conflicted copy 2026-12-07).jpg").write_bytes(b"\xff")
    assert len(brain.doctor().sync_copies) == 3  # an attachment's copy is the person's
    assert report.leftovers == ()  # the index's copy is said once, above


def test_sleep_removes_conflict_copies_of_index_json_and_keeps_the_notes(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    note = brain.remember("Ana likes tulips", title="Tulips")
    copy = vault / INBOX / "index.sync-conflict-20261207-201744-OX6ZGZU.json"
    copy.write_text("{}")
    graph = vault / "main/Insights/Graph.sync-conflict-20261207-201744-OX6ZGZU.md"
    shutil.copy(vault / "main/Insights/Graph.md", graph)
    shutil.copy(vault / note.path, vault / INBOX / CONFLICT)
    assert "writes anew from the notes" in "".join(brain.doctor().sync_copies)
    report = brain.sleep()
    assert not copy.exists() and f"{INBOX}/{copy.name}" in report.leftovers
    assert not graph.exists() and not brain.doctor().sync_copies[1:]  # the note's copy stays
    assert (vault / INBOX / CONFLICT).is_file()  # a note: the person compares and chooses


def test_a_conflict_copy_gets_the_same_new_id_on_every_machine(
    tmp_path: Path, clock: FixedClock
) -> None:
    """Syncthing brings its conflict copy to both machines; each brain gives it an id of its
    own. Were the two ids drawn at random, the two rewrites would conflict again."""
    first = new_vault(tmp_path / "a", clock.now(), daemon=NO_AUTOSTART)
    with open_vault(first, clock=clock) as brain:
        note = brain.remember("Ana likes tulips", title="Tulips")
    second = tmp_path / "b"
    shutil.copytree(first, second)  # the other machine, its caches its own
    written = []
    for machine in (first, second):
        shutil.copy(machine / note.path, machine / INBOX / CONFLICT)
        with open_vault(machine, clock=clock) as brain:
            brain.list()
        written.append((machine / INBOX / CONFLICT).read_bytes())
    assert written[0] == written[1]
    renewed = notefile.parse(written[0].decode(), CONFLICT)
    assert renewed.id != note.id and renewed.meta["copy_of"] == note.id


def test_brain_init_fills_the_folder_a_shell_stands_in(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    before = folder.stat().st_ino
    made = _brain("init", ".", cwd=folder, home=tmp_path)
    assert made.returncode == 0, made.stderr
    assert folder.stat().st_ino == before  # the same folder: the shell is still in the vault
    said = _brain("remember", "Hello from here", cwd=folder, home=tmp_path)
    assert said.returncode == 0 and "Remembered" in said.stdout, said.stderr


@pytest.mark.parametrize("marks", [[".stfolder", ".stignore"], [".obsidian", ".DS_Store"]])
def test_brain_init_takes_a_folder_holding_only_a_tools_marks(
    tmp_path: Path, marks: list[str]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for mark in marks:
        (folder / mark).mkdir() if "." not in mark[1:] else (folder / mark).write_text("")
    made = _brain("init", str(folder), cwd=tmp_path, home=tmp_path)
    assert made.returncode == 0, made.stderr
    assert (folder / "brain.yaml").is_file() and all((folder / m).exists() for m in marks)


def test_a_command_started_in_a_folder_since_deleted_says_so(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    code = (
        "import os, subprocess, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "sys.exit(subprocess.run([sys.executable, '-m', 'brain', 'list']).returncode)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "BRAIN_DAEMON": "off"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "the folder this command was started in no longer exists" in done.stderr
