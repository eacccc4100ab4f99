"""What a write does, by note kind: singleton upsert, dated append, titled dedup, threads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from brain._clock import stamp
from brain._errors import BrokenNote, InvalidInput, broken_in_the_way
from brain._indexes.catalog import ObjectRow
from brain._indexes.ports import CatalogReads, NotesPort
from brain._model import (
    KINDS,
    LOCAL_ONLY,
    VISIBILITIES,
    Kind,
    Note,
    Visibility,
    holds,
    iso,
    new_id,
    normalise_title,
)
from brain._notes import defining
from brain._notes.levers import hidden_path
from brain._obsidian import check_tag
from brain._scoping import place
from brain._vault.archive import check_writable
from brain._vault.paths import check_node, check_portable, file_stem, spellings

if TYPE_CHECKING:
    from brain._context import Context

INBOX = "Knowledge/Inbox"
DATED_NODES = ("LLM/Diary", "Memory/Sessions", "Insights/Logs")
THREADS = "Memory/Threads"
SINGLETONS = {
    ("Master", "Biography"),
    ("Master", "Goals"),
    ("Master", "Preferences"),
    ("LLM", "Responsibilities"),
    ("LLM", "Protocols"),
}
# Kinds a person may ask for with `remember --kind`; the rest are made by the core.
WRITABLE_KINDS = ("titled", "singleton", "dated", "thread")
# What a write did to its note; every interface says which (CLI text, --json, MCP).
CREATED, APPENDED, REPLACED, UNCHANGED = "created", "appended", "replaced", "unchanged"


@dataclass(frozen=True)
class Written:
    """A remember's note as saved, and what the write did (any but `created` dates it `updated`)."""

    note: Note
    outcome: str


@dataclass(frozen=True)
class Request:
    """A validated `remember`."""

    text: str
    partition: str
    node: str | None = None
    title: str | None = None
    kind: str | None = None
    tags: tuple[str, ...] = ()
    source: dict[str, Any] | None = None
    extra: dict[str, Any] | None = None  # further core-set fields (e.g. defining)
    # For a model: notes hidden from it (private, local-only) do not exist when deduplicating,
    # so its write goes to a note of its own and never tells it a hidden one is there.
    visible_only: bool = False
    # Files named after the title that do not parse (a hand edit broke them), where known.
    broken: tuple[str, ...] = ()


def check_text(text: str, limit: int) -> str:
    if not text or not text.strip():
        raise InvalidInput("text is empty; say what to remember")
    size = len(text.encode("utf-8"))
    if size > limit:
        raise InvalidInput(
            f"text is {size} bytes; the limit is {limit} bytes",
            "raise limits.max_text_bytes in brain.yaml, or split the text",
        )
    if "\x00" in text:
        raise InvalidInput("text contains a NUL character")
    return text


def check_kind(kind: str | None) -> str | None:
    if kind is None:
        return None
    if kind not in KINDS:
        raise InvalidInput(f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}")
    if kind not in WRITABLE_KINDS:
        raise InvalidInput(
            f"kind {kind!r} is made by brain itself; remember accepts: {', '.join(WRITABLE_KINDS)}"
        )
    return kind


def derive_title(text: str, words: int = 8) -> str:
    first = next((line.strip() for line in text.splitlines() if line.strip()), text.strip())
    first = first.lstrip("#>-* ").strip()
    parts = first.split()
    title = " ".join(parts[:words])
    return title[:80] + ("…" if len(parts) > words or len(title) > 80 else "")


def plan(
    request: Request,
    store: NotesPort,
    catalog: CatalogReads,
    now: datetime,
    placer: Callable[[Request], str] | None = None,
) -> Written:
    """The note to write for a remember: a new note, or an existing one updated.

    A titled memory given no node goes where `placer` says (its topic), else to the inbox.
    """
    node = _as_spelled(store, request.partition, check_node(request.node)) if request.node else None
    kind = check_kind(request.kind)
    if kind is None:
        kind = _kind_for(node, request.title)
    if node is None and kind == Kind.TITLED and placer is not None:
        node = placer(request)
    if kind == Kind.DATED:
        return _dated(request, node or "Memory/Sessions", store, now)
    if kind == Kind.THREAD:
        return _thread(request, node or THREADS, store, catalog, now)
    if kind == Kind.SINGLETON:  # Biography, Goals, …: their own folder, where the briefing reads
        home = next((n for n, t in sorted(SINGLETONS) if t == request.title), INBOX)
        return _singleton(request, node or home, store, catalog, now)
    return _titled(request, node or INBOX, store, catalog, now)


