"""Markdown chat files that grow: the same note updated in place, wherever the file went;
an edit in the middle is a new chat; a forgotten chat stays out, grown or not."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain.testing import tree_digest

_register()

TRAM = """# Tram chat

**User:** Which tram goes to Belém from Lisbon?

**Assistant:** Tram 15E runs from Praça da Figueira to Belém.
"""

MORE = """
**User:** How long does the ride take?

**Assistant:** About twenty-five minutes, longer at rush hour.
"""


def recalls(brain: Brain) -> list[str]:
    return sorted(n.path for n in brain.list(kind="recall"))


def test_a_chat_file_that_grew_is_updated_in_place(
    brain: Brain, cli: CliRunner, tmp_path: Path
) -> None:
    chat = tmp_path / "tram.md"
    chat.write_text(TRAM)
    [note_id] = brain.ingest(chat).added
    path = brain._context.get(note_id).path
    chat.write_text(TRAM + MORE)
    said = cli.invoke(app, ["ingest", str(chat)])
    assert said.exit_code == 0, said.output
    assert "0 recall note(s) added, 0 updated, 1 grown, 0 already there." in said.stdout
    note = brain._context.get(note_id)
    assert recalls(brain) == [path] and note.path == path  # one note, the same file
    turns = note.body.split("## Transcript", 1)[1]
    assert turns.count("Tram 15E runs") == 1 and "twenty-five minutes" in turns
    assert note.meta["turns"] == 4
    assert note.updated > note.created  # grown since (the CLI's own clock): its hits say so
    hit = brain.recall("how long is the tram ride to Belém")[0]
    assert note_id in (hit.id, hit.parent)
    again = brain.ingest(chat)  # the grown file is now the stored one
    assert again.unchanged == [note_id] and not again.grown
    said = cli.invoke(app, ["ingest", str(chat), "--json"])
    assert json.loads(said.stdout)["grown"] == [] and json.loads(said.stdout)["unchanged"]


def test_a_chat_file_that_moved_and_grew_is_still_that_chat(brain: Brain, tmp_path: Path) -> None:
    """A chat file has no id of its own, and its path is none: it is known by its turns."""
    chat = tmp_path / "tram.md"
    chat.write_text(TRAM)
    [note_id] = brain.ingest(chat).added
    moved = tmp_path / "trips" / "lisbon.md"
    moved.parent.mkdir()
    moved.write_text(TRAM.replace("# Tram chat", "# Lisbon trams") + MORE)
    chat.unlink()
    report = brain.ingest(moved)
    assert report.grown == [note_id] and not report.added and not report.updated
    note = brain._context.get(note_id)
    assert note.title == "Lisbon trams" and note.source["file"] == str(moved)
    assert len(recalls(brain)) == 1


def test_a_chat_edited_in_the_middle_is_a_new_chat(brain: Brain, tmp_path: Path) -> None:
    chat = tmp_path / "tram.md"
    chat.write_text(TRAM)
    [first] = brain.ingest(chat).added
    edited = TRAM.replace("Praça da Figueira", "Cais do Sodré") + MORE
    chat.write_text(edited)
    report = brain.ingest(chat)
    assert len(report.added) == 1 and not report.grown and not report.updated
    assert brain._context.get(first).meta["turns"] == 2  # the first one untouched
    # A chat begun with another's turns but with a speaker changed is not it grown either.
    chat.write_text(TRAM.replace("**Assistant:**", "**User:**") + MORE)
    assert len(brain.ingest(chat).added) == 1
    # The same turns under another title are the same chat: updated, neither new nor grown.
    chat.write_text(TRAM.replace("# Tram chat", "# Trams of Lisbon"))
    report = brain.ingest(chat)
    assert report.updated == [first] and not report.added and not report.grown
    assert brain._context.get(first).title == "Trams of Lisbon"


def test_a_chat_grown_from_two_stored_ones_grows_the_longer(brain: Brain, tmp_path: Path) -> None:
    """Stored longer first, the shorter is a chat of its own; a later one grows the longer."""
    chat = tmp_path / "tram.md"
    chat.write_text(TRAM + MORE)
    [longer] = brain.ingest(chat).added
    chat.write_text(TRAM)
    [shorter] = brain.ingest(chat).added  # it does not begin with all of the longer's turns
    chat.write_text(TRAM + MORE + "\n**User:** And back?\n")
    assert brain.ingest(chat).grown == [longer]
    assert brain._context.get(shorter).meta["turns"] == 2


def test_a_forgotten_chat_stays_out_when_it_grew(
    brain: Brain, cli: CliRunner, tmp_path: Path
) -> None:
    chat = tmp_path / "tram.md"
    chat.write_text(TRAM)
    [note_id] = brain.ingest(chat).added
    brain.forget(note_id)
    before = tree_digest(brain.root)
    assert brain.ingest(chat).forgotten == 1
    chat.write_text(TRAM + MORE)
    said = cli.invoke(app, ["ingest", str(chat)])
    assert said.exit_code == 0, said.output
    assert "0 already there, 1 you forgot (left out)." in said.stdout
    assert recalls(brain) == [] and tree_digest(brain.root) == before
    # forgotten after it grew: the grown one stays out, and whatever grows from it
    chat.write_text(MORE.replace("How long", "Where does it stop"))
    [other] = brain.ingest(chat).added
    chat.write_text(MORE.replace("How long", "Where does it stop") + "\n**User:** Thanks!\n")
    assert brain.ingest(chat).grown == [other]
    brain.forget(other)
    chat.write_text(chat.read_text() + "\n**Assistant:** You are welcome.\n")
    assert brain.ingest(chat).forgotten == 1 and recalls(brain) == []
    kept = (brain.root / ".brain/forgotten.json").read_text()
    assert "Belém" not in kept and "markdown" not in kept  # salted hashes only
