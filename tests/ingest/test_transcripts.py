"""Transcripts: seed recall JSON, Markdown chats and ChatGPT / Claude exports, one model."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from brain._errors import BrainError
from brain._ingest.exports import parse_chatgpt_export, parse_claude_export
from brain._ingest.transcripts import (
    Transcript,
    Turn,
    parse_markdown_chat,
    parse_seed_json,
    summarize,
)

SEED = {
    "recall_id": "widget-pro-specs-2025-01-08",
    "node_id": "widget-pro-topic-uuid",
    "created_at": "2025-01-08T14:30:00Z",
    "platform": "claude.ai",
    "conversation_type": "text",
    "metadata": {"duration_minutes": 23, "message_count": 2, "tags": ["product", "technical"]},
    "summary": "Detailed discussion of Widget Pro technical specifications...",
    "transcript": [
        {
            "role": "user",
            "content": "What are the system requirements for Widget Pro?",
            "timestamp": "2025-01-08T14:30:15Z",
        },
        {
            "role": "assistant",
            "content": "Widget Pro requires a minimum of 4GB RAM and a 64-bit processor.",
            "timestamp": "2025-01-08T16:30:18.250+02:00",
        },
    ],
}


def _message(
    role: str, parts: list[Any], at: float | None, content_type: str = "text", **extra: Any
) -> dict[str, Any]:
    return {
        "id": f"msg-{role}-{at}",
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": at,
        "update_time": None,
        "content": {"content_type": content_type, "parts": parts},
        "status": "finished_successfully",
        "end_turn": True,
        "weight": 1.0,
        "metadata": extra.pop("metadata", {}),
        "recipient": extra.pop("recipient", "all"),
    }


def _node(node_id: str, message: dict[str, Any] | None, parent: str | None, *kids: str) -> Any:
    return node_id, {"id": node_id, "message": message, "parent": parent, "children": list(kids)}


def _chatgpt_conversations() -> list[dict[str, Any]]:
    image = {
        "content_type": "image_asset_pointer",
        "asset_pointer": "file-service://file-abc123",
        "size_bytes": 183000,
        "width": 1024,
        "height": 768,
    }
    hidden = {"is_visually_hidden_from_conversation": True}
    trip = dict(
        [
            _node("root", None, None, "sys"),
            _node("sys", _message("system", [""], None, metadata=hidden), "root", "u1"),
            _node(
                "u1",
                _message("user", ["Plan three days in Lisbon for me."], 1704103200.5),
                "sys",
                "a1-old",
                "a1-new",
            ),
            # The first answer was regenerated: its branch is not what the person last saw.
            _node(
                "a1-old", _message("assistant", ["Lisbon is hilly; OLD ANSWER."], 1704103210), "u1"
            ),
            _node(
                "a1-new",
                _message("assistant", ["Day one: Alfama and the castle."], 1704103220),
                "u1",
                "u2",
            ),
            _node(
                "u2",
                _message(
                    "user",
                    [image, "What tram is this?"],
                    1704103300,
                    content_type="multimodal_text",
                ),
                "a1-new",
                "a2",
            ),
            _node(
                "a2",
                _message("assistant", ["search('tram 28')"], 1704103301, content_type="code"),
                "u2",
                "t1",
            ),
            _node(
                "t1",
                _message("tool", ["Tram 28 runs Martim Moniz to Campo Ourique."], 1704103302),
                "a2",
                "a3",
            ),
            _node("a3", _message("assistant", ["That is the famous tram 28."], 1704103310), "t1"),
        ]
    )
    no_current = dict(
        [
            _node("r", None, None, "q"),
            _node(
                "q", _message("user", ["Name a good sourdough flour."], 1704200000), "r", "x", "y"
            ),
            _node("x", _message("assistant", ["An older reply."], 1704200010), "q"),
            _node("y", _message("assistant", ["Try a strong bread flour."], 1704200020), "q"),
        ]
    )
    only_system = dict(
        [
            _node("s0", None, None, "s1"),
            _node("s1", _message("system", ["You are ChatGPT."], None), "s0"),
        ]
    )
    return [
        {
            "title": "Lisbon trip",
            "create_time": 1704103199.25,
            "update_time": 1704103311.0,
            "mapping": trip,
            "current_node": "a3",
            "conversation_id": "6f1c-trip",
            "id": "6f1c-trip",
            "default_model_slug": "gpt-4o",
        },
        {"title": None, "create_time": 1704200000, "mapping": no_current, "id": "bread-1"},
        {"title": "Empty", "create_time": 1704300000, "mapping": only_system, "id": "empty-1"},
    ]


def _chatgpt_zip(tmp_path: Path, conversations: Any) -> Path:
    path = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", json.dumps(conversations))
        archive.writestr("chat.html", "<html></html>")
        archive.writestr("user.json", json.dumps({"id": "user-1"}))
    return path


def _claude_folder(tmp_path: Path, conversations: Any) -> Path:
    folder = tmp_path / "claude-export"
    folder.mkdir()
    (folder / "conversations.json").write_text(json.dumps(conversations, indent=2))
    (folder / "users.json").write_text("[]")
    return folder


CLAUDE = [
    {
        "uuid": "c0ffee-01",
        "name": "",
        "summary": "",
        "created_at": "2024-03-05T09:15:00.123456+00:00",
        "updated_at": "2024-03-05T09:20:00.000000+00:00",
        "account": {"uuid": "acct-1"},
        "chat_messages": [
            {
                "uuid": "m1",
                "sender": "human",
                "text": "How do I rotate the logs of my Flask app?",
                "content": [{"type": "text", "text": "How do I rotate the logs of my Flask app?"}],
                "created_at": "2024-03-05T09:15:01.000000+00:00",
                "attachments": [],
                "files": [],
            },
            {
                "uuid": "m2",
                "sender": "assistant",
                "text": "",
                "content": [
                    {"type": "text", "text": "Use a RotatingFileHandler."},
                    {"type": "tool_use", "name": "search", "input": {}},
                    {"type": "text", "text": "Set maxBytes and backupCount."},
                ],
                "created_at": "2024-03-05T09:15:09.000000+00:00",
            },
        ],
    }
]


def test_seed_recall_json_keeps_ids_turns_and_metadata() -> None:
    transcript = parse_seed_json(json.dumps(SEED), "recall/widget.json")
    assert transcript.external_id == "widget-pro-specs-2025-01-08"
    assert transcript.platform == "claude.ai"
    assert transcript.created == "2025-01-08T14:30:00Z"
    assert transcript.title == "What are the system requirements for Widget Pro?"
    assert transcript.turns == (
        Turn("user", "What are the system requirements for Widget Pro?", "2025-01-08T14:30:15Z"),
        Turn(
            "assistant",
            "Widget Pro requires a minimum of 4GB RAM and a 64-bit processor.",
            "2025-01-08T14:30:18Z",  # the +02:00 offset is folded into UTC
        ),
    )
    assert transcript.metadata["tags"] == ["product", "technical"]
    assert transcript.metadata["summary"].startswith("Detailed discussion")
    assert transcript.metadata["node_id"] == "widget-pro-topic-uuid"
    assert transcript.metadata["source"] == "recall/widget.json"
    json.dumps(transcript.metadata)  # stays JSON-able


def test_bad_json_names_the_file_line_and_column() -> None:
    broken = '{\n  "recall_id": "x",\n  "transcript": [\n    {"role": "user" "content": "hi"}\n'
    with pytest.raises(BrainError) as caught:
        parse_seed_json(broken, "recall/broken.json")
    message = str(caught.value)
    assert message.startswith("recall/broken.json: not valid JSON at line 4, column 21")
    assert "delimiter" in message


def test_a_missing_field_is_named() -> None:
    with pytest.raises(BrainError, match=r"recall/x\.json: missing field 'transcript'"):
        parse_seed_json(json.dumps({"recall_id": "x"}), "recall/x.json")
    turns = {"recall_id": "x", "transcript": [{"role": "user"}]}
    with pytest.raises(BrainError, match=r"transcript\[0\]: missing field 'content'"):
        parse_seed_json(json.dumps(turns), "recall/x.json")


def test_chatgpt_export_follows_the_current_branch(tmp_path: Path) -> None:
    trip, bread = parse_chatgpt_export(_chatgpt_zip(tmp_path, _chatgpt_conversations()))
    assert (trip.external_id, trip.title, trip.platform) == ("6f1c-trip", "Lisbon trip", "chatgpt")
    assert trip.created == "2024-01-01T09:59:59Z"  # fractional epoch seconds dropped
    assert trip.metadata["model"] == "gpt-4o"
    assert [(t.role, t.content) for t in trip.turns] == [
        ("user", "Plan three days in Lisbon for me."),
        ("assistant", "Day one: Alfama and the castle."),
        ("user", "[image]\n\nWhat tram is this?"),
        ("assistant", "That is the famous tram 28."),
    ]
    assert trip.turns[0].timestamp == "2024-01-01T10:00:00Z"
    everything = " ".join(t.content for t in trip.turns)
    assert "OLD ANSWER" not in everything  # the abandoned branch
    assert "Martim Moniz" not in everything and "search(" not in everything  # tool traffic
    # Without current_node the newest child is followed; without a title, the first question.
    assert bread.title == "Name a good sourdough flour."
    assert [t.content for t in bread.turns][-1] == "Try a strong bread flour."


def test_chatgpt_export_reads_a_folder_or_the_json_itself(tmp_path: Path) -> None:
    from_zip = parse_chatgpt_export(_chatgpt_zip(tmp_path, _chatgpt_conversations()))
    folder = tmp_path / "unpacked"
    folder.mkdir()
    (folder / "conversations.json").write_text(json.dumps(_chatgpt_conversations()))
    assert [t.turns for t in parse_chatgpt_export(folder)] == [t.turns for t in from_zip]
    direct = parse_chatgpt_export(folder / "conversations.json")
    assert [t.external_id for t in direct] == ["6f1c-trip", "bread-1"]


def test_chatgpt_export_errors_name_the_file_and_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("conversations.json", '[\n  {"title": "x",\n  "mapping": }\n]')
    with pytest.raises(BrainError, match=r"conversations\.json in .*bad\.zip: .*line 3, column 14"):
        parse_chatgpt_export(bad)
    with pytest.raises(BrainError, match=r"conversation 1 \('Lost'\): missing field 'mapping'"):
        parse_chatgpt_export(_chatgpt_zip(tmp_path, [{"title": "Lost", "id": "1"}]))
    with pytest.raises(BrainError, match="holds no conversations"):
        parse_chatgpt_export(_chatgpt_zip(tmp_path, []))
    empty = tmp_path / "other.zip"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("notes.txt", "hi")
    with pytest.raises(BrainError, match=r"no conversations\.json inside this zip"):
        parse_chatgpt_export(empty)
    with pytest.raises(BrainError, match="no such file or folder"):
        parse_chatgpt_export(tmp_path / "missing.zip")


def test_claude_export_prefers_text_and_falls_back_to_content_items(tmp_path: Path) -> None:
    (chat,) = parse_claude_export(_claude_folder(tmp_path, CLAUDE))
    assert (chat.external_id, chat.platform) == ("c0ffee-01", "claude")
    assert chat.title == "How do I rotate the logs of my Flask app?"  # the name was empty
    assert chat.created == "2024-03-05T09:15:00Z"
    assert chat.turns == (
        Turn("user", "How do I rotate the logs of my Flask app?", "2024-03-05T09:15:01Z"),
        Turn(
            "assistant",
            "Use a RotatingFileHandler.\n\nSet maxBytes and backupCount.",
            "2024-03-05T09:15:09Z",
        ),
    )
    assert chat.metadata["updated"] == "2024-03-05T09:20:00Z"
    assert "summary" not in chat.metadata  # empty values are not kept


def test_claude_export_shape_errors(tmp_path: Path) -> None:
    with pytest.raises(BrainError, match="missing field 'chat_messages'") as caught:
        parse_claude_export(_chatgpt_zip(tmp_path, _chatgpt_conversations()))
    assert "ChatGPT export" in str(caught.value)  # the hint spots the mix-up
    no_sender = [{"uuid": "u", "name": "N", "chat_messages": [{"text": "hi"}]}]
    with pytest.raises(BrainError, match=r"conversation 1 \('N'\), message 1: missing field"):
        parse_claude_export(_claude_folder(tmp_path, no_sender))


MARKDOWN_CHAT = """\
# Fixing the flaky CI job

