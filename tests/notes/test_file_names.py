"""Note file names a vault cloned to macOS, Windows and Linux can hold: no two names one of them
takes for the same file, none Windows refuses, none too long (docs/lab/probe-names.md)."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from brain._brain import Brain
from brain._errors import InvalidInput
from brain.testing import tree_digest

INBOX = "main/Knowledge/Inbox"
NFD_CAFE = unicodedata.normalize("NFD", "Café")  # as macOS wrote it: "e" + U+0301
NFC_CAFE = unicodedata.normalize("NFC", "Café")


def _hand_made(vault: Path, rel: str, title: str) -> Path:
    path = vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {title}\n---\nWritten by hand.\n")
    return path


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != ".keep")


def test_a_title_differing_in_case_from_a_hand_made_file_gets_a_name_of_its_own(
    brain: Brain, vault: Path
) -> None:
    hand = _hand_made(vault, f"{INBOX}/kite.md", "Kite flying")
    kite = brain.remember("Kite is our deploy tool.", title="Kite")
    assert kite.path == f"{INBOX}/Kite 2.md"  # "Kite.md" is "kite.md" on macOS and Windows
    assert "Written by hand." in hand.read_text()
    assert brain.expand(kite.id).title == "Kite"


def test_a_note_beside_a_macos_file_of_its_name_in_nfd_gets_a_name_of_its_own(
    brain: Brain, vault: Path
) -> None:
    _hand_made(vault, f"{INBOX}/{NFD_CAFE}.md", "Coffee places")
    cafe = brain.remember("The café on Rue Oberkampf.", title=NFC_CAFE)
    assert cafe.path == f"{INBOX}/{NFC_CAFE} 2.md"
    assert len(_names(vault / INBOX)) == 2
    hits = {hit.id for hit in brain.recall("Oberkampf café")}
    assert cafe.id in hits


def test_a_hand_made_nfd_note_is_found_by_its_title_typed_in_nfc(brain: Brain, vault: Path) -> None:
    (vault / INBOX).mkdir(parents=True, exist_ok=True)
    (vault / INBOX / f"{NFD_CAFE}.md").write_text("Coffee places by hand.\n")
    added = brain.remember("The café on Rue Oberkampf.", title=NFC_CAFE)
    assert added.path == f"{INBOX}/{NFD_CAFE}.md"  # added to it, no twin
    assert _names(vault / INBOX) == [f"{NFD_CAFE}.md"]


def test_a_title_typed_in_nfd_names_its_file_in_nfc_and_is_the_same_title(
    brain: Brain, vault: Path
) -> None:
    first = brain.remember("The café on Rue Oberkampf.", title=NFD_CAFE)
    assert first.path == f"{INBOX}/{NFC_CAFE}.md"
    again = brain.remember("It opens at eight.", title=NFC_CAFE)
    assert again.id == first.id
    assert _names(vault / INBOX) == [f"{NFC_CAFE}.md"]


def test_a_note_whose_file_name_a_mac_turned_to_nfd_keeps_its_title_and_its_bytes(
    brain: Brain, vault: Path
) -> None:
    cafe = brain.remember("The café on Rue Oberkampf.", title=NFC_CAFE)
    nfd = vault / INBOX / f"{NFD_CAFE}.md"
    (vault / cafe.path).rename(nfd)
    before = nfd.read_bytes()
    brain._context.catch_up(force=True)
    assert brain.expand(cafe.id, touch=False).title == NFC_CAFE  # not renamed "Café" in NFD
    assert nfd.read_bytes() == before


@pytest.mark.parametrize("title", ["漢" * 100, "😀" * 80, "한국어" * 30])
def test_a_long_title_in_cjk_or_emoji_names_a_file_every_system_can_hold(
    brain: Brain, vault: Path, title: str
) -> None:
    note = brain.remember("A long title.", title=title)
    name = Path(note.path).name
    assert len(name.encode()) <= 255 - len(".. 99.12345678.tmp")  # with its temp name's
    assert title.startswith(name.removesuffix(".md"))
    assert brain.expand(note.id).title == title
    assert brain.remember("Again.", title=title).id == note.id


@pytest.mark.parametrize(
    ("node", "said"),
    [
        ("Knowledge/Q&A: kites", "may not contain ':'"),
        ("Knowledge/Why?", "may not contain '?'"),
        ("Knowledge/Kites.", "may not end with '.'"),
        ("Knowledge/" + "漢" * 90, "longer than 200 bytes"),
    ],
)
def test_a_new_folder_windows_cannot_hold_is_refused_and_nothing_changes(
    brain: Brain, vault: Path, node: str, said: str
) -> None:
    before = tree_digest(vault)
    with pytest.raises(InvalidInput, match=said):
        brain.remember("Kites fly.", title="Kites", node=node)
    assert tree_digest(vault) == before


def test_a_hand_made_folder_windows_cannot_hold_is_still_written_into(
    brain: Brain, vault: Path
) -> None:
    (vault / "main/Knowledge/Q&A: kites").mkdir(parents=True)
    note = brain.remember("Kites fly.", title="Kites", node="Knowledge/Q&A: kites")
    assert note.path == "main/Knowledge/Q&A: kites/Kites.md"


def test_a_thread_beside_a_folder_of_its_name_in_another_case_gets_a_folder_of_its_own(
    brain: Brain, vault: Path
) -> None:
    _hand_made(vault, "main/Memory/Threads/kite trip/index.md", "Kite trip planning")
    thread = brain.remember("Where do we fly?", title="Kite trip", kind="thread")
    assert thread.path == "main/Memory/Threads/Kite trip 2/index.md"
    assert _names(vault / "main/Memory/Threads") == ["Kite trip 2", "kite trip"]


@pytest.mark.parametrize(
    ("title", "name"), [("COM¹", "COM¹ (note).md"), ("conout$", "conout$ (note).md")]
)
def test_a_title_windows_keeps_for_a_device_names_a_file_it_can_hold(
    brain: Brain, title: str, name: str
) -> None:
    note = brain.remember("A device name.", title=title)
    assert note.path == f"{INBOX}/{name}" and brain.expand(note.id).title == title


def test_doctor_names_each_file_a_macos_or_windows_clone_cannot_hold(
    brain: Brain, vault: Path
) -> None:
    brain.remember("Kite is our deploy tool.", title="Kite")
    for name in ["Q?.md", "con.md", "Kite 2.md ", f"{NFD_CAFE}.md", f"{NFC_CAFE}.md", "kite.md"]:
        _hand_made(vault, f"{INBOX}/{name}", "By hand")
    (vault / "main/Knowledge/A:B").mkdir()
    said = brain.doctor().unportable
    assert not brain.doctor().ok
    named = {line.split(": ")[0] for line in said}
    cafe = {f"{INBOX}/{NFD_CAFE}.md", f"{INBOX}/{NFC_CAFE}.md"}  # one of the two: the second
    assert len(named & cafe) == 1, said
    assert named - cafe == {
        f"{INBOX}/Q?.md",
        f"{INBOX}/con.md",
        f"{INBOX}/Kite 2.md ",
        f"{INBOX}/kite.md",
        "main/Knowledge/A:B",
    }, said
    assert any("another case" in line for line in said)
    assert any("another Unicode form" in line for line in said)


def test_doctor_says_nothing_of_the_names_brain_makes(brain: Brain) -> None:
    for title in ["Kite", "kite?", "A:B", "con", "Dots...", NFD_CAFE, "漢" * 100, "İstanbul"]:
        brain.remember(f"About {title}.", title=title)
    assert brain.doctor().unportable == ()
