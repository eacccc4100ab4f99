"""Notes an editor saved with a byte-order mark or CRLF line ends (or both, or old Mac CRs) keep
their identity and are written back as the person saved them (issue 41, part 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._daemon.client import start
from brain._model import Note, content_hash
from brain._vault import notefile
from tests.daemon.conftest import brain as run_brain
from tests.daemon.conftest import stop_daemon, until

_register()
BOM = b"\xef\xbb\xbf"
STYLES = ["bom", "crlf", "bom+crlf", "cr"]


def saved_as(style: str, data: bytes) -> bytes:
    """The bytes of a note as an editor would save them in this style."""
    if "crlf" in style:
        data = data.replace(b"\n", b"\r\n")
    if style == "cr":
        data = data.replace(b"\n", b"\r")
    return BOM + data if "bom" in style else data


def in_style(style: str, data: bytes) -> bool:
    """Whether a file is written throughout in this style (its mark, every line end)."""
    if data.startswith(BOM) != ("bom" in style):
        return False
    text = data.removeprefix(BOM)
    if style == "cr":
        return b"\n" not in text and b"\r" in text
    if "crlf" in style:
        return text.count(b"\n") == text.count(b"\r\n") > 0
    return b"\r" not in text


def body_bytes(data: bytes) -> bytes:
    """What follows the closing fence line, byte for byte."""
    text = data.removeprefix(BOM)
    sep = b"\r\n" if b"\r\n" in text else b"\r" if b"\n" not in text else b"\n"
    fence = sep + b"---" + sep
    return text[text.index(fence, 3) + len(fence) :]


def _two_related(brain: Brain) -> tuple[Note, Note]:
    other = brain.remember("Giraffes sleep standing up.", title="Giraffe")
    note = brain.remember("Zebras are striped.\nTheir stripes are unique.", title="Zebra")
    note = brain.relate(note.id, "references", other.id)
    return note, other


def run(cli: CliRunner, *args: str) -> dict[str, Any]:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def same_note(shown: dict[str, Any], note: Note, other: Note) -> bool:
    """Whether `brain expand --json` shows this note: its id, path, title, date and relation."""
    meta, links = shown["meta"], shown["relations"]["outgoing"]
    return (shown["id"], shown["path"], meta["title"], meta["created"]) == (
        note.id,
        note.path,
        note.title,
        note.created,
    ) and [(link["type"], link["id"]) for link in links] == [("references", other.id)]


@pytest.mark.parametrize("style", STYLES)
def test_parse_and_render_give_back_the_same_bytes(style: str) -> None:
    plain = b"---\nid: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\ntitle: Zebra\n---\nStriped.\n\nTwo lines.\n"
    data = saved_as(style, plain)
    note = notefile.parse(data.decode("utf-8"), "main/Zebra.md")
    assert note.id == "01JE2Z3K4M5N6P7Q8R9S0T1V2W" and note.title == "Zebra"
    assert note.body == "Striped.\n\nTwo lines.\n"  # read as the text it is
    assert notefile.render(note).encode("utf-8") == data
    changed = notefile.render(note.with_meta(status="active")).encode("utf-8")
    assert in_style(style, changed) and body_bytes(changed) == body_bytes(data)


def test_mixed_line_ends_are_read_as_they_are_and_the_body_kept_byte_for_byte() -> None:
    data = "---\r\nid: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\r\ntitle: Mixed\n---\nOne\r\nTwo\nThree\r"
    note = notefile.parse(data, "main/Mixed.md")
    assert note.id == "01JE2Z3K4M5N6P7Q8R9S0T1V2W" and note.title == "Mixed"
    assert note.body == "One\r\nTwo\nThree\r"
    assert notefile.render(note.with_meta(status="active")).endswith("---\nOne\r\nTwo\nThree\r")


def test_a_hand_written_note_with_a_bom_gets_its_front_matter_after_the_mark(
    brain: Brain, vault: Path
) -> None:
    path = vault / "main/Knowledge/Inbox/Typed in Notepad.md"
    path.write_bytes(BOM + b"Written on Windows.\r\nSecond line.\r\n")
    brain._context.catch_up()
    data = path.read_bytes()
    assert (
        in_style("bom+crlf", data)
        and body_bytes(data) == b"Written on Windows.\r\nSecond line.\r\n"
    )
    note = notefile.parse(data.decode("utf-8"), "x")
    assert note.title == "Typed in Notepad" and brain._context.get(note.id).body.startswith(
        "Written on"
    )


@pytest.mark.parametrize("style", STYLES)
def test_reindex_and_expand_keep_the_note_and_its_style(
    style: str, brain: Brain, vault: Path, cli: CliRunner
) -> None:
    note, other = _two_related(brain)
    path = vault / note.path
    data = saved_as(style, path.read_bytes())
    path.write_bytes(data)
    reindexed = cli.invoke(app, ["reindex"])
    assert reindexed.exit_code == 0, reindexed.output
    assert path.read_bytes() == data  # read, not rewritten
    shown = run(cli, "expand", note.id, "--json")  # a touch: written back
    assert same_note(shown, note, other)
    assert shown["body"] == "Zebras are striped.\nTheir stripes are unique.\n"
    after = path.read_bytes()
    assert in_style(style, after) and body_bytes(after) == body_bytes(data)
    reread = notefile.parse(after.decode("utf-8"), note.path)
    assert reread.id == note.id and reread.relations == note.relations
    assert reread.meta["relations"] == [{"type": "references", "target": other.id}]
    assert [n.id for n in brain.list() if n.title == "Zebra"] == [note.id]  # no second note
    assert run(cli, "doctor", "--json")["ok"]


def test_relate_and_correct_write_the_persons_style_back(brain: Brain, vault: Path) -> None:
    note, other = _two_related(brain)
    path = vault / note.path
    path.write_bytes(saved_as("bom+crlf", path.read_bytes()))
    brain._context.catch_up()
    brain.unrelate(note.id, "references", other.id)
    assert in_style("bom+crlf", path.read_bytes())
    fixed = brain.correct(note.id, "Zebras are striped, black on white.")
    assert fixed.path == note.path and in_style("bom+crlf", path.read_bytes())
    old = brain._context.get(note.id)
    assert in_style("bom+crlf", (vault / old.path).read_bytes())  # the old version, moved


@pytest.mark.parametrize("style", ["bom+crlf", "cr"])
def test_a_hand_edit_seen_by_the_daemon_keeps_the_note(
    style: str, vault: Path, clock: FixedClock
) -> None:
    core = open_vault(vault, clock=clock)
    note, other = _two_related(core)
    core.close()
    path = vault / note.path
    start(vault).close()
    try:
        reader = open_vault(vault, clock=clock)  # only reads the catalog the daemon keeps
        edited = path.read_bytes().replace(b"Their stripes", b"Each zebra's stripes")
        data = saved_as(style, edited)
        path.write_bytes(data)

        def seen() -> bool:
            row = reader._context.caches.catalog.file(note.path)
            return row is not None and row.hash == content_hash(data)

        until(seen, "the daemon's watcher to index the edit")
        row = reader._context.caches.catalog.get(note.id)
        assert row is not None and row.path == note.path and row.title == "Zebra"
        assert path.read_bytes() == data
        reader.close()
        shown = run_brain(vault, "expand", note.id, "--json")
        assert shown.returncode == 0, shown.stderr
        got = json.loads(shown.stdout)
        assert same_note(got, note, other)
        assert got["body"] == "Zebras are striped.\nEach zebra's stripes are unique.\n"
        after = path.read_bytes()
        assert in_style(style, after) and body_bytes(after) == body_bytes(data)
        reread = notefile.parse(after.decode("utf-8"), note.path)
        assert reread.id == note.id and [r.target for r in reread.relations] == [other.id]
    finally:
        stop_daemon(vault)
