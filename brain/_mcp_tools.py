"""The MCP tools' bodies and argument types: each tool a thin wrapper over one core call.

brain/_mcp_server.py registers them (their schemas, hints and error handling) and holds the
allowlist; nothing here imports `mcp`.
"""

# No `from __future__ import annotations` here: the SDK reads the tools' annotations at
# registration, and the size limits in them come from this vault's settings.

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field

from brain._brain import Brain
from brain._model import Hit, iso

MAX_QUERY = 1000
MAX_NAME = 200
MAX_TAGS = 20
MAX_K = 20
MAX_LIST = 50
MAX_EXPAND_CHARS = 20_000

Result = dict[str, Any]
ToolFn = Callable[..., Awaitable[Result]]


class Register(Protocol):
    """Makes a decorator that registers a tool with these hints (`build_tools`'s `tool`)."""

    def __call__(
        self, *, read_only: bool, destructive: bool = False, idempotent: bool = False
    ) -> Callable[[ToolFn], ToolFn]: ...


Id = Annotated[
    str,
    Field(
        description="A note id (ULID, e.g. 01JE2Z3K…), as returned by recall or list.",
        min_length=1,
        max_length=40,
    ),
]
Node = Annotated[
    str | None,
    Field(
        description="A folder inside the partition, e.g. `Knowledge/Domains/Cooking`.",
        max_length=300,
    ),
]
PartitionName = Annotated[
    str,
    Field(
        description="A partition name: one plain folder name such as `work`.",
        min_length=1,
        max_length=100,
    ),
]


def memory_tools(tool: Register, brain: Brain, source: dict[str, str], text_field: Any) -> None:
    """remember, recall, forget, expand, list_memories, diagnostics, usage and ping."""

    @tool(read_only=False)
    async def remember(
        text: Annotated[str, text_field],
        title: Annotated[
            str | None,
            Field(
                description="A short title. Remembering under an existing title in the same "
                "folder adds to that note instead of making a new one.",
                max_length=MAX_NAME,
            ),
        ] = None,
        node: Node = None,
        tags: Annotated[
            list[Annotated[str, Field(max_length=60)]],
            Field(description="Tags: single words, without #.", max_length=MAX_TAGS),
        ] = [],  # noqa: B006 (the SDK copies defaults; the list is never mutated)
        kind: Annotated[
            Literal["titled", "singleton", "dated", "thread"] | None,
            Field(
                description="titled (default): a note per title; singleton: one maintained "
                "note such as Biography or Goals, replaced in place; dated: a block appended "
                "to today's note; thread: multi-session work (needs a title)."
            ),
        ] = None,
    ) -> Result:
        """Store a memory in the current partition. Returns the note's id, title and folder,
        and `outcome`: created, appended (added to the note of that title), replaced (a
        singleton's text) or unchanged (the memory was already there: the same text again,
        whatever its case or spacing, with no title or the same one, adds nothing and dates
        the memory `updated` now).

        There is no tool to edit a memory. When a fact changes (the person moved, changed
        their mind), remember the new fact and say what changed ("moved from Berlin to
        Lisbon"): the old memory stays as history, and recall dates every memory (`updated`),
        so the newer one shows which is current. Use `forget` only when the person asks."""
        written = brain.remembered(
            text, title=title, node=node, tags=tags, kind=kind, source=source
        )
        note = written.note
        # The folder, not the file name: a name such as `Bank pin 2.md` would tell a model that
        # a note it cannot see holds `Bank pin.md` (no tool shows a model file names).
        return {
            "id": note.id,
            "title": note.title,
            "node": note.node,
            "kind": note.kind,
            "created": note.created,
            "outcome": written.outcome,
        }

    @tool(read_only=True)
    async def recall(
        query: Annotated[
            str,
            Field(
                description="What to look for, in plain words.", min_length=1, max_length=MAX_QUERY
            ),
        ],
        k: Annotated[int, Field(description="How many results.", ge=1, le=MAX_K)] = 5,
        node: Node = None,
    ) -> Result:
        """The few memories that best answer a query: id, title, snippet, date, source, flags,
        and how much of the query each holds (`relevance` 0-1, `band` strong | fair | weak).
        `nothing_relevant` is true, with no hits, when no memory is about the query.

        `created` is when a memory was first written; `updated` when it was last added to or
        said again (the same as `created` if never). Where two disagree, the one with the newer
        `updated` is current (the older is kept as history). A snippet is at most 200
        characters of the memory; `more` is true when the memory holds more, which `expand`
        with its id reads whole.
        """
        hits = brain.recall(query, k=k, node=node)
        # Nothing cleared the relevance floor: said outright, so a model does not take an
        # empty list for a failure or make do with unrelated memories.
        return {"hits": [hit_json(h) for h in hits], "nothing_relevant": not hits}

    @tool(read_only=False, destructive=True, idempotent=True)
    async def forget(note_id: Id) -> Result:
        """Remove a memory for good, from the files and every index. Cannot be undone. Only
        when the person asks to forget it; a fact that changed is remembered anew instead."""
        removed = brain.forget(note_id)
        return {"forgotten": note_id, "objects_removed": len(removed)}

    @tool(read_only=False, idempotent=True)
    async def expand(note_id: Id) -> Result:
        """A whole note by id, up to 20,000 characters (`truncated` says when it holds more);
        reading it keeps it alive, so it does not age."""
        note = brain.expand(note_id)
        body = note.body
        return {
            "id": note.id,
            "title": note.title,
            "kind": note.kind,
            "status": note.status,
            "created": note.created,
            "updated": note.updated,
            "touched": note.touched,
            "node": note.node,
            "tags": list(note.tags),
            "source": dict(note.source),
            "defining": note.defining,
            "relations": [r.to_yaml() for r in brain.shown_relations(note)],
            "body": body[:MAX_EXPAND_CHARS],
            "truncated": len(body) > MAX_EXPAND_CHARS,
            # An id a merge of two machines' notes did not keep gives the note that took it in.
            **({"merged_from": note_id} if note_id.split("#", 1)[0] != note.id else {}),
        }

    @tool(read_only=True)
    async def list_memories(
        node: Node = None,
        status: Annotated[
            Literal["active", "dormant", "archived", "resolved", "superseded"] | None,
            Field(description="Only notes with this status."),
        ] = None,
        kind: Annotated[
            str | None, Field(description="Only notes of this kind.", max_length=20)
        ] = None,
        limit: Annotated[int, Field(description="At most this many.", ge=1, le=MAX_LIST)] = 20,
    ) -> Result:
        """Notes of the current partition, newest first (ids, titles, dates; no text)."""
        rows = brain.list(node=node, status=status, kind=kind, limit=limit)
        return {
            "notes": [
                {
                    "id": r.id,
                    "title": r.title,
                    "kind": r.kind,
                    "status": r.status,
                    "created": r.created,
                    "updated": r.updated,
                    "node": r.node,
                    "tags": list(r.tags),
                }
                for r in rows
            ]
        }

    @tool(read_only=True)
    async def diagnostics() -> Result:
        """Health: whether the caches are in step with the files, broken notes, pending
        connectors, and which retrievers (and embedding model) are loaded."""
        return brain.diagnostics()

    @tool(read_only=True)
    async def usage() -> Result:
        """Counts of notes by kind and status in the current partition, and their size."""
        return brain.usage()

    @tool(read_only=True, idempotent=True)
    async def ping() -> Result:
        """Check that the memory server answers; says which partition is current."""
        return {"ok": True, "partition": brain.partition, "time": iso(brain.clock.now())}