def _as_spelled(store: NotesPort, partition: str, node: str) -> str:
    """The node as its folders are spelled: "knowledge/projects" names Knowledge/Projects, not a
    second folder beside it that macOS and Windows would take for the same one."""
    spelled: list[str] = []
    for part in node.split("/"):
        parent = "/".join([partition, *spelled])
        found = store.folder_named(parent, part)  # a new folder: one every system can hold
        spelled.append(found or check_portable(part, f"node {node!r}: its part"))
    return "/".join(spelled)


def node_is_dated(node: str | None) -> bool:
    return node in DATED_NODES


def _kind_for(node: str | None, title: str | None) -> str:
    if node in DATED_NODES:
        return "dated"
    if node == THREADS:
        return "thread"
    if node and title and ((node, title) in SINGLETONS or _is_sources(node, title)):
        return "singleton"
    return "titled"


def _is_sources(node: str, title: str) -> bool:
    parts = node.split("/")
    return len(parts) == 3 and parts[:2] == ["Knowledge", "Domains"] and title == "Sources"


def new_note(
    request: Request, path: str, title: str, kind: str, body: str, now: datetime, **extra: Any
) -> Note:
    stamp = iso(now)
    meta: dict[str, Any] = {"id": new_id(now), "title": title, "kind": kind, "status": "active"}
    meta["created"] = stamp
    meta["touched"] = stamp
    if request.tags:
        meta["tags"] = list(request.tags)
    meta.update({k: v for k, v in extra.items() if v is not None})
    if request.extra:
        meta.update(request.extra)
    meta["source"] = dict(request.source or {"via": "cli"})
    return Note(meta=meta, body=body, path=path)


def _touch(note: Note, now: datetime, tags: Sequence[str]) -> Note:
    merged = list(note.tags) + [t for t in tags if t not in note.tags]
    return note.with_meta(touched=iso(now), updated=iso(now), tags=merged or None)


def _titled(
    request: Request, node: str, store: NotesPort, catalog: CatalogReads, now: datetime
) -> Written:
    title = request.title if request.title is not None else derive_title(request.text)
    found = _find_title(request, catalog, node, title)
    if found is not None:
        note = read_in_the_way(request, store, found.path)  # broken since the catalog saw it?
        if holds(note.body, request.text):  # the same memory again: no copy, no "X 2.md"
            return Written(_touch(note, now, request.tags), UNCHANGED)
        if request.title is not None:  # the same title adds to its note
            _check_not_a_board(note)
            body = note.body.rstrip("\n") + "\n\n" + request.text.strip() + "\n"
            return Written(_touch(note.with_body(body), now, request.tags), APPENDED)
    else:
        _check_broken_title(request, f"{request.partition}/{node}", store)
    path = _free_path(request, store, f"{request.partition}/{node}", file_stem(title))
    return Written(
        new_note(request, path, title, "titled", request.text.strip() + "\n", now), CREATED
    )


def _free_path(request: Request, store: NotesPort, folder: str, stem: str) -> str:
    """A name no file in the folder has, nor in the spellings macOS and Windows take for the
    same file that people and Macs make most: "kite.md" or an NFD "Café.md" takes "Kite.md" or
    "Café.md" (a clone there would hold one file of two). A few stats, not a listing of the
    folder (~30 ms a write at 10k notes); doctor names any other twin (portable.py)."""
    name, n = f"{stem}.md", 2
    while held := next((f for f in spellings(name) if store.exists(f"{folder}/{f}")), None):
        _check_in_the_way(request, store, f"{folder}/{held}")
        name, n = f"{stem} {n}.md", n + 1
    return f"{folder}/{name}"


def read_in_the_way(request: Request, store: NotesPort, path: str) -> Note:
    """The note in a write's way; one that does not parse is named for the person, never
    passed over for `X 2.md` (a model is told nothing new: the file may be a private note)."""
    try:
        return store.read(path)
    except BrokenNote as exc:
        if request.visible_only:
            raise
        raise broken_in_the_way(path, exc) from None


def _check_broken_title(request: Request, folder: str, store: NotesPort) -> None:
    """A title whose note broke is not written anew beside it, under another name."""
    for rel in request.broken:
        if rel.rpartition("/")[0] == folder:
            _check_in_the_way(request, store, rel)


