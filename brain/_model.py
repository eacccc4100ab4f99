"""The values brain passes around: notes, relations, hits. Frozen, and free of I/O."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypedDict


# A note's kind, status and visibility, each defined once. Members are strings equal to their
# values ("active" == Status.ACTIVE), so the files, the catalog and JSON hold the plain words.
class Kind(StrEnum):
    """What a note is, and so how `remember` writes it (notes/writing.py)."""

    SINGLETON = "singleton"
    DATED = "dated"
    TITLED = "titled"
    THREAD = "thread"
    RECALL = "recall"
    DOCUMENT = "document"
    CHUNK = "chunk"
    LOG = "log"


class Status(StrEnum):
    """Where a note is in its life (upkeep/lifecycle.py); superseded: a correction replaced it."""

    ACTIVE = "active"
    DORMANT = "dormant"
    ARCHIVED = "archived"
    RESOLVED = "resolved"
    SUPERSEDED = "superseded"


class Visibility(StrEnum):
    """Who may see a note: anyone; the person only (never a model); the person on this machine
    only (never a model, never git)."""

    NORMAL = "normal"
    PRIVATE = "private"
    LOCAL_ONLY = "local-only"


KINDS = tuple(k.value for k in Kind)
STATUSES = tuple(s.value for s in Status)
VISIBILITIES = tuple(v.value for v in Visibility)
DEFINING = ("decision", "milestone", "event")
RELATION_TYPES = (
    "extends",
    "contradicts",
    "supports",
    "causes",
    "references",
    "partOf",
    "worksWith",
    "mentors",
    "instanceOf",
    "supersedes",
    "implements",
    "inspiredBy",
    "sourceOf",
    "derivedFrom",
    "corrects",
    "informs",
    "resolves",
    "precedes",
    "relatesTo",
)

# A long job's progress, said by the core to whoever shows it: (what, done, total), e.g.
# ("indexing", 120, 400) files or ("embedding", 512, 3000) memories.
Steps = Callable[[str, int, int], None]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")


def new_id(now: datetime, seed: bytes | None = None) -> str:
    """A ULID: 48 bits of milliseconds then 80 random bits, in Crockford base 32. With a seed,
    the 80 bits are its hash: the same moment and seed give the same id on any machine."""
    millis = int(now.timestamp() * 1000)
    tail = os.urandom(10) if seed is None else hashlib.blake2b(seed, digest_size=10).digest()
    value = (millis << 80) | int.from_bytes(tail, "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def content_hash(data: bytes) -> str:
    """The sha256 hex digest brain knows file and text contents by (caches, provenance)."""
    return hashlib.sha256(data).hexdigest()


def is_id(text: str) -> bool:
    """Whether text has the shape of a ULID (object ids of chunks add `#n`)."""
    return bool(_ULID_RE.match(text.split("#", 1)[0]))


def iso(moment: datetime) -> str:
    """UTC timestamp as written in front-matter: 2026-12-02T10:31:00Z."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """Read a front-matter timestamp; naive values are taken as UTC."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _stored_time(value: Any) -> str:
    """A front-matter time as brain stores and compares it, `2026-12-07T09:00:00Z`, whatever
    the hand that wrote it (an offset, a space, a fraction, a naive UTC time), so times sort
    as moments; a date alone stays a date (the person's day); what does not parse stays as
    written (doctor names it)."""
    text = str(value if value is not None else "").strip()
    if len(text) <= 10 or (len(text) == 20 and text.endswith("Z") and text[10] == "T"):
        return text
    try:
        return iso(parse_iso(text))
    except (ValueError, OverflowError):  # OverflowError: year 1 with an offset
        return text


LOCAL_ONLY = Visibility.LOCAL_ONLY.value
COLD_TIER = "cold"  # compressed notes keep their hot path under it: cold/<hot path>.zst


