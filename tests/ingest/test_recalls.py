"""Transcripts and chat exports become recall notes: verbatim turns, a summary, one per
conversation, each turn recallable, imports idempotent, bad files refused with nothing written."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import InvalidInput
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import HashingSparse
from brain._ingest.transcripts import parse_markdown_chat, summarize
from brain._recall import openers
from brain._recall.names import NAME_PRIOR
from brain._recall.openers import OPENER
from brain.testing import tree_digest

_register()

SEED = {
    "recall_id": "widget-pro-specs-2025-01-08",
    "created_at": "2025-01-08T14:30:00Z",
    "platform": "claude.ai",
    "metadata": {"tags": ["product"]},
    "summary": "Widget Pro specifications.",
    "transcript": [
        {
            "role": "user",
            "content": "What are the Widget Pro system requirements?",
            "timestamp": "2025-01-08T14:30:15Z",
        },
        {
            "role": "assistant",
            "content": "The Widget Pro needs 8 GB of memory and a quad-core "
            "processor. It runs on Linux and macOS.",
            "timestamp": "2025-01-08T14:30:45Z",
        },
        {"role": "user", "content": "Does it support a second monitor?"},
        {"role": "assistant", "content": "Yes, two displays over USB-C at 60 Hz."},
    ],
}

CHAT = """# Sourdough help

**User:** My sourdough starter smells like acetone, what happened?

**Assistant:** Acetone smell means the starter is hungry. Feed it twice a day at 1:1:1.

**User:** Thanks, how warm should it be?