def partition_tools(tool: Register, brain: Brain) -> None:
    """Make, list, use, rename, archive and restore partitions."""

    @tool(read_only=False)
    async def partition_create(name: PartitionName) -> Result:
        """Create a new, empty partition (a separate memory tree) from the template."""
        return brain.partition_create(name).to_json()

    @tool(read_only=True)
    async def partition_list() -> Result:
        """The partitions of this memory, which one is current, and which are archived."""
        return {"partitions": [p.to_json() for p in brain.partitions()]}

    @tool(read_only=False, idempotent=True)
    async def partition_use(name: PartitionName) -> Result:
        """Work in another partition from now on (for this server only)."""
        return brain.partition_use(name).to_json()

    @tool(read_only=False)
    async def partition_rename(name: PartitionName, new_name: PartitionName) -> Result:
        """Rename a partition; note ids stay the same."""
        return brain.partition_rename(name, new_name).to_json()

    @tool(read_only=False)
    async def partition_archive(name: PartitionName) -> Result:
        """Archive a partition: read-only and out of recall until restored. Nothing is deleted."""
        return brain.partition_archive(name).to_json()

    @tool(read_only=False)
    async def partition_restore(name: PartitionName) -> Result:
        """Bring an archived partition back into use."""
        return brain.partition_restore(name).to_json()


def gate_tools(tool: Register, brain: Brain, source: Result, text_field: Any, limit: int) -> None:
    """The session gate's steps, in order: session, addendum, maintain, remarks, diary, close."""

    @tool(read_only=False)
    async def session() -> Result:
        """Open today's session and get the briefing: the person's Biography, Goals and
        Preferences, your Responsibilities and Protocols, active threads and recent defining
        memories. Call it first."""
        return brain.gate(source).session().to_json()

    @tool(read_only=False)
    async def addendum(text: Annotated[str, text_field]) -> Result:
        """Record in today's session note what happened in this session (second step)."""
        return brain.gate(source).addendum(text).to_json()

    @tool(read_only=False)
    async def maintain() -> Result:
        """Light upkeep, and what needs attention: broken notes, fading threads, the inbox
        (third step)."""
        return brain.gate(source).maintain().to_json()

    @tool(read_only=False)
    async def remarks() -> Result:
        """Reflection cues: what was corrected today, notes worth suspicion, threads touched
        (fourth step). Read them before writing the diary."""
        return brain.gate(source).remarks().to_json()

    @tool(read_only=False)
    async def diary(text: Annotated[str, text_field]) -> Result:
        """Write your diary entry for today, with the reflection cues in hand (fifth step)."""
        return brain.gate(source).diary(text).to_json()

    @tool(read_only=False)
    async def close(
        summary: Annotated[
            str | None,
            Field(description="An optional closing line.", max_length=limit),
        ] = None,
    ) -> Result:
        """Close the session (last step)."""
        closed = brain.gate(source).close(summary).to_json()
        brain.commit()
        return closed


def hit_json(hit: Hit) -> Result:
    return {
        "id": hit.id,
        "title": hit.title,
        "snippet": hit.snippet,
        "created": hit.created,
        "updated": hit.updated or hit.created,
        "source": dict(hit.source),
        "flags": list(hit.flags),
        "kind": hit.kind,
        "status": hit.status,
        "node": hit.node,
        "score": round(hit.score, 4),
        "relevance": round(hit.relevance, 4),
        "band": hit.band,
        "more": hit.more,
    }
