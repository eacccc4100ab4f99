"""`brain remember --visibility`: a new note private or local-only from its first write. Made
normal and then local-only (`brain set`), its first version stayed in git's history."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._errors import InvalidInput
from brain.testing import tree_digest

_register()


def _history(vault: Path) -> str:
    every = ["git", "-C", str(vault), "log", "--all", "-p", "--format=%B"]
    return subprocess.run(every, capture_output=True, text=True, check=True).stdout


def test_a_local_only_note_never_reaches_git(gbrain: Brain, vault: Path) -> None:
    gbrain.remember("The kite is red.", title="Kite")
    pin = gbrain.remember(
        "My bank pin is 4321 zanzibar.", title="Bank pin", visibility="local-only"
    )
    assert pin.path == "local-only/main/Knowledge/Inbox/Bank pin.md"
    assert (vault / pin.path).is_file()
    gbrain.commit()
    history = _history(vault)
    assert "Kite" in history and "zanzibar" not in history and "Bank pin" not in history
    assert gbrain.recall("zanzibar")[0].id == pin.id  # the person's recall finds it


def test_a_private_note_is_never_shown_to_a_model(brain: Brain) -> None:
    note = brain.remember("Lunch with Xavier about the offer.", title="Offer", visibility="private")
    assert note.path == "main/Knowledge/Inbox/Offer.md" and note.visibility == "private"
    assert brain.at(for_model=True).recall("Xavier offer") == []
    assert brain.recall("Xavier offer")[0].id == note.id


def test_what_cannot_be_hidden_is_refused_and_nothing_changes(brain: Brain, vault: Path) -> None:
    kite = brain.remember("The kite is red.", title="Kite")
    before = tree_digest(vault)
    refused = [
        ({"title": "Kite"}, f"`brain set {kite.id} visibility private` changes that one"),
        ({"node": "Insights/Logs"}, "titled note takes a visibility"),
        ({"visibility": "secret"}, "allowed: normal, private, local-only"),
    ]
    for options, said in refused:
        with pytest.raises(InvalidInput) as caught:
            brain.remember("Hidden words.", **{"visibility": "private", **options})  # type: ignore[arg-type]
        assert said in str(caught.value), options
    with pytest.raises(InvalidInput, match="a model cannot set"):
        brain.at(for_model=True).remember("Hidden words.", visibility="private")
    assert tree_digest(vault) == before


def test_the_command_line_takes_it(cli: CliRunner, vault: Path) -> None:
    said = cli.invoke(
        app, ["remember", "Quiet words.", "--title", "Q", "--visibility", "local-only"]
    )
    assert said.exit_code == 0 and "local-only/main/Knowledge/Inbox/Q.md" in said.output
    wrong = cli.invoke(app, ["remember", "x", "--visibility", "hidden"])
    assert wrong.exit_code == 2 and "visibility cannot be 'hidden'" in wrong.output