def _check_in_the_way(request: Request, store: NotesPort, path: str) -> None:
    """For the person, a taken name whose file does not parse stops the write (a model's
    write passes over it, as over any note hidden from it)."""
    if not request.visible_only:
        read_in_the_way(request, store, path)


def _dated(request: Request, node: str, store: NotesPort, now: datetime) -> Written:
    day = now.strftime("%Y-%m-%d")
    path = f"{request.partition}/{node}/{day}.md"
    block = f"## {stamp(now)}\n\n{request.text.strip()}\n"
    if store.exists(path):
        return _append(request, store, path, block, now)
    return Written(new_note(request, path, day, "dated", f"# {day}\n\n{block}", now), CREATED)


def _append(request: Request, store: NotesPort, path: str, block: str, now: datetime) -> Written:
    """A block added at the end of a day's note."""
    note = read_in_the_way(request, store, path)
    body = note.body.rstrip("\n") + "\n\n" + block
    return Written(_touch(note.with_body(body), now, request.tags), APPENDED)


def _singleton(
    request: Request, node: str, store: NotesPort, catalog: CatalogReads, now: datetime
) -> Written:
    if not request.title:
        raise InvalidInput("a singleton needs --title (e.g. Biography, Goals, Preferences)")
    found = _find_title(request, catalog, node, request.title)
    body_text = request.text.strip() + "\n"
    if found is None:
        _check_broken_title(request, f"{request.partition}/{node}", store)
        path = f"{request.partition}/{node}/{file_stem(request.title)}.md"
        if store.exists(path):
            _check_in_the_way(request, store, path)
        return Written(new_note(request, path, request.title, "singleton", body_text, now), CREATED)
    note = read_in_the_way(request, store, found.path)
    # The purpose engraved at the top (a blockquote) stays; the current truth is replaced.
    lines = note.body.splitlines(keepends=True)
    keep = 0
    while keep < len(lines) and (lines[keep].startswith(">") or not lines[keep].strip()):
        keep += 1
    purpose = "".join(lines[:keep]).rstrip("\n")
    body = (purpose + "\n\n" if purpose else "") + body_text
    outcome = UNCHANGED if body == note.body else REPLACED
    return Written(_touch(note.with_body(body), now, request.tags), outcome)


def _thread(
    request: Request, node: str, store: NotesPort, catalog: CatalogReads, now: datetime
) -> Written:
    if not request.title:
        raise InvalidInput("a thread needs --title")
    folder, index = _thread_folder(request, node, store, catalog, request.title)
    if index is None:
        body = f"## Context\n\n{request.text.strip()}\n\n## Resolution\n\n"
        path = f"{request.partition}/{folder}/index.md"
        note = new_note(request, path, request.title, "thread", body, now, eternal=False)
        return Written(note, CREATED)
    day = now.strftime("%Y-%m-%d")
    path = f"{request.partition}/{folder}/{day}.md"
    block = f"## {stamp(now)}\n\n{request.text.strip()}\n"
    if store.exists(path):
        return _append(request, store, path, block, now)
    title = f"{index.title} — {day}"
    note = new_note(request, path, title, "dated", f"# {title}\n\n{block}", now, parent=index.id)
    return Written(note, CREATED)


def _check_not_a_board(note: Note) -> None:
    """Obsidian's Kanban plugin keeps only its lanes' cards: a paragraph added to a board
    would be hidden, then dropped at the board's next save (docs/lab/probe-plugins.md)."""
    if "kanban-plugin" in note.meta:
        raise InvalidInput(
            f"{note.path} is a Kanban board (`kanban-plugin` in its properties), whose plugin "
            "keeps only the cards of its lanes: text added to it would be lost",
            "remember it under another title, or add it as a card in Obsidian",
        )


def _find_title(request: Request, catalog: CatalogReads, node: str, title: str) -> ObjectRow | None:
    return catalog.find_title(
        request.partition, node, normalise_title(title), visible_only=request.visible_only
    )


