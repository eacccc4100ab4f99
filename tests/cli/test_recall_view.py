"""`brain recall`'s text: no snippet that repeats the title, date/path/id kept, weak looks weak."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from brain._cli import _register, app
from brain._hitview import adds, hit_lines

_register()

HIT_KEYS = {
    "id",
    "title",
    "snippet",
    "created",
    "updated",
    "source",
    "path",
    "score",
    "kind",
    "status",
    "node",
    "parent",
    "heading_path",
    "tags",
    "flags",
    "relevance",
    "band",
    "more",
}


def run(cli: CliRunner, *args: str) -> Any:
    return cli.invoke(app, list(args))


def hit(title: str, snippet: str, score: float, **extra: Any) -> dict[str, Any]:
    return {
        "id": "01JE2Z3K4M5N6P7Q8R9S0T1V2W",
        "title": title,
        "snippet": snippet,
        "created": "2026-12-02T10:31:00Z",
        "path": f"main/Knowledge/Inbox/{title}.md",
        "score": score,
        "status": "active",
        "heading_path": [],
        "flags": [],
        "band": "strong",
        **extra,
    }


def test_a_one_line_note_is_not_shown_twice(cli: CliRunner, vault: Path) -> None:
    assert run(cli, "remember", "We moved the launch to March").exit_code == 0
    long = "The launch party is at the harbour. There will be music and food for everyone."
    assert run(cli, "remember", long, "--title", "Launch party").exit_code == 0
    res = run(cli, "recall", "launch", "--mode", "text")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert sum("We moved the launch to March" in line for line in lines) == 1
    first = next(line for line in lines if "We moved the launch to March" in line)
    assert re.search(r"  \d{4}-\d\d-\d\d · main/Knowledge/Inbox/.+\.md · 01\w{24}$", first)
    assert any(line.strip().startswith("The launch party is at the harbour") for line in lines)


def test_json_output_keeps_its_fields(cli: CliRunner, vault: Path) -> None:
    run(cli, "remember", "We moved the launch to March")
    data = json.loads(run(cli, "recall", "launch", "--json").output)
    assert set(data) == {"query", "hits", "nothing_relevant"} and data["hits"]
    assert data["nothing_relevant"] is False
    assert all(set(h) == HIT_KEYS for h in data["hits"])
    assert data["hits"][0]["snippet"] == "We moved the launch to March"


def test_snippet_only_when_it_adds_something() -> None:
    assert not adds("We moved the launch to March.", "We moved the launch to March")
    assert not adds("we moved  the LAUNCH to march", "We moved the launch to March")
    assert not adds("Costs", "Widget", ("Specs", "Costs"))  # the heading already says it
    assert not adds("", "Anything")
    assert adds("The Widget Pro weighs 2 kg.", "Widget Pro specs")


def test_the_band_colours_a_weak_match_as_weak() -> None:
    lines = hit_lines(
        [
            hit("Strong one", "A first passage.", 2.0),
            hit("Weak one", "A passage that barely matches.", 0.2, band="weak"),
        ],
        "v",
    )
    strong = next(line for line in lines if line[0][0].startswith("1. "))
    weak = next(line for line in lines if line[0][0].startswith("2. "))
    assert strong[0] == ("1. Strong one", "bold") and ("strong", "green") in strong
    assert weak[0] == ("2. Weak one", "dim") and ("weak", "dim") in weak
    assert lines[-1] == [("   ", ""), ("A passage that barely matches.", "dim")]


def test_status_headings_and_flags_still_show() -> None:
    lines = hit_lines(
        [
            hit(
                "Costs",
                "Ten euros a unit.",
                1.0,
                status="archived",
                heading_path=["Widget", "Costs"],
                flags=["a sibling was corrected"],
            )
        ],
        "v",
    )
    text = ["".join(t for t, _s in line) for line in lines]
    assert text[0].endswith("  archived")
    assert text[1:] == ["   Widget › Costs", "   Ten euros a unit.", "   ⚠ a sibling was corrected"]
    assert hit_lines([], "notes") == [[("nothing relevant in notes", "")]]


def test_a_notes_escape_sequences_are_not_played_in_the_terminal(
    cli: CliRunner, vault: Path
) -> None:
    """A note's text (a model's, a synced file's) holding ESC or BEL is shown without them,
    on the full path and the fast path alike (both print hit_lines)."""
    text = "Zebra crossing notes \x1b]52;c;ZXZpbA==\x07 \x1b[31mred\x1b[0m\tend"
    assert run(cli, "remember", text, "--title", "Zebra").exit_code == 0
    out = run(cli, "recall", "zebra crossing").output
    assert "Zebra crossing notes" in out and "red" in out
    assert "\x1b" not in out and "\x07" not in out
    shown = "".join(t for line in hit_lines([hit("Zebra\x1b[2J", text, 1.0)], "v") for t, _ in line)
    assert not any(c in shown for c in "\x1b\x07\t") and "Zebra[2J" in shown


def test_expand_list_and_history_do_not_play_a_notes_escape_sequences(
    cli: CliRunner, vault: Path
) -> None:
    """The same for a whole note: its lines and tabs kept, its ESC and BEL left out."""
    text = "Zebra crossing notes \x1b]52;c;ZXZpbA==\x07\n\x1b[2Jsecond\tline"
    made = json.loads(run(cli, "remember", text, "--title", "Zebra", "--json").stdout)
    run(cli, "correct", made["id"], text + "\nthird line")
    for args in (["expand", made["id"]], ["list"], ["expand", made["id"], "--history"]):
        out = run(cli, *args).output
        assert "Zebra" in out and "\x1b" not in out and "\x07" not in out, args
    whole = run(cli, "expand", made["id"]).output
    assert "Zebra crossing notes ]52;c;ZXZpbA==\n[2Jsecond" in whole  # its lines kept
