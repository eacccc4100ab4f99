"""The cold tier: byte-exact moves, recall and expand of cold notes, retrain safety, damage."""

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
from brain._errors import InvalidInput
from brain._model import new_id
from brain._vault.cold import cold_path, is_cold
from brain.testing import T0, tree_digest
from tests.notes.test_lifecycle import set_yaml

_register()
DAY = timedelta(days=1)
TOPICS = ["garden", "boiler", "taxes", "bicycle", "recipes", "travel", "books", "music"]


def fill(brain: Brain, count: int, prefix: str = "Note") -> list[str]:
    """Notes with enough shared structure for a dictionary to learn from."""
    ids = []
    for n in range(count):
        topic = TOPICS[n % len(TOPICS)]
        text = (
            f"Remember about {topic}: item number {n} needs attention before the weekend. "
            f"The {topic} plan has several steps and a budget; check the {topic} list again."
        )
        ids.append(brain.remember(text, title=f"{prefix} {n} {topic}").id)
    return ids


@pytest.fixture
def cold(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    set_yaml(vault, "cold: false", "cold: true")
    brain = open_vault(vault, clock=clock)
    yield brain
    brain.close()


def test_hot_cold_hot_gives_identical_bytes(cold: Brain) -> None:
    fill(cold, 12)
    # A hand-written note with idiosyncratic formatting must survive exactly, too.
    odd = cold.root / "main/Knowledge/Inbox/Odd.md"
    odd.write_bytes(b"---\r\ntitle:   Odd  \r\nkind: titled\r\n---\r\nCRLF body \xc3\xa9\r\n\r\n")
    cold._context.catch_up()
    row = next(r for r in cold.list() if r.title == "Odd")
    original = cold._context.store.read_bytes(row.path)
    move = cold.tier_move(row.id, "cold")
    assert move is not None and move.target == cold_path(row.path)
    assert not (cold.root / row.path).exists()
    frame = (cold.root / move.target).read_bytes()
    assert (
        zstandard.get_frame_parameters(frame).dict_id
        == cold._context.store.cold.dictionaries.newest()
    )
    assert cold._context.store.cold.dictionaries.newest() != 0, (
        "a dictionary was trained on the vault"
    )
    back = cold.tier_move(row.id, "hot")
    assert back is not None and back.target == row.path
    assert (cold.root / row.path).read_bytes() == original
    assert not (cold.root / move.target).exists()
    assert cold.tier_move(row.id, "hot") is None


def test_cold_notes_stay_recallable_and_expand_decompresses(cold: Brain) -> None:
    ids = fill(cold, 12)
    note = cold._context.get(ids[3])
    cold.tier_move(note.id, "cold")
    hit = next(h for h in cold.recall("taxes item number 3") if h.id == note.id)
    assert is_cold(hit.path) and hit.node == "Knowledge/Inbox"
    peek = cold.expand(note.id, touch=False)
    assert peek.body == note.body and is_cold(peek.path)
    assert cold._context.row(note.id).path == hit.path


def test_a_touch_moves_a_cold_note_back_hot(cold: Brain, clock: FixedClock) -> None:
    ids = fill(cold, 12)
    note = cold._context.get(ids[0])
    with cold._context.lock.hold():
        cold._context.save(note.with_meta(status="archived", tags=["archived", "closed"]))
    cold.tier_move(note.id, "cold")
    clock.set(T0 + 200 * DAY)
    back = cold.expand(note.id)
    assert back.path == note.path and back.status == "active"
    assert (cold.root / note.path).is_file()
    assert not (cold.root / cold_path(note.path)).exists()
    assert cold.doctor().ok


def test_writing_to_a_cold_note_moves_it_back(cold: Brain) -> None:
    ids = fill(cold, 12)
    note = cold._context.get(ids[1])
    cold.tier_move(note.id, "cold")
    again = cold.remember("one more line", title=note.title)
    assert again.id == note.id and again.path == note.path
    assert "one more line" in cold._context.store.read(note.path).body
    assert cold._context.caches.catalog.files().get(cold_path(note.path)) is None


def test_correcting_a_cold_note_keeps_its_history_and_brings_it_back_hot(cold: Brain) -> None:
    ids = fill(cold, 12)
    note = cold._context.get(ids[3])
    cold.tier_move(note.id, "cold")
    new = cold.correct(note.id, "the taxes plan changed: file in March")
    assert new.path == note.path, "a correction is a touch: the current version is hot"
    old = cold._context.get(note.id)
    assert old.status == "superseded" and not is_cold(old.path) and old.path.endswith(").md")
    assert not list((cold.root / "cold").rglob("*.md")), "no plain note inside cold/"
    cold._context.reindex()  # the files alone hold both versions
    assert {v.id for v in cold.history(new.id)} == {new.id, note.id}
    assert cold.doctor().ok


def test_a_cold_note_made_local_only_and_back_stays_a_readable_cold_note(cold: Brain) -> None:
    ids = fill(cold, 12)
    note = cold._context.get(ids[4])
    cold.tier_move(note.id, "cold")
    hidden = cold.set_field(note.id, "visibility", "local-only")
    assert hidden.path == f"cold/local-only/{note.path}.zst"
    assert cold._context.get(note.id).body == note.body and cold.doctor().ok
    back = cold.set_field(note.id, "visibility", "normal")
    assert back.path == cold_path(note.path) and back.visibility == "normal"
    assert not (cold.root / "local-only").exists() and not (cold.root / "cold/local-only").exists()
    cold._context.reindex()
    assert cold._context.get(note.id).body == note.body and cold.doctor().ok


def test_a_taken_hot_path_gets_a_free_neighbour(cold: Brain) -> None:
    ids = fill(cold, 12)
    note = cold._context.get(ids[2])
    cold.tier_move(note.id, "cold")
    (cold.root / note.path).write_text("someone else took this name\n")
    cold._context.catch_up()
    back = cold.tier_move(note.id, "hot")
    assert back is not None and back.target == note.path[: -len(".md")] + " 2.md"
    assert cold._context.get(note.id).body == note.body


def test_retrain_never_makes_an_old_cold_note_unreadable(cold: Brain) -> None:
    ids = fill(cold, 12)
    first = cold._context.get(ids[0])
    cold.tier_move(first.id, "cold")
    old_dict = cold._context.store.cold.dictionaries.newest()
    fill(cold, 30, prefix="More")
    new_dict = cold.tier_retrain()
    assert new_dict != old_dict
    assert [i for _v, i, _p in cold._context.store.cold.dictionaries.listing()] == [
        old_dict,
        new_dict,
    ]
    second = cold._context.get(ids[1])
    cold.tier_move(second.id, "cold")
    frames = {
        n.id: zstandard.get_frame_parameters((cold.root / cold_path(n.path)).read_bytes()).dict_id
        for n in (first, second)
    }
    assert frames == {first.id: old_dict, second.id: new_dict}
    assert cold.expand(first.id, touch=False).body == first.body
    assert cold.expand(second.id, touch=False).body == second.body
    # Another clone (no caches at all) reads both from the files and the dictionaries alone.
    clone = cold.root.parent / "clone"
    shutil.copytree(cold.root, clone, ignore=shutil.ignore_patterns(".brain"))
    other = open_vault(clone)
    assert other.reindex() > 0
    assert other._context.get(first.id).body == first.body
    assert other._context.get(second.id).body == second.body
    assert other.doctor().ok
    other.close()


def test_sleep_moves_long_untouched_archived_notes_to_cold(cold: Brain, clock: FixedClock) -> None:
    ids = fill(cold, 12)
    clock.set(T0 + 70 * DAY)
    report = cold.sleep()
    assert len(report.aged) == 12 and not report.moved, "archived, but not yet 90 days untouched"
    clock.set(T0 + 90 * DAY)
    report = cold.sleep()
    assert sorted(m.id for m in report.moved) == sorted(ids)
    assert all(is_cold(cold._context.row(i).path) for i in ids)
    assert cold.recall("bicycle budget")
    log = (cold.root / f"main/Insights/Logs/{(T0 + 90 * DAY):%Y-%m-%d}.md").read_text()
    assert "## Moved between tiers (12)" in log and "hot → cold" in log
    assert cold.sleep().moved == []


def test_the_cold_tier_is_off_by_default(brain: Brain, cli: CliRunner, vault: Path) -> None:
    note = brain.remember("keep me", title="Keep")
    with pytest.raises(InvalidInput, match=r"cold tier is off"):
        brain.tier_move(note.id, "cold")
    digest = tree_digest(vault)
    result = cli.invoke(app, ["tier", "move", note.id, "cold"])
    assert result.exit_code == 2 and "cold tier is off" in result.output
    assert tree_digest(vault) == digest


def test_records_stay_hot(cold: Brain) -> None:
    session = cold.remember("we talked", node="Memory/Sessions")
    with pytest.raises(InvalidInput, match="dated"):
        cold.tier_move(session.id, "cold")


def test_a_damaged_cold_file_is_reported_and_the_rest_keeps_working(
    cold: Brain, cli: CliRunner
) -> None:
    ids = fill(cold, 12)
    damaged, fine = cold._context.get(ids[0]), cold._context.get(ids[1])
    for note in (damaged, fine):
        cold.tier_move(note.id, "cold")
    target = cold.root / cold_path(damaged.path)
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    report = cold.doctor()
    assert [p for p, _ in report.broken] == [cold_path(damaged.path)]
    assert "damaged cold file" in report.broken[0][1]
    assert cold.expand(fine.id, touch=False).body == fine.body
    assert cold.recall("boiler item number 1")
    assert cold.tier_status().unreadable == (cold_path(damaged.path),)
    result = cli.invoke(app, ["doctor"])
    assert result.exit_code == 1 and cold_path(damaged.path) in result.output


def test_a_missing_dictionary_is_named(cold: Brain) -> None:
    ids = fill(cold, 12)
    note = cold._context.get(ids[0])
    cold.tier_move(note.id, "cold")
    dict_id = cold._context.store.cold.dictionaries.newest()
    shutil.rmtree(cold.root / "cold/dictionaries")
    cold._context.store.cold.dictionaries._loaded.clear()
    reasons = [r for _p, r in cold.doctor().broken]
    assert reasons and f"dictionary {dict_id}" in reasons[0]


def test_tier_status_counts_and_ratio(cold: Brain, cli: CliRunner) -> None:
    ids = fill(cold, 20)
    for note_id in ids[:10]:
        cold.tier_move(note_id, "cold")
    status = cold.tier_status()
    assert status.enabled and status.cold_notes == 10
    assert status.cold_plain_bytes > status.cold_bytes > 0
    assert status.ratio > 1.5
    result = cli.invoke(app, ["tier", "status", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["cold_notes"] == 10 and data["hot_notes"] == status.hot_notes
    assert cli.invoke(app, ["tier", "status"]).exit_code == 0


def test_tier_command_errors_name_the_argument(cold: Brain, cli: CliRunner) -> None:
    digest = tree_digest(cold.root)
    for args, words in [
        (["tier", "freeze"], "tier action"),
        (["tier", "move"], "needs ID"),
        (["tier", "move", "01JE2Z3K000000000000000000", "lukewarm"], "tier must be hot or cold"),
        (["tier", "status", "01JE2Z3K000000000000000000"], "takes no ID"),
        (["tier", "move", "nope", "cold"], "not a note id"),
    ]:
        result = cli.invoke(app, args)
        assert result.exit_code == 2, args
        assert words in result.output, (args, result.output)
    assert tree_digest(cold.root) == digest


def test_local_only_and_private_notes_never_leave_the_machine(cold: Brain) -> None:
    fill(cold, 12)
    # Many of them, full of their secret words: a dictionary trained on them would hold them.
    for n, (visibility, word) in enumerate(
        [("local-only", "quasarbloom")] * 8 + [("private", "nebulafrost")] * 8
    ):
        folder = "local-only/main" if visibility == "local-only" else "main"
        path = cold.root / f"{folder}/Knowledge/Inbox/{word} {n}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        title = "Secret" if n == 0 else f"{word} {n}"
        path.write_text(
            f"---\nid: {new_id(T0)}\ntitle: {title}\nkind: titled\nvisibility: {visibility}\n"
            f"---\n" + f"{word} codeword {word} again and {word}.\n" * 20
        )
    cold._context.catch_up()
    rows = {r.title: r for r in cold.list() if r.title in ("Secret", "Private")}
    dict_id = cold.tier_retrain()
    dictionary = next(
        p for _v, i, p in cold._context.store.cold.dictionaries.listing() if i == dict_id
    )
    assert b"quasarbloom" not in dictionary.read_bytes()
    assert b"nebulafrost" not in dictionary.read_bytes()
    move = cold.tier_move(rows["Secret"].id, "cold")
    assert move is not None
    assert move.target == "cold/local-only/main/Knowledge/Inbox/quasarbloom 0.md.zst"
    assert cold._context.row(rows["Secret"].id).partition == "main"
    assert cold._context.row(rows["Secret"].id).visibility == "local-only"
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=cold.root, check=True)
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", move.target], cwd=cold.root, check=False
        )
        assert ignored.returncode == 0, "a local-only cold file must be git-ignored"
        tracked = subprocess.run(
            ["git", "check-ignore", "-q", str(dictionary.relative_to(cold.root))],
            cwd=cold.root,
            check=False,
        )
        assert tracked.returncode == 1, "dictionaries travel with git"
    back = cold.tier_move(rows["Secret"].id, "hot")
    assert back is not None and back.target == "local-only/main/Knowledge/Inbox/quasarbloom 0.md"


def test_doctor_names_a_cold_note_unpacked_by_hand(cold: Brain, cli: CliRunner) -> None:
    [kept] = fill(cold, 1)
    move = cold.tier_move(kept, "cold")
    assert move is not None
    frame = cold.root / move.target
    unpacked = frame.with_name(frame.name.removesuffix(".zst"))  # `zstd -d` beside the frame
    unpacked.write_bytes(zstandard.ZstdDecompressor().decompress(frame.read_bytes()))
    report = cold.doctor()
    assert not report.ok
    [said] = report.cold_text
    hot = move.target.removeprefix("cold/").removesuffix(".zst")
    assert said.startswith(unpacked.relative_to(cold.root).as_posix()) and hot in said
    result = cli.invoke(app, ["doctor", "--vault", str(cold.root)])
    assert result.exit_code == 1 and "tier move" in result.output
    unpacked.unlink()
    assert cold.doctor().ok
