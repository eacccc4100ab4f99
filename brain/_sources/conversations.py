"""Conversation transcripts as recall notes: verbatim turns, an extractive summary, one note each.

A transcript lands in `<partition>/Memory/Recalls/<Platform>/<title>.md`. Its turns are the
note's sections (`<note id>#<n>` is turn n), so each turn is recallable and points back into the
transcript. A transcript is known by (platform, external id): importing it again adds nothing,
and a conversation that grew since is updated in place. A Markdown chat has no id of its own
(its external id is its text's hash): one that begins with every turn of a chat stored from a
file is that chat grown, known by the chain of its turns' hashes (`turn_chain`), wherever the
file has moved.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._errors import BrokenNote, InvalidInput
from brain._indexes.rows import ObjectRow
from brain._ingest.exports import parse_chatgpt_export, parse_claude_export
from brain._ingest.sections import Section, sections_meta
from brain._ingest.transcripts import (
    Transcript,
    parse_markdown_chat,
    parse_seed_json,
    summarize,
    turn_chain,
)
from brain._model import Note, content_hash, iso, new_id
from brain._vault import forgotten
from brain._vault.paths import file_stem

if TYPE_CHECKING:
    from brain._context import Context

RECALLS = "Memory/Recalls"
CHATS = "markdown"  # the platform of a Markdown chat file
PLATFORMS = {"chatgpt": "ChatGPT", "claude": "Claude", CHATS: "Chats"}
EXPORTS = {"chatgpt": parse_chatgpt_export, "claude": parse_claude_export}

Progress = Callable[[int, int], None]


@dataclass
class ImportReport:
    """What an ingest or import did: note ids added, updated, grown (a chat file's new turns
    added to its note), and transcripts already there."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    grown: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    forgotten: int = 0  # conversations the person forgot here, left out (no id to name)

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "updated": self.updated,
            "grown": self.grown,
            "unchanged": self.unchanged,
            "forgotten": self.forgotten,
        }


def read_transcript(path: Path, data: bytes | None = None) -> Transcript:
    """A transcript file: seed-004 JSON (`.json`) or a Markdown chat (anything else). `data`:
    its bytes piped in (`brain ingest -`), `path` then only its name: JSON when it opens with
    `{`, as a chat's first line never does."""
    piped = data is not None
    if data is None:
        data = _file_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    if text.lstrip().startswith("{") if piped else path.suffix.lower() == ".json":
        transcript = parse_seed_json(text, str(path))
    else:
        transcript = parse_markdown_chat(text, str(path))
    if not transcript.turns:  # as an export leaves out its conversations with no messages
        raise InvalidInput(f"{path}: no turn has any text; nothing to store")
    return transcript


def _file_bytes(path: Path) -> bytes:
    if path.is_dir():
        raise InvalidInput(
            f"{path}: a folder, not a transcript file",
            f"to read a folder's documents: brain connect {path}; "
            "for a ChatGPT or Claude export folder: brain import chatgpt|claude "
            f"{path}",
        )
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"{path}: no such file") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot be read ({exc.strerror or exc})") from None


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
    chain = turn_chain(transcript.turns) if transcript.platform == CHATS else []
    found, grew = _stored(brain, transcript, chain)
    if found is None and _was_forgotten(transcript, chain, forgot):
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
    note = recall_note(brain, transcript, via, digest, old, chain)
    brain.save(note)
    (report.added if old is None else report.grown if grew else report.updated).append(note.id)


def _stored(
    brain: Context, transcript: Transcript, chain: list[str]
) -> tuple[ObjectRow | None, bool]:
    """The note this transcript was stored as, by its id; else, for a chat file, the chat it
    begins with (the longest, when several are); and whether it grew (has more turns)."""
    catalog = brain.caches.catalog
    rows = catalog.conversations(transcript.platform, "external_id", transcript.external_id)
    if rows or not chain:
        return next(iter(rows), None), False
    at = {digest: n for n, digest in enumerate(chain)}
    begun = [
        (at[key], row.id, row)
        for row in catalog.conversations(CHATS, "first_turn", chain[0])
        if isinstance(key := row.source.get("turns_hash"), str) and key in at
    ]
    if not begun:
        return None, False
    n, _, row = max(begun, key=lambda found: found[:2])
    return row, n < len(chain) - 1  # the same turns (retitled, say) is updated, not grown


def _was_forgotten(transcript: Transcript, chain: list[str], forgot: Callable[[str], bool]) -> bool:
    """Whether the person forgot it here; a chat file also when it begins with a forgotten chat."""
    keys = [transcript.external_id, *chain]
    origins = (
        forgotten.origin_of({"platform": transcript.platform, "external_id": k}) for k in keys
    )
    return any(origin is not None and forgot(origin) for origin in origins)


def recall_note(
    brain: Context,
    transcript: Transcript,
    via: tuple[str, str],
    digest: str,
    old: Note | None,
    chain: list[str] | None = None,
) -> Note:
    """The recall note of a transcript; `via` is who wrote it and in which pass (session);
    `chain`, a chat file's turn hashes: its first and last are what a grown chat is found by."""
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
    if chain:
        source.update(first_turn=chain[0], turns_hash=chain[-1])
    extra = {"turns": len(transcript.turns), **sections_meta(body, sections)}
    if old is not None:
        kept = {**old.meta, "title": transcript.title, "touched": iso(now), "source": source}
        kept["updated"] = iso(now)  # its text changed (more turns): hits say so
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
