"""Read conversation transcripts (seed recall JSON, Markdown chats) and summarise them.

The ChatGPT and Claude export readers live in exports.py and share the helpers here.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from brain._errors import InvalidInput
from brain._ingest.chunking import front_matter_length, sentence_spans
from brain._model import content_hash
from brain._terms import STOPWORDS, words


@dataclass(frozen=True)
class Turn:
    """One message: who spoke, what they said, and when (ISO 8601 UTC) if the source says."""

    role: str
    content: str
    timestamp: str | None = None


@dataclass(frozen=True)
class Transcript:
    """One conversation from any source, in the single shape recall notes are written from."""

    external_id: str
    title: str
    platform: str
    created: str | None
    turns: tuple[Turn, ...]
    metadata: dict[str, Any] = field(default_factory=dict, hash=False)


_BRANDS = ("chatgpt", "gpt", "claude", "gemini", "copilot")
# Labels a Markdown chat may use for a speaker, and the role each stands for. Only these count:
# accepting any `**Name:**` would split an answer at every bold lead-in such as `**Note:**`.
_ROLE_LABELS = {
    **dict.fromkeys(("user", "human", "me", "you"), "user"),
    **dict.fromkeys(("assistant", "ai", "bot", *_BRANDS), "assistant"),
    "system": "system",
}
_MODEL_WORDS = frozenset(["o", "sonnet", "opus", "haiku", "turbo", "pro", "flash", "mini", "ultra"])
_HEADING_SPEAKER = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*:?[ \t]*#*$")
_BOLD_SPEAKER = re.compile(r"^(\*\*|__)(.+?)(?::\1|\1[ \t]*:|\1[ \t]*$)[ \t]*(.*)$")
_PLAIN_SPEAKER = re.compile(
    r"^([A-Za-z][\w .-]{0,30}?)([ \t]*[\[(][^\])]*[\])])?[ \t]*:(?:[ \t]+(.*)|$)"
)
_STAMP = re.compile(r"^(.*?)[ \t]*[\[(]([^\])]*)[\])]$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# Chat filler on top of the shared stopwords: it is frequent in every conversation and says nothing.
_FILLER = frozenset(["yes", "okay", "thanks", "thank", "please", "sure", "like", "just", "also"])


_Opened = tuple[str, str, str | None, bool, list[str]]  # role, label, stamp, quoted, lines


def parse_seed_json(data: str, source_name: str) -> Transcript:
    """A recall file in the seed-004 shape: recall_id, platform, metadata, summary, transcript."""
    document = read_json(data, source_name)
    if not isinstance(document, dict):
        raise InvalidInput(f"{source_name}: expected a JSON object with a 'transcript' list")
    entries = document.get("transcript")
    if not isinstance(entries, list):
        raise InvalidInput(f"{source_name}: missing field 'transcript' (a list of turns)")
    turns = []
    for number, entry in enumerate(entries):
        where = f"{source_name}: transcript[{number}]"
        if not isinstance(entry, dict):
            raise InvalidInput(f"{where} is not an object with 'role' and 'content'")
        for name in ("role", "content"):
            if not isinstance(entry.get(name), str):
                raise InvalidInput(f"{where}: missing field '{name}'")
        if entry["content"].strip():
            turns.append(
                Turn(entry["role"], entry["content"].strip(), iso_utc(entry.get("timestamp")))
            )
    recall_id = document.get("recall_id")
    external_id = (
        recall_id if isinstance(recall_id, str) and recall_id else content_hash(data.encode())
    )
    # The seed's own metadata object is flattened in, then its other top-level fields (node_id,
    # summary, conversation_type, ...); where the file came from always wins "source".
    metadata: dict[str, Any] = dict(as_object(document.get("metadata")))
    consumed = {"recall_id", "title", "platform", "created_at", "transcript", "metadata"}
    metadata.update({k: v for k, v in document.items() if k not in consumed and k not in metadata})
    metadata["source"] = source_name
    created = iso_utc(document.get("created_at")) or (turns[0].timestamp if turns else None)
    platform = document.get("platform")
    return Transcript(
        external_id=external_id,
        title=as_text(document.get("title")) or title_from(turns, external_id),
        platform=platform if isinstance(platform, str) and platform else "unknown",
        created=created,
        turns=tuple(turns),
        metadata=metadata,
    )


def parse_markdown_chat(text: str, source_name: str) -> Transcript:
    """A Markdown chat where each turn opens with a speaker line (forms in docs/formats.md)."""
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    lines = lines[front_matter_length(lines) :]
    title = ""
    preamble: list[str] = []
    opened: list[_Opened] = []
    fence: str | None = None
    for line in lines:
        speaker = None if fence else _speaker(line)
        fence = _track_fence(line, fence)
        if speaker is not None:
            role, label, rest, stamp, quoted = speaker
            opened.append((role, label, stamp, quoted, [rest] if rest else []))
        elif opened:
            quoted = opened[-1][3]
            opened[-1][4].append(re.sub(r"^ {0,3}> ?", "", line) if quoted else line)
        elif not title and not any(p.strip() for p in preamble) and re.match(r"^#[ \t]+\S", line):
            title = line.lstrip("#").strip()
        else:
            preamble.append(line)
    if not opened:
        raise InvalidInput(
            f"{source_name}: no speaker lines found",
            hint="start each turn with a line such as '**User:**', 'Assistant:' or '## User'",
        )
    turns = tuple(
        Turn(role, "\n".join(body).strip(), iso_utc(stamp))
        for role, _, stamp, _, body in opened
        if "\n".join(body).strip()
    )
    metadata: dict[str, Any] = {"source": source_name}
    metadata["speakers"] = sorted({label for _, label, _, _, _ in opened})
    if "\n".join(preamble).strip():
        metadata["preamble"] = "\n".join(preamble).strip()
    fallback = PurePosixPath(source_name.replace("\\", "/")).stem or source_name
    return Transcript(
        external_id=content_hash(text.encode()),
        title=title or title_from(turns, fallback),
        platform="markdown",
        created=next((t.timestamp for t in turns if t.timestamp), None),
        turns=turns,
        metadata=metadata,
    )


def turn_chain(turns: Sequence[Turn]) -> list[str]:
    """The hash of each run of turns from the first (who spoke, what, when): a chat that grew
    begins with the chain of the chat it was, and one edited in the middle does not."""
    chain, previous = [], ""
    for turn in turns:
        data = json.dumps([previous, turn.role, turn.content, turn.timestamp], ensure_ascii=False)
        previous = content_hash(data.encode("utf-8"))
        chain.append(previous)
    return chain


def summarize(turns: Sequence[Turn], max_sentences: int = 3) -> str:
    """An extractive summary: the best-scoring sentences of the turns, verbatim, in their order."""
    sentences: list[tuple[str, bool]] = []  # (sentence, opens its turn)
    for shortest in (15, 1):  # a chat of one-liners still gets its lines as a summary
        for turn in turns:
            if turn.role != "system":
                found = _sentences(turn.content, shortest)
                sentences.extend((s, i == 0) for i, s in enumerate(found))
        if sentences:
            break
    if max_sentences < 1 or not sentences:
        return ""
    bags = [_content_words(s) for s, _ in sentences]
    frequency = Counter(w for bag in bags for w in bag)
    top = max(frequency.values(), default=1)
    scored = []
    for number, ((sentence, opens), ws) in enumerate(zip(sentences, bags, strict=True)):
        # Frequent content words mark the topic; the root dampens the pull of long sentences;
        # early sentences and turn openers (questions, answers' first lines) carry the gist.
        weight = sum(frequency[w] for w in set(ws)) / top / math.sqrt(len(ws)) if ws else 0.0
        weight *= 1 + 0.3 * (1 - number / len(sentences)) + (0.2 if opens else 0.0)
        scored.append((-weight, number, sentence))
    chosen: dict[str, tuple[int, str]] = {}
    for _, number, sentence in sorted(scored):
        if len(chosen) == max_sentences:
            break
        chosen.setdefault(sentence.casefold(), (number, sentence))
    return " ".join(sentence for _, sentence in sorted(chosen.values()))


def read_json(data: str, name: str) -> Any:
    try:
        return json.loads(data)
    except json.JSONDecodeError as error:
        raise InvalidInput(
            f"{name}: not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}",
            hint="the file may be cut short or hand-edited; export it again",
        ) from None


def _speaker(line: str) -> tuple[str, str, str, str | None, bool] | None:
    """(role, label, rest of line, stamp, quoted) when line opens a turn in a Markdown chat."""
    stripped = line.strip()
    if not stripped or len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) > 3:
        return None  # indented four or more: code, not a speaker
    quoted = stripped.startswith(">")
    if quoted:
        stripped = stripped[1:].strip()
    if match := _HEADING_SPEAKER.match(stripped):
        label, rest = match.group(2), ""
    elif match := _BOLD_SPEAKER.match(stripped):
        label, rest = match.group(2), match.group(3)
    elif match := _PLAIN_SPEAKER.match(stripped):
        label, rest = match.group(1) + (match.group(2) or ""), match.group(3) or ""
    else:
        return None
    label, stamp = label.strip(), None
    if stamped := _STAMP.match(label):
        label, stamp = stamped.group(1).strip(), stamped.group(2).strip()
    label = re.sub(r"(?i)\s+said$", "", label.rstrip(":").strip())
    role = _role(label)
    return None if role is None else (role, label, rest.strip(), stamp, quoted)


def _role(label: str) -> str | None:
    key = " ".join(label.casefold().split())
    if key in _ROLE_LABELS:
        return _ROLE_LABELS[key]
    # A model name counts too ("GPT-4o", "Claude 3.5 Sonnet"), but not "Claude's notes".
    first, *rest = re.split(r"[\s-]+", key)
    versioned = all(any(c.isdigit() for c in t) or t in _MODEL_WORDS for t in rest)
    return "assistant" if first in _BRANDS and versioned else None


def _track_fence(line: str, fence: str | None) -> str | None:
    """The open fence after line: so speaker-looking lines inside code are left alone."""
    match = _FENCE.match(line)
    if fence is None:
        return match.group(1) if match else None
    closing = line.strip()
    closes = closing and set(closing) == {fence[0]} and len(closing) >= len(fence)
    return None if closes else fence


def _sentences(content: str, shortest: int) -> list[str]:
    """Summary candidates: sentences outside code, each a verbatim slice of content."""
    found, fence = [], None
    for line in content.split("\n"):
        was_in_code = fence is not None
        fence = _track_fence(line, fence)
        if was_in_code or fence is not None:
            continue
        body = re.sub(r"^\s*(?:[>#]+|[-*+]|\d+[.)])\s+", "", line)
        for begin, end in sentence_spans(body):
            sentence = body[begin:end]
            if len(sentence) >= shortest and (shortest == 1 or len(sentence.split()) >= 3):
                found.append(sentence)
    return found


def _content_words(sentence: str) -> list[str]:
    return [
        w
        for w in words(sentence)
        if len(w) > 2 and w not in STOPWORDS and w not in _FILLER and not w.isdigit()
    ]


def title_from(turns: Sequence[Turn], fallback: str) -> str:
    """A title from the first user line, cut at a word near 80 characters."""
    for turn in turns:
        if turn.role == "user":
            line = next((ln.strip() for ln in turn.content.split("\n") if ln.strip()), "")
            line = re.sub(r"^[#>*\-\s]+", "", line).strip()
            if line:
                return line if len(line) <= 80 else line[:80].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return fallback


def as_object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def iso_utc(value: object) -> str | None:
    """ISO 8601 UTC (YYYY-MM-DDTHH:MM:SSZ) from epoch seconds or an ISO string; None if unknown."""
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(value, tz=UTC)
        elif isinstance(value, str) and value.strip():
            moment = datetime.fromisoformat(value.strip().replace(" ", "T", 1))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=UTC)  # a zone-less time is taken as UTC
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