Exported from my notes app.

**User:** Why does the integration job fail one time in ten?
It only happens on main.

**Assistant:** Most likely a race between the database container and the tests.

**Note:** this bold lead-in is part of the answer, not a new speaker.

```text
User: inside code this is not a speaker line
```

## User

Can I make the tests wait for the database?

> **Claude (2024-06-01 10:15):** Yes: add a healthcheck and `depends_on: condition`.
> Then the tests start only when Postgres accepts connections.

You said: thanks, that fixed it
"""


def test_markdown_chat_speaker_forms_and_multiline_turns() -> None:
    chat = parse_markdown_chat(MARKDOWN_CHAT, "chats/ci.md")
    assert chat.title == "Fixing the flaky CI job"
    assert chat.platform == "markdown"
    assert chat.external_id == hashlib.sha256(MARKDOWN_CHAT.encode()).hexdigest()
    roles = [t.role for t in chat.turns]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    first, answer, _, quoted, last = chat.turns
    assert first.content == (
        "Why does the integration job fail one time in ten?\nIt only happens on main."
    )
    assert "**Note:** this bold lead-in" in answer.content
    assert "User: inside code this is not a speaker line" in answer.content
    assert quoted.content == (
        "Yes: add a healthcheck and `depends_on: condition`.\n"
        "Then the tests start only when Postgres accepts connections."
    )
    assert quoted.timestamp == "2024-06-01T10:15:00Z"
    assert last.content == "thanks, that fixed it"
    assert chat.metadata["preamble"] == "Exported from my notes app."
    assert "Claude (2024-06-01 10:15)" not in chat.metadata["speakers"]
    assert "Claude" in chat.metadata["speakers"]


def test_markdown_chat_title_falls_back_to_the_first_user_line() -> None:
    chat = parse_markdown_chat("User: what is a monad, really?\nAI: A burrito.\n", "m.md")
    assert chat.title == "what is a monad, really?"
    assert [t.role for t in chat.turns] == ["user", "assistant"]


def test_markdown_without_speakers_is_refused_with_a_hint() -> None:
    with pytest.raises(BrainError, match=r"notes\.md: no speaker lines found") as caught:
        parse_markdown_chat("# Notes\n\nJust some text.\nNote: not a chat.\n", "notes.md")
    assert "**User:**" in str(caught.value)


def _summary_sentences(summary: str, transcript: Transcript) -> list[str]:
    found = [s for s in re.split(r"(?<=[.!?])\s+", summary) if s]
    for sentence in found:
        assert any(sentence in turn.content for turn in transcript.turns), sentence
    return found


def test_summary_is_extractive_bounded_and_deterministic() -> None:
    turns = (
        Turn("user", "Our sourdough starter smells like acetone every morning. Is it dying?"),
        Turn(
            "assistant",
            "An acetone smell means the starter is hungry. Feed the starter twice a day. "
            "Keep the starter warm, around 24 degrees. Discard half before each feeding. "
            "The weather has been nice lately.",
        ),
        Turn("user", "Thanks! Should the starter double after feeding?"),
        Turn("assistant", "Yes, a healthy starter doubles within six hours of feeding."),
    )
    transcript = Transcript("t", "Starter", "markdown", None, turns)
    summary = summarize(turns, max_sentences=3)
    sentences = _summary_sentences(summary, transcript)
    assert len(sentences) == 3
    assert "weather" not in summary  # off-topic sentences lose to the recurring subject
    positions = [" ".join(t.content for t in turns).index(s) for s in sentences]
    assert positions == sorted(positions)  # in conversation order
    assert summarize(turns, max_sentences=3) == summary
    assert len(_summary_sentences(summarize(turns, max_sentences=1), transcript)) == 1
    assert summarize((), max_sentences=3) == ""


def test_summary_skips_code_and_keeps_short_chats() -> None:
    code = "Run this:\n```bash\necho this code line is long enough to count.\n```"
    turns = (Turn("user", "Hi there."), Turn("assistant", code))
    summary = summarize(turns)
    assert "echo" not in summary
    assert summary  # one-liners still give a summary


def _flagged_zip(path: Path, *, flag: int = 0, method: int | None = None) -> Path:
    """A zip whose member says it is encrypted (flag bit 0) or packed by another method."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", "[]")
    data = bytearray(path.read_bytes())
    for signature, flags_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        at = data.find(signature)
        data[at + flags_at] |= flag
        if method is not None:
            data[at + method_at] = method
    path.write_bytes(bytes(data))
    return path


def test_a_zip_that_cannot_be_unpacked_is_refused_by_name(tmp_path: Path) -> None:
    """A re-zipped export with a password, or packed with Deflate64 (as Windows may), is an
    error naming the zip, not a traceback."""
    locked = _flagged_zip(tmp_path / "locked.zip", flag=1)
    with pytest.raises(BrainError, match=r"locked\.zip: cannot be unpacked \(.*encrypted"):
        parse_chatgpt_export(locked)
    deflate64 = _flagged_zip(tmp_path / "deflate64.zip", method=9)
    with pytest.raises(BrainError, match=r"deflate64\.zip: cannot be unpacked"):
        parse_claude_export(deflate64)
