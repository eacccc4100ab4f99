"""A vault backed up and restored without git (docs/lab/probe-backup.md): a note forgotten
since the backup stays out of recall when the backup puts its file back, and a copy taken
between a correction's two writes keeps the note's id on its current version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._model import Note
from brain._notes.corrections import history_path, supersede
from brain._vault import notefile

ROOT = Path(__file__).resolve().parents[2]
INBOX = "main/Knowledge/Inbox"
PIN = "My bank PIN hint is the birthday of the cat"


def _brain(vault: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "BRAIN_DAEMON": "off"}
    env["BRAIN_VAULT"] = str(vault)
    return subprocess.run(
        [sys.executable, "-m", "brain", *args], capture_output=True, text=True, env=env, check=False
    )


def test_a_forgotten_note_a_backup_puts_back_stays_out_of_recall_and_doctor_names_it(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    brain = open_vault(vault, clock=clock)
    pin = brain.remember(PIN, title="PIN hint")
    brain.remember("Tulips need a cold winter to bloom in spring", title="Tulips")
    backup = tmp_path / "backup.md"
    shutil.copy2(vault / pin.path, backup)  # last week's backup of the note
    brain.forget(pin.id)
    brain.close()
    shutil.copy2(backup, vault / pin.path)  # a file manager's "restore" of that one file
    home = tmp_path / "home"
    said = _brain(vault, home, "recall", "bank PIN hint cat birthday")
    assert said.returncode == 0 and "PIN" not in said.stdout, said.stdout
    assert pin.id not in _brain(vault, home, "list").stdout
    doctor = _brain(vault, home, "doctor")
    assert doctor.returncode == 1, doctor.stdout
    said = " ".join(doctor.stdout.split())
    assert f"{pin.path}: holds a note forgotten here on " in said
    assert "delete the file to leave it forgotten" in said
    expand = _brain(vault, home, "expand", pin.id)
    assert expand.returncode == 2 and f"{pin.id} was forgotten here; {pin.path}" in expand.stderr
    assert _brain(vault, home, "reindex").returncode == 0  # a rebuild keeps it out too
    assert pin.id not in _brain(vault, home, "list").stdout
    (vault / pin.path).unlink()  # the person leaves it forgotten
    assert _brain(vault, home, "doctor").returncode == 0


def test_a_whole_backup_without_caches_restored_over_the_vault_brings_no_forgotten_note_back(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    brain = open_vault(vault, clock=clock)
    pin = brain.remember(PIN, title="PIN hint")
    brain.close()
    archive = tmp_path / "vault.tgz"  # the usual backup: the folder, its caches left out
    subprocess.run(["tar", "-czf", archive, "--exclude=.brain", "-C", vault, "."], check=True)
    brain = open_vault(vault, clock=clock)
    brain.forget(pin.id)
    dentist = brain.remember("Dentist on the 20th at nine", title="Dentist")
    brain.close()
    subprocess.run(["tar", "-xzf", archive, "-C", vault], check=True)  # restored over it
    brain = open_vault(vault, clock=clock)
    try:
        assert pin.id not in [h.id for h in brain.recall("bank PIN hint cat birthday")]
        assert {r.id for r in brain.list()} >= {dentist.id} and pin.id not in {
            r.id for r in brain.list()
        }
        [(path, why)] = brain.doctor().broken
        assert path == pin.path and "forgotten here" in why
    finally:
        brain.close()
    text = (vault / pin.path).read_text()  # kept after all: its `id:` line removed
    (vault / pin.path).write_text(
        "".join(line for line in text.splitlines(True) if not line.startswith("id:"))
    )
    brain = open_vault(vault, clock=clock)
    try:
        hit = brain.recall("bank PIN hint cat birthday")[0]
        assert hit.id != pin.id and hit.path == pin.path
        assert brain.doctor().broken == ()
    finally:
        brain.close()


def test_a_copy_taken_between_a_corrections_two_writes_keeps_the_id_on_the_current_version(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    brain = open_vault(vault, clock=clock)
    launch = brain.remember("The launch is in February", title="Launch date")
    fan = brain.remember("I look forward to it", title="Fan")
    brain.relate(fan.id, "references", launch.id)
    # A correction first writes the old version aside, marked superseded, then the new one in
    # its place: a backup copied in between holds the note twice, at both names.
    old = brain._context.get(launch.id)
    marked, _prior = supersede(old)
    aside = history_path(brain._context, old.path, clock.now())
    brain.close()
    restored = tmp_path / "restored"  # the copy, unpacked on a new machine: no `.brain/`
    shutil.copytree(vault, restored, ignore=shutil.ignore_patterns(".brain"))
    (restored / aside).write_text(notefile.render(marked.with_path(aside)))
    brain = open_vault(restored, clock=clock)
    try:
        current = brain.expand(launch.id, touch=False)
        assert current.path == launch.path and current.status == "active"
        assert brain.recall("when is the launch")[0].id == launch.id
        assert [n.id for n in brain.history(launch.id)] == [launch.id]
        copy = notefile.parse((restored / aside).read_text(), aside)
        assert copy.id != launch.id and copy.meta["copy_of"] == launch.id
        assert brain.expand(fan.id, touch=False).relations[0].target == launch.id
    finally:
        brain.close()


def _backed_up_then_forgotten(vault: Path, clock: FixedClock, backup: Path) -> Note:
    """The PIN note remembered, the whole vault copied (`.brain/` and its forget records
    included), then the note forgotten."""
    brain = open_vault(vault, clock=clock)
    pin = brain.remember(PIN, title="PIN hint")
    brain.close()
    shutil.copytree(vault, backup, symlinks=True)
    brain = open_vault(vault, clock=clock)
    brain.forget(pin.id)
    brain.close()
    return pin


def _restore(vault: Path, backup: Path) -> None:
    shutil.rmtree(vault)  # the whole vault put back from the backup
    shutil.copytree(backup, vault, symlinks=True)


def test_a_whole_older_backup_restored_with_its_own_caches_brings_no_forgotten_note_back(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    pin = _backed_up_then_forgotten(vault, clock, tmp_path / "backup")
    _restore(vault, tmp_path / "backup")
    brain = open_vault(vault, clock=clock)
    try:
        assert pin.id not in [h.id for h in brain.recall("bank PIN hint cat birthday")]
        assert pin.id not in {r.id for r in brain.list()}
        [(path, why)] = brain.doctor().broken
        assert path == pin.path and "forgotten here" in why
    finally:
        brain.close()
    copies = list((tmp_path / "state" / "brain" / "forgotten").iterdir())
    assert [oct(c.stat().st_mode & 0o777) for c in copies] == ["0o600"]
    assert "bank" not in copies[0].read_text()  # salted hashes, no word of the note


def test_forgets_recorded_before_the_copy_was_kept_are_copied_at_the_next_opening(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    pin = _backed_up_then_forgotten(vault, clock, tmp_path / "backup")
    shutil.rmtree(tmp_path / "state")  # as an older brain left it: no copy outside the vault
    open_vault(vault, clock=clock).close()  # the next opening copies the records out
    _restore(vault, tmp_path / "backup")
    brain = open_vault(vault, clock=clock)
    try:
        assert pin.id not in {r.id for r in brain.list()}
    finally:
        brain.close()
