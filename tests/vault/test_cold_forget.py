"""Forgetting a note a cold-tier dictionary learned: the dictionary is replaced and deleted, in
the same forget (and, with --purge, leaves git history); every other cold note reads the same."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import zstandard
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._git.repo import enable
from brain._upkeep import dictionaries
from brain._vault.cold import ColdCodec, is_cold
from brain._vault.forgotten import Record
from brain.testing import T0
from tests.notes.test_lifecycle import set_yaml
from tests.vault.test_purge import _brain, _in_pty, git

_register()
DAY = timedelta(days=1)
# A word of its own for each note, so no note holds another's text.
WORDS = [
    "garden", "boiler", "taxes", "bicycle", "recipes", "travel", "books",
    "music", "kettle", "violin", "harbor", "lantern", "orchard", "pepper",
]  # fmt: skip


def fill(brain: Brain, count: int = len(WORDS)) -> list[str]:
    return [
        brain.remember(
            f"The {w} story: {w}s, {w}ish ways, and {n} odd {w} facts kept in this {w} note.",
            title=f"Note {w}",
        ).id
        for n, w in enumerate(WORDS[:count])
    ]


def go_cold(brain: Brain, clock: FixedClock, ids: list[str]) -> Path:
    """Sleep until every note is cold; returns the dictionary trained on them."""
    clock.set(T0 + 120 * DAY)
    brain.sleep()
    assert all(is_cold(brain._context.row(i).path) for i in ids)
    ((_v, _i, dictionary),) = brain._context.store.cold.dictionaries.listing()
    return dictionary


def learned(brain: Brain, dictionary: Path, ids: list[str]) -> str:
    """A note the dictionary holds a trace of, by the forgetting check's own measure."""
    data = dictionary.read_bytes()
    notes = [brain._context.get(i) for i in ids]
    return next(n.id for n in notes if Record.of(n.id, n.title, n.body, "").find(data))


def cold_notes(brain: Brain) -> dict[str, bytes]:
    """Every cold note's Markdown, read from its frame with nothing but the files."""
    codec, root = ColdCodec(brain.root), brain.root
    return {
        p.relative_to(root).as_posix(): codec.decompress(p.read_bytes(), p.name)
        for p in sorted((root / "cold").rglob("*.md.zst"))
    }


def frame_dictionaries(brain: Brain) -> set[int]:
    return {
        zstandard.get_frame_parameters(p.read_bytes()).dict_id
        for p in (brain.root / "cold").rglob("*.md.zst")
    }


