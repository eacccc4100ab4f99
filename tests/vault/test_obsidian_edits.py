"""What a person editing the vault in Obsidian does to its files: a note renamed from its title
bar, a new note that starts as an empty `Untitled.md`, a note's properties removed, a hand
rename not yet committed (docs/lab/probe-obsidian.md)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._git import repo as gitvault
from brain._vault import notefile

INBOX = "main/Knowledge/Inbox"
ROOT = Path(__file__).resolve().parents[2]


def _catch_up(brain: Brain, how: str) -> None:
    if how == "reindex":
        brain.reindex(embed=False)
    else:
        brain._context.catch_up(force=True)


def _meta(path: Path) -> dict[str, object]:
    return dict(notefile.parse(path.read_text(), path.name).meta)


def _titles(brain: Brain) -> dict[str, str]:
    return {row.id: row.title for row in brain.list()}


@pytest.mark.parametrize("how", ["catch-up", "reindex"])
@pytest.mark.parametrize("new_name", ["Kite deploy tool", "kite"])
def test_a_note_renamed_from_the_title_bar_takes_its_new_name_as_title(
    brain: Brain, vault: Path, how: str, new_name: str
) -> None:
    kite = brain.remember("Kite is our deploy tool.", title="Kite")
    (vault / kite.path).rename(vault / INBOX / f"{new_name}.md")
    _catch_up(brain, how)
    assert _titles(brain)[kite.id] == new_name
    assert _meta(vault / INBOX / f"{new_name}.md")["title"] == new_name
    again = brain.remember("It needs a green build.", title=new_name)
    assert again.id == kite.id  # the same note, no second file beside it
    assert sorted(p.name for p in (vault / INBOX).glob("*.md")) == [f"{new_name}.md"]


def test_a_note_moved_to_another_folder_or_copied_keeps_its_title(
    brain: Brain, vault: Path
) -> None:
    kite = brain.remember("Kite is our deploy tool.", title="Kite")
    hawk = brain.remember("Hawk watches Kite.", title="Hawk")
    (vault / "main/Knowledge/Domains/Tools").mkdir(parents=True)
    (vault / kite.path).rename(vault / "main/Knowledge/Domains/Tools/Kite.md")
    (vault / INBOX / "Hawk 1.md").write_bytes((vault / hawk.path).read_bytes())  # "Make a copy"
    brain._context.catch_up(force=True)
    titles = _titles(brain)
    assert titles[kite.id] == "Kite"
    assert titles[hawk.id] == "Hawk"
    copy = _meta(vault / INBOX / "Hawk 1.md")
    assert copy["copy_of"] == hawk.id
    assert copy["title"] == "Hawk"


def test_a_new_empty_note_is_left_alone_until_it_holds_text(brain: Brain, vault: Path) -> None:
    untitled = vault / INBOX / "Untitled.md"
    untitled.write_bytes(b"")
    brain._context.catch_up(force=True)
    assert untitled.read_bytes() == b""  # never written while an editor may be saving it
    assert "Untitled" not in _titles(brain).values()
    assert any("an empty file" in reason for _path, reason in brain.doctor().broken)
    named = untitled.rename(vault / INBOX / "Lunch ideas.md")  # the title typed in Obsidian
    named.write_text("Tacos on Tuesday.\n")
    brain._context.catch_up(force=True)
    assert list(_titles(brain).values()).count("Lunch ideas") == 1
    assert brain.doctor().ok


@pytest.mark.parametrize("half", ["-", "--", "---", "---\n", "---\ntitle: Lun"])
def test_a_save_caught_halfway_through_its_front_matter_is_not_written_over(
    brain: Brain, vault: Path, half: str
) -> None:
    lunch = vault / INBOX / "Lunch ideas.md"
    lunch.write_text(half)  # Obsidian writes in place: the first bytes are on disk, not the rest
    brain._context.catch_up(force=True)
    assert lunch.read_text() == half  # the same file, untouched: the editor's save goes on
    assert "Lunch ideas" not in _titles(brain).values()
    lunch.write_text("---\ntitle: Lunch ideas\ntags: [food]\n---\nTacos on Tuesday.\n")
    brain._context.catch_up(force=True)
    assert list(_titles(brain).values()).count("Lunch ideas") == 1
    assert _meta(lunch)["tags"] == ["food"] and brain.doctor().ok


@pytest.mark.parametrize("emptied", [False, True])
def test_a_note_whose_properties_were_removed_keeps_its_id(
    brain: Brain, vault: Path, emptied: bool
) -> None:
    kite = brain.remember("Kite is our deploy tool.", title="Kite")
    hawk = brain.remember("Hawk watches Kite.", title="Hawk")
    brain.relate(hawk.id, "references", kite.id)
    path = vault / kite.path
    if emptied:  # saved empty for a moment (Obsidian writes in place), then whole again
        text = path.read_bytes()
        path.write_bytes(b"")
        brain._context.catch_up(force=True)
        assert path.read_bytes() == b""
        path.write_bytes(text)
    else:  # every property removed in the Properties view
        path.write_text("Kite is our deploy tool.\n")
    brain._context.catch_up(force=True)
    assert _meta(path)["id"] == kite.id
    assert _meta(path)["created"] == kite.created
    report = brain.doctor()
    assert report.ok, report.to_json()
    assert [r.target for r in brain.expand(hawk.id, touch=False).relations] == [kite.id]


@pytest.fixture
def repo(vault: Path, git_identity: None) -> Path:
    gitvault.enable(vault)
    return vault


@pytest.fixture
def gbrain(repo: Path, clock: FixedClock) -> Iterator[Brain]:
    b = open_vault(repo, clock=clock)
    yield b
    b.close()


def test_the_log_of_a_note_renamed_by_hand_and_not_committed(gbrain: Brain, repo: Path) -> None:
    kite = gbrain.remember("Kite is our deploy tool.", title="Kite")
    (repo / kite.path).rename(repo / INBOX / "Kite deploy tool.md")
    gbrain._context.catch_up(force=True)
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True
    ).stdout
    assert "Kite deploy tool.md" in status  # the person's rename, theirs to commit
    subjects = [entry.message for entry in gbrain.git_log(kite.id)]
    assert subjects == [f'brain: remember "Kite" ({kite.id})']


def test_doctor_names_a_note_made_at_the_top_of_the_vault(brain: Brain, vault: Path) -> None:
    (vault / "2026-12-07.md").write_text("A daily note, where Obsidian puts one.\n")
    report = brain.doctor()
    assert report.unread == ("2026-12-07.md",)  # the vault's README.md is its own
    assert report.ok  # nothing is wrong with the vault: the person is told, no more
    assert report.to_json()["unread"] == ["2026-12-07.md"]


def test_the_editors_templates_are_not_notes(vault: Path, clock: FixedClock) -> None:
    """Obsidian's templates folder (named in its settings) is the mould of notes: read as
    notes, a template with `{{date}}` was broken for good, a plain one was given an id and a
    title that every note made from it copied, and a top-level one was a partition."""
    (vault / ".obsidian/plugins/templater-obsidian").mkdir(parents=True)
    (vault / ".obsidian/templates.json").write_text('{"folder": "Templates"}')
    (vault / ".obsidian/plugins/templater-obsidian/data.json").write_text(
        '{"templates_folder": "main/Meta/Moulds/"}'
    )
    moulds = {
        "Templates/Daily.md": "---\ncreated: {{date}}\n---\n# {{title}}\n",
        "Templates/Meeting.md": "---\ntags: [meeting]\n---\nAgenda:\n",
        "main/Meta/Moulds/Call.md": "---\ntags: [call]\n---\nWho called:\n",
    }
    for rel, text in moulds.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)
    brain = open_vault(vault, clock=clock)
    try:
        brain.remember("The agenda of the Monday meeting is short.", title="Monday")
        assert "Templates" not in brain._context.store.partitions()
        assert not [n for n in brain.list() if n.title in ("Daily", "Meeting", "Call")]
        (vault / "Templates/Later.md").write_text("---\ntags: [later]\n---\nLater:\n")
        brain.list()  # a catch-up after the editor wrote another template
        assert brain.doctor().ok
        brain.reindex(embed=False)
    finally:
        brain.close()
    for rel, text in moulds.items():
        assert (vault / rel).read_text() == text, rel  # never given an id or a title
    assert "id:" not in (vault / "Templates/Later.md").read_text()


def test_doctor_names_brains_fields_an_editor_left_unusable(vault: Path, clock: FixedClock) -> None:
    """Obsidian's properties pane lets a person type anything: an id no command names, a
    list for a title, a kind or status brain does not know. Each was read as it stood, and
    doctor said "All well."."""
    note = vault / "main/Knowledge/Inbox/Hawk.md"
    note.write_text(
        "---\nid: 12345\ntitle: [Hawk, Falcon]\nkind: note\nstatus: Active\n"
        "created: yesterday\n---\nThe hawk flew.\n"
    )
    brain = open_vault(vault, clock=clock)
    try:
        report = brain.doctor()
        said = [line.split(": ", 1)[1] for line in report.fields]
        assert not report.ok and said == [
            "id '12345' is not a brain id (26 letters and digits): no command names it",
            "title is list, not text",
            "kind 'note' is none of singleton, dated, titled, thread, recall, document, chunk, log",
            "status 'Active' is none of active, dormant, archived, resolved, superseded",
            "created 'yesterday' is not a date and time (2026-12-07T09:30Z)",
        ]
        note.write_text("The hawk flew.\n")  # the properties removed: a new, usable id
        brain.list()
        assert brain.doctor().fields == ()
    finally:
        brain.close()