def _in_partition(path: str) -> tuple[str, str]:
    """`main/A/b.md` → (`main`, `A/b.md`); local-only notes live under `local-only/<partition>/`."""
    if path.startswith(COLD_TIER + "/"):
        path = path[len(COLD_TIER) + 1 :]
    if path.startswith(LOCAL_ONLY + "/"):
        path = path[len(LOCAL_ONLY) + 1 :]
    partition, _, rest = path.partition("/")
    return partition, rest


_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalise_title(title: str) -> str:
    """Titles that differ only in case, width, spacing or punctuation are the same title."""
    text = unicodedata.normalize("NFKC", title).casefold()
    text = _PUNCT.sub(" ", text).replace("_", " ")
    return _SPACE.sub(" ", text).strip()


def paragraphs(text: str) -> list[str]:
    """A text's paragraphs as one says them: case, width, spacing and a closing stop aside."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    parts = (" ".join(p.split()).rstrip(".!?…;: ") for p in re.split(r"\n\s*\n", folded))
    return [p for p in parts if p]


def holds(body: str, text: str) -> bool:
    """Whether a note's body already holds the text as whole paragraphs, whatever their case,
    spacing or closing full stop: a fact said again is the same memory, not a second note."""
    said, held = paragraphs(text), paragraphs(body)
    return bool(said) and any(
        held[i : i + len(said)] == said for i in range(len(held) - len(said) + 1)
    )


@dataclass(frozen=True)
class Relation:
    """A typed edge from one note to another, stored in the source's front-matter."""

    type: str
    target: str
    weight: float | None = None

    def to_yaml(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "target": self.target}
        if self.weight is not None:
            data["weight"] = self.weight
        return data


@dataclass(frozen=True)
class Note:
    """One Markdown file: ordered front-matter, body text, and where it lives in the vault.

    `raw_front` keeps the front-matter exactly as read, so a note whose fields did not
    change is written back byte for byte (hand-edited formatting survives). Its text and body
    hold `\n` line ends; `newline` and `bom` say how the file spelled them (an editor's CRLF,
    a byte-order mark), so it is written back the way it was read (vault/notefile.py).
    """

    meta: Mapping[str, Any]
    body: str
    path: str = ""
    raw_front: str | None = field(default=None, compare=False, repr=False)
    newline: str = field(default="\n", compare=False, repr=False)  # "\n", "\r\n" or "\r"
    bom: bool = field(default=False, compare=False, repr=False)

    @property
    def id(self) -> str:
        value = self.meta.get("id")
        return "" if value is None else str(value)  # `id: null` is no id (catchup.adopt)

    @property
    def title(self) -> str:
        return str(self.meta.get("title", ""))

    @property
    def kind(self) -> str:
        return str(self.meta.get("kind", "titled"))

    @property
    def status(self) -> str:
        return str(self.meta.get("status", "active"))

    @property
    def visibility(self) -> str:
        # The git-ignored folder decides: a file there is local-only whatever its field says.
        if self.path.startswith(LOCAL_ONLY + "/"):
            return LOCAL_ONLY
        return str(self.meta.get("visibility", "normal"))

    @property
    def created(self) -> str:
        return _stored_time(self.meta.get("created", ""))

    @property
    def touched(self) -> str:
        return _stored_time(self.meta.get("touched")) if "touched" in self.meta else self.created

    @property
    def updated(self) -> str:
        """When its text was last written or said again (`remember`): unlike `touched`, which
        a read sets too, this is what a reader compares to know which memory is current."""
        return _stored_time(self.meta.get("updated")) if "updated" in self.meta else self.created

    @property
    def tags(self) -> tuple[str, ...]:
        tags = self.meta.get("tags") or []
        return tuple(str(t) for t in tags) if isinstance(tags, list) else (str(tags),)

    @property
    def parent(self) -> str | None:
        value = self.meta.get("parent")
        return str(value) if value else None

    @property
    def supersedes(self) -> str | None:
        value = self.meta.get("supersedes")
        return str(value) if value else None

    @property
    def defining(self) -> str | None:
        value = self.meta.get("defining")
        return str(value) if value else None

    @property
    def source(self) -> Mapping[str, Any]:
        value = self.meta.get("source")
        return value if isinstance(value, Mapping) else {}

    @property
    def relations(self) -> tuple[Relation, ...]:
        out = []
        for item in self.meta.get("relations") or []:
            if isinstance(item, Mapping) and "type" in item and "target" in item:
                weight = item.get("weight")
                number = weight if isinstance(weight, int | float) else None  # hand edits
                out.append(
                    Relation(
                        str(item["type"]),
                        str(item["target"]),
                        float(number) if number is not None else None,
                    )
                )
        return tuple(out)

    @property
    def partition(self) -> str:
        return _in_partition(self.path)[0]

    @property
    def node(self) -> str:
        """The folder inside the partition, e.g. `Knowledge/Domains/Cooking`."""
        return "/".join(_in_partition(self.path)[1].split("/")[:-1])

    def with_meta(self, **changes: Any) -> Note:
        """A copy with fields changed (None removes a field); unknown keys and order kept."""
        meta = dict(self.meta)
        for key, value in changes.items():
            if value is None:
                meta.pop(key, None)
            else:
                meta[key] = value
        if meta == dict(self.meta):
            return self
        return replace(self, meta=meta, raw_front=None)

    def with_body(self, body: str) -> Note:
        return replace(self, body=body)

    def with_path(self, path: str) -> Note:
        return replace(self, path=path)