@pytest.fixture
def cold(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    set_yaml(vault, "cold: false", "cold: true")
    brain = open_vault(vault, clock=clock)
    yield brain
    brain.close()


def test_forget_replaces_a_dictionary_that_learned_the_note(
    cold: Brain, clock: FixedClock, cli: CliRunner
) -> None:
    ids = fill(cold)
    old = go_cold(cold, clock, ids)
    gone = learned(cold, old, ids)
    before = cold_notes(cold)
    cold.forget(gone)
    assert not old.exists(), "the dictionary that learned the note is deleted"
    ((_v, new_id, new),) = cold._context.store.cold.dictionaries.listing()
    assert gone.encode() not in new.read_bytes()
    after = cold_notes(cold)
    assert after == {p: b for p, b in before.items() if gone.encode() not in b}
    assert len(after) == len(WORDS) - 1
    assert frame_dictionaries(cold) == {new_id}
    # The hot path still finds a cold note, and expand decompresses it.
    other = next(i for i in ids if i != gone)
    note = cold._context.get(other)
    word = note.title.split()[1]
    hit = next(h for h in cold.recall(f"{word} story facts") if h.id == other)
    assert is_cold(hit.path)
    assert cold.expand(other, touch=False).body == note.body
    cold.sleep()  # the caches' last bytes of it
    assert cold.forgotten_check(gone).traces == ()
    result = cli.invoke(app, ["doctor", "--forgotten", gone])
    assert result.exit_code == 0 and "no trace" in result.output, result.output
    assert cold.doctor().ok
    # Another clone (the files alone) reads every cold note.
    clone = cold.root.parent / "clone"
    shutil.copytree(cold.root, clone, ignore=shutil.ignore_patterns(".brain"))
    copy = open_vault(clone)
    assert copy.reindex() > 0 and cold_notes(copy) == after and copy.doctor().ok
    copy.close()


def test_a_dictionary_that_never_saw_the_note_stays(cold: Brain, clock: FixedClock) -> None:
    old = go_cold(cold, clock, fill(cold))
    data = old.read_bytes()
    later = cold.remember("A zebra crossing story, written after the training.", title="Zebra")
    cold.forget(later.id)
    assert old.read_bytes() == data and len(cold._context.store.cold.dictionaries.listing()) == 1
    assert not (cold.root / dictionaries.PENDING).exists()


def test_too_few_notes_left_to_train_leaves_plain_frames(cold: Brain) -> None:
    have = len(cold._context.caches.catalog.recently_touched(1000))  # the template's notes
    assert have < 10
    ids = fill(cold, 10 - have)  # exactly enough samples for the first dictionary
    for note_id in ids:
        cold.tier_move(note_id, "cold")
    ((_v, _i, old),) = cold._context.store.cold.dictionaries.listing()
    gone = learned(cold, old, ids)
    bodies = {i: cold._context.get(i).body for i in ids if i != gone}
    cold.forget(gone)
    assert not old.exists() and cold._context.store.cold.dictionaries.listing() == []
    assert frame_dictionaries(cold) == {0}
    for note_id, body in bodies.items():
        assert cold.expand(note_id, touch=False).body == body


@pytest.mark.parametrize("trained", [True, False], ids=["new-dictionary-made", "none-made"])
def test_a_pass_a_crash_stopped_is_finished_by_reindex(
    cold: Brain, clock: FixedClock, cli: CliRunner, trained: bool
) -> None:
    ids = fill(cold)
    old = go_cold(cold, clock, ids)
    old_id, old_bytes = int(old.stem.split("-")[1]), old.read_bytes()
    gone = learned(cold, old, ids)
    before = cold_notes(cold)
    cold.forget(gone)
    after = cold_notes(cold)
    assert after.keys() < before.keys()
    # What a crash could leave: the old dictionary still there, the ids noted, half the frames
    # made with the old one (or all of them, the new dictionary not yet written).
    ((_v, _new_id, new),) = cold._context.store.cold.dictionaries.listing()
    old.write_bytes(old_bytes)
    if not trained:
        new.unlink()
    codec = ColdCodec(cold.root)
    frames = sorted((cold.root / "cold").rglob("*.md.zst"))
    for path in frames if not trained else frames[::2]:
        markdown = after[path.relative_to(cold.root).as_posix()]
        path.write_bytes(codec.compress(markdown, old_id))
    (cold.root / dictionaries.PENDING).write_text(json.dumps({"retire": [old_id]}))
    brain = cold
    assert cold_notes(brain) == after, "every frame readable meanwhile"
    assert brain.forgotten_check(gone).traces, "the old dictionary still holds it"
    doctor = cli.invoke(app, ["doctor"])
    assert doctor.exit_code == 1 and "run `brain reindex`" in doctor.output, doctor.output
    assert cli.invoke(app, ["reindex"]).exit_code == 0
    assert not old.exists() and not (cold.root / dictionaries.PENDING).exists()
    assert cold_notes(brain) == after and old_id not in frame_dictionaries(brain)
    assert brain.doctor().ok
    brain.sleep()
    assert brain.forgotten_check(gone).traces == ()


def test_forget_history_purge_takes_the_dictionary_out_of_every_commit(
    vault: Path, clock: FixedClock
) -> None:
    set_yaml(vault, "cold: false", "cold: true")
    enable(vault)
    brain = open_vault(vault, clock=clock)
    try:
        ids = fill(brain)
        old = go_cold(brain, clock, ids)
        gone = learned(brain, old, ids)
        # A second version: --history forgets both.
        newer = brain.correct(gone, "The second telling, with nothing of the first in it.")
        old_rel = old.relative_to(vault).as_posix()
        assert old_rel in git(vault, "log", "--all", "--name-only", "--format=")
        before = cold_notes(brain)
    finally:
        brain.close()
    code, shown = _in_pty(vault, ["forget", newer.id, "--history", "--purge"], None)
    assert code == 0, shown
    assert old_rel in shown.replace("\r\n", "\n"), "the person is told before it happens"
    assert not old.exists()
    assert old_rel not in git(vault, "log", "--all", "--name-only", "--format=")
    assert not git(vault, "status", "--porcelain")
    brain = open_vault(vault, clock=clock)
    try:
        after = cold_notes(brain)
        assert after == {p: b for p, b in before.items() if gone.encode() not in b}
        assert len(after) == len(WORDS) - 1
    finally:
        brain.close()
    assert _brain(vault, "sleep").returncode == 0
    for note_id in (gone, newer.id):
        check = _brain(vault, "doctor", "--forgotten", note_id)
        assert check.returncode == 0 and "no trace" in check.stdout, check.stdout
    objects = subprocess.run(
        ["git", "-C", str(vault), "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    ).stdout
    assert gone.encode() not in objects


def test_under_git_the_replacement_lands_in_the_forgets_commit(
    vault: Path, clock: FixedClock
) -> None:
    set_yaml(vault, "cold: false", "cold: true")
    enable(vault)
    brain = open_vault(vault, clock=clock)
    try:
        ids = fill(brain)
        old = go_cold(brain, clock, ids)
        gone = learned(brain, old, ids)
        brain.forget(gone)
        ((_v, _i, new),) = brain._context.store.cold.dictionaries.listing()
    finally:
        brain.close()
    assert git(vault, "log", "-1", "--format=%s").startswith(f"brain: forget {gone}")
    changed = git(vault, "show", "--name-status", "--format=", "HEAD").splitlines()
    assert f"D\t{old.relative_to(vault).as_posix()}" in changed
    assert f"A\t{new.relative_to(vault).as_posix()}" in changed
    assert sum(line.startswith("M\tcold/") for line in changed) == len(WORDS) - 1
    assert not git(vault, "status", "--porcelain")


def test_a_damaged_frame_keeps_its_dictionary(cold: Brain, clock: FixedClock) -> None:
    """Never lose a note: a frame that cannot be read now keeps the dictionary that may read
    it once mended; the others are remade, and the next pass tries again."""
    ids = fill(cold)
    old = go_cold(cold, clock, ids)
    gone = learned(cold, old, ids)
    own = cold.root / cold._context.row(gone).path
    damaged = next(p for p in sorted((cold.root / "cold").rglob("*.md.zst")) if p != own)
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    cold.forget(gone)
    assert old.exists() and damaged.read_bytes() == bytes(data)
    assert len(frame_dictionaries(cold)) == 2
    old_id = int(old.stem.split("-")[1])
    assert dictionaries.pending(cold._context) == {old_id}
