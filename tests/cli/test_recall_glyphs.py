"""`brain recall` of an emoji or a CJK character finds the note that holds it, first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._cli import _register, app

_register()

NOTES = [
    ("Kayaking", "Kayaking on the lake at dawn, the water calm 🚣."),
    ("Tokyo diary", "東京の天気は今日は晴れです。桜がきれいでした。"),
    ("Party", "Birthday party at the lake house 🎉🎂."),
    ("Ferry", "The ferry to the island leaves at nine."),
    ("Garden", "Stake the quince tomatoes in May."),
]


@pytest.mark.parametrize(("query", "title"), [("🚣", "Kayaking"), ("桜", "Tokyo diary")])
def test_recall_of_an_emoji_or_a_kanji_shows_its_note_first(
    cli: CliRunner, vault: Path, query: str, title: str
) -> None:
    for name, text in NOTES:
        assert cli.invoke(app, ["remember", text, "--title", name]).exit_code == 0
    res = cli.invoke(app, ["recall", query, "-k", "5", "--json"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.stdout)["hits"]
    assert hits[0]["title"] == title and hits[0]["band"] == "strong"