class RecallOptions(TypedDict, total=False):
    """recall's options, defined once: the Brain, both CLI backends and the daemon's argument
    check follow this (defaults: k from brain.yaml, mode `hybrid`, the rest off or None)."""

    k: int | None
    node: str | None
    include_superseded: bool
    mode: str
    defining_first: bool
    scope: str | None
    explain: bool  # each hit says why it came back (recall/explain.py)


class RememberOptions(TypedDict, total=False):
    """remember's options as the interfaces offer them, defined once (defaults: no title, the
    note's topic or the inbox, no tags, the folder's kind). Provenance is the core's alone."""

    title: str | None
    node: str | None
    tags: Sequence[str]
    kind: str | None
    visibility: str | None  # the person's alone: a model's write is refused it


class ListOptions(TypedDict, total=False):
    """list's filters, defined once like recall's (defaults: none, every note, no limit)."""

    node: str | None
    status: str | None
    kind: str | None
    limit: int | None
    defining_only: bool


@dataclass(frozen=True)
class Hit:
    """One recall result: enough to judge and cite a memory without opening it."""

    id: str
    title: str
    snippet: str
    created: str
    path: str
    score: float
    kind: str
    status: str
    node: str
    source: Mapping[str, Any] = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    parent: str | None = None
    heading_path: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    explain: Mapping[str, Any] | None = None  # why it came back (`recall --explain`)
    # How much of the question it holds, 0..1, the same scale in every recall, and its band
    # (strong | fair | weak: recall/relevance.py); `score` only orders one answer's hits.
    relevance: float = 0.0
    band: str = "weak"
    more: bool = False  # the memory says more than its snippet: `expand` reads it whole
    updated: str = ""  # its text last written or said again (Note.updated); "": as created

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "title": self.title,
            "snippet": self.snippet,
            "created": self.created,
            "updated": self.updated or self.created,
            "source": dict(self.source),
            "path": self.path,
            "score": round(self.score, 6),
            "relevance": round(self.relevance, 4),
            "band": self.band,
            "more": self.more,
            "kind": self.kind,
            "status": self.status,
            "node": self.node,
            "parent": self.parent,
            "heading_path": list(self.heading_path),
            "tags": list(self.tags),
            "flags": list(self.flags),
        }
        if self.explain is not None:
            out["explain"] = dict(self.explain)
        return out
