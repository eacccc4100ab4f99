"""Read the official ChatGPT and Claude.ai data exports (zip, folder or conversations.json)."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from brain._errors import InvalidInput
from brain._ingest.transcripts import (
    Transcript,
    Turn,
    as_object,
    as_text,
    iso_utc,
    read_json,
    title_from,
)


def parse_chatgpt_export(path: Path) -> list[Transcript]:
    """The ChatGPT data export (.zip, folder or conversations.json): each conversation as shown."""
    return _conversations(path, "title", _chatgpt_conversation)


def parse_claude_export(path: Path) -> list[Transcript]:
    """The Claude.ai data export (.zip, folder or conversations.json): messages in order."""
    return _conversations(path, "name", _claude_conversation)


def _export(path: Path) -> tuple[list[dict[str, Any]], str]:
    """The conversations list of an export and the name to report problems against."""
    data, name = _conversations_file(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InvalidInput(f"{name}: not UTF-8 text (bad byte at offset {error.start})") from None
    conversations = read_json(text, name)
    if not isinstance(conversations, list):
        raise InvalidInput(
            f"{name}: expected a list of conversations, got a JSON {type(conversations).__name__}"
        )
    if not conversations:
        raise InvalidInput(f"{name}: the export holds no conversations")
    for number, conversation in enumerate(conversations, start=1):
        if not isinstance(conversation, dict):
            raise InvalidInput(f"{name}: conversation {number} is not a JSON object")
    return conversations, name


def _conversations_file(path: Path) -> tuple[bytes, str]:
    hint = "give the export's .zip, its unpacked folder, or its conversations.json"
    try:
        if path.is_dir():
            candidates = [path / "conversations.json", *sorted(path.glob("*/conversations.json"))]
            found = next((c for c in candidates if c.is_file()), None)
            if found is None:
                raise InvalidInput(f"{path}: no conversations.json in this folder", hint)
            return found.read_bytes(), str(found)
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                members = [
                    m
                    for m in archive.namelist()
                    if PurePosixPath(m).name == "conversations.json"
                    and not m.startswith("__MACOSX/")
                ]
                if not members:
                    raise InvalidInput(f"{path}: no conversations.json inside this zip", hint)
                member = min(members, key=lambda m: (m.count("/"), m))
                return archive.read(member), f"{member} in {path}"
        return path.read_bytes(), str(path)
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such file or folder", hint) from None
    except (OSError, zipfile.BadZipFile, zlib.error) as error:
        raise InvalidInput(f"{path}: cannot be read ({error})", hint) from None
    except (RuntimeError, NotImplementedError) as error:
        # zipfile's words for a password-protected member or a method it cannot unpack
        # (Deflate64): zip the unpacked export again without a password, or give its folder.
        raise InvalidInput(f"{path}: cannot be unpacked ({error})", hint) from None


def _conversations(
    path: Path, title_field: str, read: Callable[[dict[str, Any], str, str], Transcript | None]
) -> list[Transcript]:
    conversations, name = _export(path)
    found: dict[str, Transcript] = {}
    for number, conversation in enumerate(conversations, start=1):
        title = as_text(conversation.get(title_field))
        where = f"{name}: conversation {number}" + (f" ({title!r})" if title else "")
        transcript = read(conversation, where, str(path))
        if transcript is None:  # conversations with no shown message are left out
            continue
        # A conversation listed twice is one conversation (one note): the copy updated last
        # is kept, so an import does not write it twice and a second import changes nothing.
        seen = found.get(transcript.external_id)
        if seen is None or _updated(transcript) >= _updated(seen):
            found[transcript.external_id] = transcript
    if not found:
        raise InvalidInput(f"{name}: no conversation in the export has any messages")
    return list(found.values())


def _updated(transcript: Transcript) -> str:
    return str(transcript.metadata.get("updated") or transcript.created or "")


def _chatgpt_conversation(
    conversation: dict[str, Any], where: str, source: str
) -> Transcript | None:
    mapping = conversation.get("mapping")
    if not isinstance(mapping, dict):
        hint = "this looks like a Claude.ai export" if "chat_messages" in conversation else None
        raise InvalidInput(f"{where}: missing field 'mapping'", hint)
    external_id = as_text(conversation.get("conversation_id")) or as_text(conversation.get("id"))
    if not external_id:
        raise InvalidInput(f"{where}: missing field 'id' (or 'conversation_id')")
    found = (_chatgpt_turn(mapping[node].get("message")) for node in _branch(mapping, conversation))
    turns = tuple(turn for turn in found if turn is not None)
    metadata = {
        "source": source,
        "updated": iso_utc(conversation.get("update_time")),
        "model": as_text(conversation.get("default_model_slug")),
    }
    return _transcript(
        external_id,
        conversation.get("title"),
        "chatgpt",
        conversation.get("create_time"),
        turns,
        metadata,
    )


def _claude_conversation(
    conversation: dict[str, Any], where: str, source: str
) -> Transcript | None:
    messages = conversation.get("chat_messages")
    if not isinstance(messages, list):
        hint = "this looks like a ChatGPT export" if "mapping" in conversation else None
        raise InvalidInput(f"{where}: missing field 'chat_messages'", hint)
    external_id = as_text(conversation.get("uuid"))
    if not external_id:
        raise InvalidInput(f"{where}: missing field 'uuid'")
    turns = []
    for number, message in enumerate(messages, start=1):
        sender = message.get("sender") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(sender, str):
            raise InvalidInput(f"{where}, message {number}: missing field 'sender'")
        content = as_text(message.get("text")) or _claude_content(message.get("content"))
        if content:
            role = {"human": "user"}.get(sender, sender)
            turns.append(Turn(role, content, iso_utc(message.get("created_at"))))
    metadata = {
        "source": source,
        "updated": iso_utc(conversation.get("updated_at")),
        "summary": as_text(conversation.get("summary")),
    }
    return _transcript(
        external_id,
        conversation.get("name"),
        "claude",
        conversation.get("created_at"),
        tuple(turns),
        metadata,
    )


def _transcript(
    external_id: str,
    title: object,
    platform: str,
    created: object,
    turns: tuple[Turn, ...],
    metadata: dict[str, Any],
) -> Transcript | None:
    if not turns:
        return None
    kept = {key: value for key, value in metadata.items() if value}
    title_text = as_text(title) or title_from(turns, external_id)
    return Transcript(external_id, title_text, platform, iso_utc(created), turns, kept)


def _branch(mapping: dict[str, Any], conversation: dict[str, Any]) -> list[str]:
    """Node ids from the root down to current_node: the branch the person last saw."""
    nodes = {k: v for k, v in mapping.items() if isinstance(v, dict)}
    current = conversation.get("current_node")
    if not isinstance(current, str) or current not in nodes:
        # No usable current_node: start at a root and take the newest child at every fork.
        roots = [k for k, v in nodes.items() if v.get("parent") not in nodes]
        current = roots[0] if roots else None
        while isinstance(current, str) and (children := nodes[current].get("children")):
            child = children[-1]
            if child not in nodes or child == current:
                break
            current = child
    path: list[str] = []
    while isinstance(current, str) and current in nodes and current not in path:
        path.append(current)
        current = nodes[current].get("parent")
    return path[::-1]


def _chatgpt_turn(message: object) -> Turn | None:
    """A shown user or assistant message; None for system, tool, hidden and tool-call ones."""
    if not isinstance(message, dict):
        return None
    role = as_object(message.get("author")).get("role")
    content = as_object(message.get("content"))
    hidden = as_object(message.get("metadata")).get("is_visually_hidden_from_conversation")
    if role not in ("user", "assistant") or hidden or message.get("recipient", "all") != "all":
        return None
    if content.get("content_type") not in ("text", "multimodal_text"):
        return None  # code calls, tool output, browsing, reasoning, custom instructions
    parts = []
    for part in content.get("parts") or []:
        if isinstance(part, str) and part.strip():
            parts.append(part.strip())
        elif isinstance(part, dict) and "image" in str(part.get("content_type", "")):
            parts.append("[image]")
        elif isinstance(part, dict) and as_text(part.get("text")):
            parts.append(as_text(part.get("text")))  # e.g. a voice message's transcription
    if not parts:
        return None
    return Turn(role, "\n\n".join(parts), iso_utc(message.get("create_time")))


def _claude_content(items: object) -> str:
    if not isinstance(items, list):
        return ""
    texts = [
        as_text(i.get("text")) for i in items if isinstance(i, dict) and i.get("type") == "text"
    ]
    return "\n\n".join(t for t in texts if t)
