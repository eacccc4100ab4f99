"""Two files, one id: the note that held the id first keeps it (by the catalog, then by
`created`, then by path), only the copy gets a new one, references keep pointing at the
original, and doctor says which file kept the id (issue 41, part 3)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from brain import _partitions as partitions
from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._model import Note
from brain._vault import notefile

INBOX = "main/Knowledge/Inbox"
CREATED = "created: 2026-12-02T10:31:00Z"
# Where the copy goes and what `created` it claims: older, newer, in another partition.
PLACES = {
    "older": (f"{INBOX}/A copy.md", "created: 2020-01-01T00:00:00Z"),
    "newer": (f"{INBOX}/A copy.md", "created: 2027-06-01T00:00:00Z"),
    "other partition": ("work/Knowledge/Inbox/Zebra.md", CREATED),
}


def _vault_with_references(brain: Brain) -> tuple[Note, Note, Note]:
    """A note, one relating to it, and a corrected one whose new version supersedes it."""
    partitions.create(brain._context, "work")
    zebra = brain.remember("Zebras are striped, black on white.", title="Zebra")
    fan = brain.remember("I like the striped ones best.", title="Fan")
    brain.relate(fan.id, "references", zebra.id)
    plan = brain.remember("The zoo opens at nine.", title="Zoo")
    fixed = brain.correct(plan.id, "The zoo opens at ten.")
    return zebra, fan, fixed


def _copy(vault: Path, source: str, rel: str, created: str) -> Path:
    """A copy made in a file manager, its `created` and its body changed by hand."""
    target = vault / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    text = (vault / source).read_text().replace(CREATED, created, 1)
    target.write_text(text.replace("\n---\n", "\n---\nMy copy. ", 1))
    return target


def _id_of(path: Path) -> str:
    return notefile.parse(path.read_text(), path.name).id


def _catch_up(brain: Brain, how: str) -> None:
    if how == "reindex":
        brain.reindex(embed=False)
    else:
        brain._context.catch_up()


@pytest.mark.parametrize("how", ["reindex", "catch-up"])
@pytest.mark.parametrize("place", list(PLACES))
def test_the_original_keeps_its_id_and_references(
    brain: Brain, vault: Path, place: str, how: str
) -> None:
    zebra, fan, fixed = _vault_with_references(brain)
    old = brain._context.get(fixed.supersedes or "")
    rel, created = PLACES[place]
    copies = [
        _copy(vault, zebra.path, rel, created),
        _copy(vault, old.path, rel.replace("Zebra", "Zoo").replace("A copy", "Zoo copy"), created),
    ]
    _catch_up(brain, how)
    assert brain._context.get(zebra.id).path == zebra.path
    assert brain._context.get(zebra.id).body == "Zebras are striped, black on white.\n"
    assert (
        brain._context.get(old.id).path == old.path
        and brain._context.get(fixed.id).supersedes == old.id
    )
    assert [r.target for r in brain._context.get(fan.id).relations] == [zebra.id]
    assert [e.target for e in brain.links(fan.id).outgoing] == [zebra.id]
    for copy, original in zip(copies, (zebra, old), strict=True):
        renewed = notefile.parse(copy.read_text(), copy.name)
        assert renewed.id not in (zebra.id, old.id) and renewed.meta["copy_of"] == original.id
        assert brain._context.get(renewed.id).body.startswith("My copy. ")
    report = brain.doctor()
    assert report.ok and not report.copies
    said = [
        line for line in report.renewed if line.startswith(copies[0].relative_to(vault).as_posix())
    ]
    own = _id_of(copies[0])
    assert said == [
        f"{rel}: a copy ({zebra.path} kept the id {zebra.id}); this file got its "
        f"own id {own} (remove `copy_of` from it once checked)"
    ]


def test_doctor_names_the_copy_before_anything_is_changed(brain: Brain, vault: Path) -> None:
    zebra, _fan, _fixed = _vault_with_references(brain)
    copy = _copy(vault, zebra.path, f"{INBOX}/A copy.md", "created: 2020-01-01T00:00:00Z")
    report = brain.doctor()
    assert report.copies == (
        f"{INBOX}/A copy.md: holds the id {zebra.id} of {zebra.path} (a copy?); the next "
        "catch-up (any command) gives it an id of its own",
    )
    assert _id_of(copy) == zebra.id  # doctor looks without touching


@pytest.mark.parametrize(
    "created", ["", "created: yesterday", "created: [1, 2]", "created: 0", "created: 1999-99-99"]
)
def test_with_no_catalog_the_earlier_created_keeps_the_id(
    vault: Path, clock: FixedClock, created: str
) -> None:
    """Both files new to the catalog (dropped in together): `created` decides, not the order
    of the walk; a copy whose `created` is missing or unreadable never wins by it."""
    brain = open_vault(vault, clock=clock)
    zebra = brain.remember("Zebras are striped.", title="Zebra")
    brain.close()
    original = vault / zebra.path
    text = original.read_text().replace(CREATED, "created: 2026-01-01T00:00:00Z")
    original.write_text(text)
    copy = vault / f"{INBOX}/A copy.md"  # first in the walk
    copy.write_text(
        text.replace("created: 2026-01-01T00:00:00Z\n", created + "\n" if created else "").replace(
            "Zebras", "Copied zebras"
        )
    )
    shutil.rmtree(vault / ".brain")
    fresh = open_vault(vault, clock=clock)  # rebuilds from the files
    try:
        assert fresh._context.get(zebra.id).path == zebra.path and _id_of(copy) != zebra.id
        assert fresh._context.get(zebra.id).path == zebra.path
    finally:
        fresh.close()


def test_a_catch_up_meeting_two_new_files_keeps_the_id_with_the_earlier_created(
    vault: Path, clock: FixedClock
) -> None:
    brain = open_vault(vault, clock=clock)
    try:
        head = "---\nid: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\ntitle: {}\n{}\n---\n{}\n"
        (vault / f"{INBOX}/Zebra.md").write_text(head.format("Zebra", CREATED, "The original."))
        (vault / f"{INBOX}/A copy.md").write_text(  # first in the walk, created later
            head.format("Zebra", "created: 2027-01-01T00:00:00Z", "The copy.")
        )
        brain._context.catch_up()
        assert brain._context.get("01JE2Z3K4M5N6P7Q8R9S0T1V2W").path == f"{INBOX}/Zebra.md"
        assert _id_of(vault / f"{INBOX}/A copy.md") != "01JE2Z3K4M5N6P7Q8R9S0T1V2W"
    finally:
        brain.close()


def test_a_renamed_original_keeps_its_id_over_a_copy_made_at_the_same_time(
    brain: Brain, vault: Path
) -> None:
    zebra = brain.remember("Zebras are striped.", title="Zebra")
    original = vault / zebra.path
    copy = _copy(vault, zebra.path, f"{INBOX}/A copy.md", CREATED)  # sorts first, same created
    original.rename(original.with_name("Zebras.md"))  # the catalog knew its inode
    brain._context.catch_up()
    assert brain._context.get(zebra.id).path == f"{INBOX}/Zebras.md" and _id_of(copy) != zebra.id


@pytest.mark.parametrize("how", ["moved over it", "id edited"])
def test_a_file_that_now_holds_another_note_lets_go_of_the_one_it_held(
    brain: Brain, vault: Path, how: str
) -> None:
    boat = brain.remember("The boat is painted red.", title="Boat")
    car = brain.remember("The car is painted blue.", title="Car")
    if how == "moved over it":
        (vault / car.path).replace(vault / boat.path)
    else:
        path = vault / boat.path
        path.write_text(path.read_text().replace(boat.id, car.id).replace("red", "green"))
        (vault / car.path).unlink()
    brain._context.catch_up()
    listed = [(n.id, n.path) for n in brain.list() if n.title in ("Boat", "Car")]
    assert listed == [(car.id, boat.path)]
    assert boat.id not in {h.id for h in brain.recall("boat painted red")}


@pytest.mark.parametrize("how", ["reindex", "catch-up"])
def test_a_copy_of_a_corrected_note_is_not_a_second_next_version(
    brain: Brain, vault: Path, how: str
) -> None:
    gym = brain.remember("Gym on Monday.", title="Gym")
    fixed = brain.correct(gym.id, "Gym on Tuesday.")
    copy = vault / INBOX / "Gym copy.md"
    shutil.copyfile(vault / fixed.path, copy)
    _catch_up(brain, how)
    renewed = notefile.parse(copy.read_text(), copy.name)
    assert renewed.meta["copy_of"] == fixed.id and renewed.supersedes is None
    assert [n.id for n in brain.history(fixed.id)] == [gym.id, fixed.id]
    assert brain.history(renewed.id)[-1].id == renewed.id
    assert brain.correct(fixed.id, "Gym on Friday.").supersedes == fixed.id
