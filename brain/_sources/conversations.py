"""Conversation transcripts as recall notes: verbatim turns, an extractive summary, one note each.

A transcript lands in `<partition>/Memory/Recalls/<Platform>/<title>.md`. Its turns are the
note's sections (`<note id>#<n>` is turn n), so each turn is recallable and points back into the
transcript. A transcript is known by (platform, external id): importing it again adds nothing,
and a conversation that grew since is updated in place.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._errors import BrokenNote, InvalidInput
from brain._ingest.exports import parse_chatgpt_export, parse_claude_export
from brain._ingest.sections import Section, sections_meta
from brain._ingest.transcripts import (
    Transcript,
    parse_markdown_chat,
    parse_seed_json,
    summarize,
)
from brain._model import Note, content_hash, iso, new_id
from brain._vault import forgotten
from brain._vault.paths import file_stem

if TYPE_CHECKING:
    from brain._context import Context

RECALLS = "Memory/Recalls"
PLATFORMS = {"chatgpt": "ChatGPT", "claude": "Claude", "markdown": "Chats"}
EXPORTS = {"chatgpt": parse_chatgpt_export, "claude": parse_claude_export}

Progress = Callable[[int, int], None]


@dataclass
class ImportReport:
    """What an ingest or import did: note ids added, updated, and transcripts already there."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    forgotten: int = 0  # conversations the person forgot here, left out (no id to name)

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "forgotten": self.forgotten,
        }


def read_transcript(path: Path) -> Transcript:
    """A transcript file: seed-004 JSON (`.json`) or a Markdown chat (anything else)."""
    if path.is_dir():
        raise InvalidInput(
            f"{path}: a folder, not a transcript file",
            f"to read a folder's documents: brain connect {path}; "
            "for a ChatGPT or Claude export folder: brain import chatgpt|claude "
            f"{path}",
        )
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such file") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    if path.suffix.lower() == ".json":
        transcript = parse_seed_json(text, str(path))
    else:
        transcript = parse_markdown_chat(text, str(path))
    if not transcript.turns:  # as an export leaves out its conversations with no messages
        raise InvalidInput(f"{path}: no turn has any text; nothing to store")
    return transcript


def read_export(platform: str, path: Path) -> list[Transcript]:
    if platform not in EXPORTS:
        raise InvalidInput(f"unknown export {platform!r}; allowed: {', '.join(EXPORTS)}")
    return EXPORTS[platform](path)


def store_transcripts(
    brain: Context, transcripts: Sequence[Transcript], via: str, progress: Progress | None = None
) -> ImportReport:
    """Write each transcript as a recall note (or leave it, when already there). Lock taken.

    Several (an export) are a bulk block: the catalog committed a batch at a time, and the
    vectors encoded while the notes are written (indexes/pipeline.py). One (`brain ingest`)
    leaves its vectors to the next flush, as any single write does: no model is loaded for it.
    """
    report = ImportReport()
    session = new_id(brain.clock.now())  # one import is one pass (corrections.py)
    forgot = forgotten.forgotten_origins(brain.root)
    with brain.bulk() if len(transcripts) > 1 else brain.lock.hold():
        brain.catch_up()
        for done, transcript in enumerate(transcripts, 1):
            _store(brain, transcript, (via, session), report, forgot)
            if progress:
                progress(done, len(transcripts))
    return report


def _store(
    brain: Context,
    transcript: Transcript,
    via: tuple[str, str],
    report: ImportReport,
    forgot: Callable[[str], bool],
) -> None:
    digest = _digest(transcript)
    found = brain.caches.catalog.conversation(transcript.platform, transcript.external_id)
    origin = forgotten.origin_of(
        {"platform": transcript.platform, "external_id": transcript.external_id}
    )
    if found is None and origin is not None and forgot(origin):
        report.forgotten += 1  # the person forgot it: an export of it again does not undo that
        return
    old = None
    if found is not None:
        if found.source.get("hash") == digest:
            report.unchanged.append(found.id)
            return
        try:
            old = brain.store.read(found.path)
        except (BrokenNote, FileNotFoundError):
            old = None
    note = recall_note(brain, transcript, via, digest, old)
    brain.save(note)
    (report.added if old is None else report.updated).append(note.id)


def recall_note(
    brain: Context, transcript: Transcript, via: tuple[str, str], digest: str, old: Note | None
) -> Note:
    """The recall note of a transcript; `via` is who wrote it and in which pass (session)."""
    now = brain.clock.now()
    body, sections = render(transcript)
    source = {
        "via": via[0],
        "session": via[1],
        "platform": transcript.platform,
        "external_id": transcript.external_id,
        "hash": digest,
    }
    if "source" in transcript.metadata:
        source["file"] = str(transcript.metadata["source"])
    extra = {"turns": len(transcript.turns), **sections_meta(body, sections)}
    if old is not None:
        kept = {**old.meta, "title": transcript.title, "touched": iso(now), "source": source}
        return Note(meta={**kept, **extra}, body=body, path=old.path)
    meta: dict[str, Any] = {
        "id": new_id(now),
        "title": transcript.title,
        "kind": "recall",
        "status": "active",
        "created": transcript.created or iso(now),
        "touched": iso(now),
        "source": source,
    }
    return Note(meta={**meta, **extra}, body=body, path=_free_path(brain, transcript))


def render(transcript: Transcript) -> tuple[str, list[Section]]:
    """The recall body (title, summary, verbatim turns) and each turn's span in it."""
    when = transcript.created or "unknown date"
    parts = [
        f"# {transcript.title}\n\n",
        f"> {transcript.platform} conversation · {when} · {len(transcript.turns)} turns\n\n",
        f"## Summary\n\n{summarize(transcript.turns) or '(nothing to summarise)'}\n\n",
        "## Transcript\n",
    ]
    size = sum(len(p) for p in parts)
    sections = []
    for number, turn in enumerate(transcript.turns):
        label = turn.role.capitalize() + (f" · {turn.timestamp}" if turn.timestamp else "")
        head = f"\n### {label}\n\n"
        start = size + len(head)
        parts.append(head + turn.content + "\n")
        size += len(parts[-1])
        end = start + len(turn.content)
        sections.append(Section(number, start, end, "turn", ("Transcript", label), role=turn.role))
    return "".join(parts), sections


def _free_path(brain: Context, transcript: Transcript) -> str:
    platform = PLATFORMS.get(transcript.platform) or file_stem(transcript.platform)
    folder = f"{brain.partition}/{RECALLS}/{platform}"
    stem = file_stem(transcript.title or transcript.external_id)
    day = (transcript.created or "")[:10]
    stem = f"{day} {stem}" if day else stem
    path, n = f"{folder}/{stem}.md", 2
    while brain.store.exists(path):
        path = f"{folder}/{stem} {n}.md"
        n += 1
    return path


def _digest(transcript: Transcript) -> str:
    turns = [[t.role, t.content, t.timestamp] for t in transcript.turns]
    data = json.dumps([transcript.title, turns], ensure_ascii=False)
    return content_hash(data.encode("utf-8"))