**Assistant:** Keep it around 24 °C for a lively rise.
"""


def chatgpt(conversations: int = 2) -> list[dict[str, Any]]:
    out = []
    for n in range(conversations):
        mapping = {
            "root": {"message": None, "parent": None, "children": ["q"]},
            "q": {
                "parent": "root",
                "children": ["a"],
                "message": {
                    "author": {"role": "user"},
                    "create_time": 1_700_000_000 + n,
                    "content": {"content_type": "text", "parts": [f"How do I prune fig tree {n}?"]},
                },
            },
            "a": {
                "parent": "q",
                "children": [],
                "message": {
                    "author": {"role": "assistant"},
                    "create_time": 1_700_000_060 + n,
                    "content": {
                        "content_type": "text",
                        "parts": [f"Prune fig tree {n} in late winter, above a bud."],
                    },
                },
            },
        }
        out.append(
            {
                "id": f"conv-{n}",
                "title": f"Fig pruning {n}",
                "create_time": 1.7e9 + n,
                "current_node": "a",
                "mapping": mapping,
            }
        )
    return out


def claude() -> list[dict[str, Any]]:
    return [
        {
            "uuid": "c-1",
            "name": "Lisbon trip",
            "created_at": "2025-03-01T09:00:00Z",
            "chat_messages": [
                {
                    "sender": "human",
                    "text": "Which tram goes to Belém from Lisbon?",
                    "created_at": "2025-03-01T09:00:00Z",
                },
                {
                    "sender": "assistant",
                    "text": "Tram 15E runs from Praça da Figueira to Belém.",
                    "created_at": "2025-03-01T09:00:20Z",
                },
            ],
        }
    ]


def zipped(tmp_path: Path, conversations: list[dict[str, Any]], name: str) -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", json.dumps(conversations))
        archive.writestr("user.json", "{}")
    return path


def test_ingest_seed_json_makes_a_recall_note_with_turns(brain: Brain, tmp_path: Path) -> None:
    path = tmp_path / "widget.json"
    path.write_text(json.dumps(SEED))
    report = brain.ingest(path)
    [note_id] = report.added
    note = brain._context.get(note_id)
    assert note.kind == "recall" and note.path.startswith("main/Memory/Recalls/claude.ai/")
    assert note.source["external_id"] == "widget-pro-specs-2025-01-08"
    assert note.source["via"] == "ingest" and note.created == "2025-01-08T14:30:00Z"
    assert "## Summary" in note.body and "## Transcript" in note.body
    for turn in SEED["transcript"]:
        assert turn["content"] in note.body  # verbatim
    # Each turn is its own recallable object that maps back into the transcript.
    hit = brain.recall("USB-C displays Hz")[0]
    assert hit.id == f"{note_id}#3" and hit.parent == note_id and hit.kind == "chunk"
    assert hit.title == note.title and hit.heading_path == ("Transcript", "Assistant")
    _, section = brain._context.section(hit.id)
    assert note.body[section.start : section.end] == SEED["transcript"][3]["content"]
    assert section.role == "assistant"
    # Each turn's heading says who spoke and when. The answer leads the question that asked
    # for it, whose words it shares (recall/answers.py: a memory that asks does not tell).
    paths = [h.heading_path for h in brain.recall("system requirements")]
    assert paths[0] == ("Transcript", "Assistant · 2025-01-08T14:30:45Z")
    assert ("Transcript", "User · 2025-01-08T14:30:15Z") in paths
    assert brain.ingest(path).unchanged == [note_id]  # idempotent


def test_ingest_a_markdown_chat_with_an_extractive_summary(brain: Brain, tmp_path: Path) -> None:
    path = tmp_path / "sourdough.md"
    path.write_text(CHAT)
    [note_id] = brain.ingest(path).added
    note = brain._context.get(note_id)
    assert note.title == "Sourdough help" and "/Memory/Recalls/Chats/" in note.path
    summary = note.body.split("## Summary\n\n", 1)[1].split("\n\n## Transcript", 1)[0]
    assert summary == summarize(parse_markdown_chat(CHAT, str(path)).turns)
    assert "Acetone smell means the starter is hungry." in summary  # verbatim sentences
    assert note.meta["turns"] == 4
    hit = brain.recall("acetone smell")[0]
    assert hit.parent == note_id or hit.id == note_id


def test_import_chatgpt_zip_is_idempotent(brain: Brain, tmp_path: Path) -> None:
    export = zipped(tmp_path, chatgpt(3), "chatgpt.zip")
    report = brain.import_export("chatgpt", export)
    assert len(report.added) == 3
    before = tree_digest(brain.root)
    again = brain.import_export("chatgpt", export)
    assert not again.added and not again.updated and len(again.unchanged) == 3
    assert tree_digest(brain.root) == before
    assert brain._context.caches.catalog.count("kind='recall'") == 3
    hit = brain.recall("prune fig tree 1 bud")[0]
    assert hit.title == "Fig pruning 1"


def test_a_forgotten_conversation_stays_out_of_a_later_import(
    brain: Brain, cli: CliRunner, tmp_path: Path
) -> None:
    """People import their whole export again each month: what they forgot stays forgotten."""
    export = zipped(tmp_path, chatgpt(3), "chatgpt.zip")
    first = brain.import_export("chatgpt", export)
    forgotten_id = first.added[1]
    title = brain._context.get(forgotten_id).title
    brain.forget(forgotten_id)
    again = brain.import_export("chatgpt", export)
    assert not again.added and not again.updated and len(again.unchanged) == 2
    assert again.forgotten == 1
    assert title not in {n.title for n in brain.list(kind="recall")}
    said = cli.invoke(app, ["import", "chatgpt", str(export)])
    assert said.exit_code == 0, said.output
    assert "0 updated, 2 already there, 1 you forgot (left out)." in said.stdout
    # only a salted hash of where it came from is kept, no word of it
    kept = (brain.root / ".brain/forgotten.json").read_text()
    assert title.split()[0] not in kept and "chatgpt" not in kept


def test_a_conversation_that_grew_is_updated_in_place(brain: Brain, tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    conversations = claude()
    (folder / "conversations.json").write_text(json.dumps(conversations))
    [note_id] = brain.import_export("claude", folder).added
    conversations[0]["chat_messages"].append(
        {"sender": "human", "text": "And how long does the ride take?"}
    )
    (folder / "conversations.json").write_text(json.dumps(conversations))
    report = brain.import_export("claude", folder)
    assert report.updated == [note_id] and not report.added
    assert "how long does the ride" in brain._context.get(note_id).body


def test_cli_import_claude_with_progress_and_summary(
    cli: CliRunner, vault: Path, tmp_path: Path
) -> None:
    export = zipped(tmp_path, claude(), "claude.zip")
    result = cli.invoke(app, ["import", "claude", str(export)])
    assert result.exit_code == 0, result.output
    assert "1 recall note(s) added, 0 updated, 0 already there." in result.stdout
    result = cli.invoke(app, ["import", "claude", str(export), "--json"])
    assert json.loads(result.stdout)["unchanged"] and not json.loads(result.stdout)["added"]
    result = cli.invoke(app, ["recall", "tram to Belém", "--json"])
    hit = json.loads(result.stdout)["hits"][0]
    assert hit["title"] == "Lisbon trip" and hit["heading_path"][0] == "Transcript"


@pytest.mark.parametrize(
    ("args", "content", "message"),
    [
        (["import", "chatgpt"], '[{"id": 1,\n  "mapping": }]', "not valid JSON at line 2"),
        (["import", "claude"], json.dumps(chatgpt(1)), "missing field 'chat_messages'"),
        (["import", "chatgpt"], "[]", "holds no conversations"),
        (["import", "gemini"], "[]", "unknown export 'gemini'"),
        (["ingest"], '{"transcript": [{"role": "user"}]}', "missing field 'content'"),
        (["ingest"], "{\n\n  oops", "not valid JSON at line 3"),
        (["ingest"], '{"transcript": []}', "no turn has any text"),
        (["ingest"], '{"transcript": [{"role": "user", "content": " "}]}', "no turn has any text"),
    ],
)
def test_bad_files_are_refused_and_nothing_is_written(
    cli: CliRunner, vault: Path, tmp_path: Path, args: list[str], content: str, message: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(content)
    before = tree_digest(vault)
    result = cli.invoke(app, [*args, str(path)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert path.name in result.stderr or "gemini" in message
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1
    assert tree_digest(vault) == before


def test_missing_and_odd_transcript_files(brain: Brain, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="no such file"):
        brain.ingest(tmp_path / "nope.json")
    odd = tmp_path / "notes.md"
    odd.write_text("just some notes, nobody speaking\n")
    with pytest.raises(InvalidInput, match="no speaker lines"):
        brain.ingest(odd)
    binary = tmp_path / "x.md"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InvalidInput, match="not UTF-8"):
        brain.ingest(binary)
    with pytest.raises(InvalidInput, match="a folder, not a transcript") as folder:
        brain.ingest(tmp_path)  # a person reaching for the documents of a folder
    assert folder.value.hint is not None and f"brain connect {tmp_path}" in folder.value.hint


FRIENDS = {
    "recall_id": "friends-2023-05-08",
    "created_at": "2023-05-08T13:56:00Z",
    "platform": "chat",
    "transcript": [
        {"role": "Caroline", "content": "I went to a support group yesterday, it was powerful."},
        {"role": "Melanie", "content": "That's great! How did the support group help?"},
        {"role": "Melanie", "content": "We went camping with the kids last weekend."},
    ],
}


def test_a_turn_is_found_by_its_speaker(brain: Brain, tmp_path: Path) -> None:
    """A turn's speaker is part of what it says, as in a remembered turn ("Caroline: …"): the
    full text finds Caroline's turn by her name, and her words lead Melanie's question."""
    path = tmp_path / "friends.json"
    path.write_text(json.dumps(FRIENDS))
    [note_id] = brain.ingest(path).added
    note = brain._context.get(note_id)
    assert brain.recall("Caroline", mode="text")[0].id == f"{note_id}#0"
    hits = brain.recall("What did Caroline say about the support group?", mode="text")
    assert hits[0].id == f"{note_id}#0"
    assert hits[0].title == note.title  # a hit in a conversation is titled by it
    assert note.body.count("Caroline: ") == 0  # the file holds the turn as it was said


def _chat(path: Path, name: str, said: list[tuple[str, str]]) -> Path:
    turns = [{"role": role, "content": content} for role, content in said]
    data = {"recall_id": name, "created_at": "2023-05-08T13:56:00Z", "transcript": turns}
    path.write_text(json.dumps({**data, "platform": "chat"}))
    return path


def test_a_turn_is_lifted_by_its_speakers_name(brain: Brain, tmp_path: Path) -> None:
    """A question that names someone lifts what they said (the name prior, recall/names.py)
    in a transcript as among remembered turns: a turn's title is read as said by its speaker.
    Melanie's turn says the question's words most; Caroline's is what she said."""
    said = [
        ("Caroline", "I went to a support group yesterday, it was powerful."),
        ("Melanie", "Caroline, a support group? Tell me about the support group!"),
        ("Melanie", "We went camping with the kids last weekend."),
    ]
    [note_id] = brain.ingest(_chat(tmp_path / "friends.json", "friends", said)).added
    question = "What did Caroline say about the support group?"
    hits = brain.recall(question, mode="text", explain=True)
    assert hits[0].id == f"{note_id}#0" and hits[0].title == "friends"
    assert hits[0].explain is not None and hits[0].explain["name"] == NAME_PRIOR
    assert hits[0].source["role"] == "Caroline"  # who said it, beside where it was said