def _thread_folder(
    request: Request, node: str, store: NotesPort, catalog: CatalogReads, title: str
) -> tuple[str, ObjectRow | None]:
    """The thread's folder and its index note (None: a new thread goes in that folder).

    A thread is found by its normalised title, as a titled note is, whatever its folder is
    called. A folder whose index is hidden from the writer is passed over for `<title> 2`…
    """
    if node != THREADS:
        return node, _find_title(request, catalog, node, title)
    found = catalog.find_thread(
        request.partition, node, normalise_title(title), visible_only=request.visible_only
    )
    if found is not None:
        return found.node, found
    stem = file_stem(title)
    name, n = stem, 2
    while True:  # a folder spelled in another case or normal form is the same one elsewhere
        folder = f"{node}/{store.folder_named(f'{request.partition}/{node}', name) or name}"
        if not store.exists(f"{request.partition}/{folder}/index.md"):
            return folder, None
        _check_in_the_way(request, store, f"{request.partition}/{folder}/index.md")
        name, n = f"{stem} {n}", n + 1


def remember(
    brain: Context,
    text: str,
    *,
    title: str | None = None,
    node: str | None = None,
    tags: Sequence[str] = (),
    kind: str | None = None,
    visibility: str | None = None,
    source: dict[str, Any] | None = None,
) -> Written:
    """Store a memory; what happens depends on the note kind (see `plan`). `visibility`: a new
    note hidden from its first write (the person's alone; see `_hidden`)."""
    check_text(text, brain.settings.max_text_bytes)
    if visibility is not None and brain.for_model:
        raise InvalidInput("a model cannot set a note's visibility")
    if visibility is not None and visibility not in VISIBILITIES:
        allowed = ", ".join(VISIBILITIES)
        raise InvalidInput(f"visibility cannot be {visibility!r}; allowed: {allowed}")
    clean_tags = tuple(check_tag(t) for t in tags)
    request = Request(
        text=text,
        partition=brain.partition,
        node=node,
        title=title,
        kind=kind,
        tags=clean_tags,
        source=source or own_pass(brain.clock.now()),
        visible_only=brain.for_model,
    )
    with brain.lock.hold():
        check_writable(brain.store, brain.partition)
        # No catch-up walk here: plan() reads the current file from disk, so hand edits
        # are kept, and a walk per write would make ingesting quadratic. Only a note
        # written by hand under this very title must be known before deduplicating.
        if title is not None and not node_is_dated(node):
            broken = brain.by_hand.refresh_title(f"{brain.partition}/{node or INBOX}", title)
            request = replace(request, broken=tuple(broken))
        written = plan(
            request,
            brain.store,
            brain.caches.catalog,
            brain.clock.now(),
            lambda request: _place(brain, request),
        )
        # A write is a touch: it reactivates a dormant or archived note, and warms a cold one.
        note = brain.touched(defining.mark(written.note, text))
        if visibility is not None and visibility != Visibility.NORMAL:
            note = _hidden(brain, note, written.outcome, visibility)
        return Written(brain.save(note), written.outcome)


def _hidden(brain: Context, note: Note, outcome: str, visibility: str) -> Note:
    """A new titled note, private or local-only from its first write: a local-only one is
    written under local-only/ at once, so no commit ever holds a version of it (made normal
    and then local-only, its first version stayed in git's history)."""
    if note.kind != Kind.TITLED:
        raise InvalidInput(
            f"a {note.kind} note is shared by later writes; only a titled note takes a visibility",
            "remember it in a folder of titled notes (--node)",
        )
    if outcome != "created":
        hint = f"`brain set {note.id} visibility {visibility}` changes that one"
        if note.visibility == visibility:
            hint = f"it is {visibility} already: without --visibility the text is added to it"
        raise InvalidInput(
            f"{note.path} is already there; a visibility is given to a new note", hint
        )
    if visibility == LOCAL_ONLY:
        if not brain.capabilities.local_only:
            raise InvalidInput("a hosted brain keeps no local-only notes", "make it private")
        target = hidden_path(note.path)
        if brain.store.path(target).exists():
            raise InvalidInput(f"{target} is already there; give the note another title")
        note = note.with_path(target)
    return note.with_meta(visibility=visibility)


def own_pass(now: datetime) -> dict[str, Any]:
    """The provenance of a write its caller gave none (the person's own command): a pass of
    its own, so a later correction flags nothing else as written with it (corrections.py)."""
    return {"via": "cli", "session": new_id(now)}


def _place(brain: Context, request: Request) -> str:
    """The node for a memory given no --node: its best-matching topic, else the inbox."""
    return place(
        brain.node_index, brain.caches.catalog, request.partition, request.text, request.title
    )