def test_a_transcripts_first_turn_opens_it(
    vault: Path, clock: FixedClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first turn of an imported conversation opens its dialogue (recall/openers.py), as
    the first of the same turns remembered one by one does."""
    said = [
        ("Nate", "Guess what Joanna, my turtles are going to a reptile show in Tampa next month!"),
        ("Joanna", "No way! Which of your turtles are going to the reptile show?"),
        ("Nate", "Shelly and Tank, my two show turtles. The reptile show judges turtles by shell."),
        ("Joanna", "They will win for sure."),
    ]
    brain = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    try:
        [note_id] = brain.ingest(_chat(tmp_path / "turtles.json", "turtles", said)).added
        question = "Where is the reptile show Nate's turtles are going to?"
        hits = brain.recall(question, k=5, explain=True)
        assert hits[0].id == f"{note_id}#0"
        assert hits[0].explain is not None and hits[0].explain["opens"] == OPENER
        # Without the stage, the turn that says the question's words most, and not where, leads.
        monkeypatch.setattr(openers, "with_openers", lambda ranked, *_a: (list(ranked), {}))
        assert brain.recall(question, k=5)[0].id != f"{note_id}#0"
    finally:
        brain.close()


def test_a_conversation_listed_twice_is_one_note(brain: Brain, tmp_path: Path) -> None:
    """An export holding the same conversation id twice (an older and a newer copy) writes one
    note, the newer copy, and importing it again changes nothing."""
    older, newer = chatgpt(2)
    newer["id"], newer["title"] = older["id"], "Fig pruning, later"
    older["update_time"], newer["update_time"] = 1_700_000_100, 1_700_000_200
    export = zipped(tmp_path, [newer, older], "chatgpt.zip")
    report = brain.import_export("chatgpt", export)
    assert len(report.added) == 1 and not report.updated
    assert brain._context.get(report.added[0]).meta["title"] == "Fig pruning, later"
    before = tree_digest(brain.root)
    again = brain.import_export("chatgpt", export)
    assert again.unchanged == report.added and not again.updated and not again.added
    assert tree_digest(brain.root) == before


def test_a_markdown_chat_with_only_empty_turns_is_refused(brain: Brain, tmp_path: Path) -> None:
    chat = tmp_path / "blank.md"
    chat.write_text("**User:**\n\n**Assistant:**\n")
    before = tree_digest(brain.root)
    with pytest.raises(InvalidInput, match=r"blank\.md: no turn has any text"):
        brain.ingest(chat)
    assert tree_digest(brain.root) == before
