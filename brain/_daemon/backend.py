"""Backends: the core in this process, or the vault's daemon; both give the same plain JSON.

The CLI's note commands talk to a `Backend`, so a command reads the same whether the warm
daemon answers it or this process opens the vault itself (the fallback).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, Unpack, cast

from brain._errors import TurnedAway
from brain._model import ListOptions, RecallOptions, RememberOptions

if TYPE_CHECKING:
    from brain._brain import Brain
    from brain._daemon.client import DaemonClient
    from brain._indexes.catalog import ObjectRow
    from brain._model import Hit, Note

Json = dict[str, Any]


class Backend(Protocol):
    """What the CLI's note commands need; every result is JSON-able."""

    where: str  # "daemon" or "process"

    # `partition`: work in that partition for this call only (None: the vault's default).
    def remember(
        self, text: str, partition: str | None = None, **options: Unpack[RememberOptions]
    ) -> Json: ...
    def recall(
        self, query: str, partition: str | None = None, **options: Unpack[RecallOptions]
    ) -> list[Json]: ...
    def expand(self, note_id: str, partition: str | None = None) -> Json: ...
    def links(self, note_id: str) -> Json: ...
    def history(self, note_id: str) -> list[Json]: ...
    def list_notes(
        self, partition: str | None = None, **options: Unpack[ListOptions]
    ) -> list[Json]: ...
    def count_notes(self, partition: str | None = None, **options: Unpack[ListOptions]) -> int: ...
    def forget_plan(self, note_id: str, mode: str = "auto") -> Json: ...
    def forget(self, note_id: str, mode: str = "auto") -> list[str]: ...
    def correct(self, note_id: str, text: str, title: str | None = None) -> Json: ...
    def close(self) -> None: ...


# The operations a Backend offers: the daemon serves these names (and no others) to the CLI.
OPERATIONS = (
    "remember",
    "recall",
    "expand",
    "links",
    "history",
    "list_notes",
    "count_notes",
    "forget_plan",
    "forget",
    "correct",
)


class LocalBackend:
    """The core in this process: one Brain."""

    where = "process"

    def __init__(self, brain: Brain) -> None:
        self.brain = brain

    def remember(
        self, text: str, partition: str | None = None, **options: Unpack[RememberOptions]
    ) -> Json:
        written = view(self.brain, partition).remembered(text, **options)
        return {**note_to_json(written.note), "outcome": written.outcome}

    def recall(
        self, query: str, partition: str | None = None, **options: Unpack[RecallOptions]
    ) -> list[Json]:
        return [h.to_json() for h in view(self.brain, partition).recall(query, **options)]

    def expand(self, note_id: str, partition: str | None = None) -> Json:
        return note_to_json(view(self.brain, partition).expand(note_id))

    def links(self, note_id: str) -> Json:
        links = self.brain.links(note_id)
        ids = [e.target for e in links.outgoing]  # a document's chunk: that chunk's title
        ids += [e.source for e in links.incoming]
        return links.to_json(self.brain.titles(ids))

    def history(self, note_id: str) -> list[Json]:
        return [note_to_json(v) for v in self.brain.history(note_id)]

    def list_notes(
        self, partition: str | None = None, **options: Unpack[ListOptions]
    ) -> list[Json]:
        return [row_to_json(r) for r in view(self.brain, partition).list(**options)]

    def count_notes(self, partition: str | None = None, **options: Unpack[ListOptions]) -> int:
        return view(self.brain, partition).count(**options)

    def forget_plan(self, note_id: str, mode: str = "auto") -> Json:
        plan = self.brain.forget_plan(note_id, mode)
        return {**plan.to_json(), "notes": plan.notes}

    def forget(self, note_id: str, mode: str = "auto") -> list[str]:
        return self.brain.forget(note_id, mode)

    def correct(self, note_id: str, text: str, title: str | None = None) -> Json:
        return note_to_json(self.brain.correct(note_id, text, title=title))

    def close(self) -> None:
        self.brain.close()


class DaemonBackend:
    """The vault's daemon, over its socket: each call is one request.

    A call the daemon turned away unrun (it is stopping: TurnedAway) runs on the Backend that
    `fallback` opens (the CLI's: the core in this process), and so do the calls after it.
    Nothing else is tried again: after a request was sent, DaemonLost may mean it was done.
    """

    where = "daemon"

    def __init__(self, client: DaemonClient, fallback: Callable[[], Backend] | None = None) -> None:
        self.client = client
        self.fallback = fallback
        self._instead: Backend | None = None

    def _call(self, op: str, args: Json) -> Any:
        if self._instead is None:
            try:
                return self.client.call(op, args)
            except TurnedAway:
                if self.fallback is None:
                    raise
            self.client.close()
            self._instead = self.fallback()
            self.where = self._instead.where
        return getattr(self._instead, op)(**args)

    def _one(self, op: str, **args: Any) -> Json:
        return cast(Json, self._call(op, args))

    def _many(self, op: str, **args: Any) -> list[Json]:
        return cast(list[Json], self._call(op, args))

    def remember(
        self, text: str, partition: str | None = None, **options: Unpack[RememberOptions]
    ) -> Json:
        if "tags" in options:
            options["tags"] = [*options["tags"]]  # JSON has lists
        return self._one("remember", text=text, partition=partition, **options)

    def recall(
        self, query: str, partition: str | None = None, **options: Unpack[RecallOptions]
    ) -> list[Json]:
        return self._many("recall", query=query, partition=partition, **options)

    def expand(self, note_id: str, partition: str | None = None) -> Json:
        return self._one("expand", note_id=note_id, partition=partition)

    def links(self, note_id: str) -> Json:
        return self._one("links", note_id=note_id)

    def history(self, note_id: str) -> list[Json]:
        return self._many("history", note_id=note_id)

    def list_notes(
        self, partition: str | None = None, **options: Unpack[ListOptions]
    ) -> list[Json]:
        return self._many("list_notes", partition=partition, **options)

    def count_notes(self, partition: str | None = None, **options: Unpack[ListOptions]) -> int:
        return cast(int, self._call("count_notes", {"partition": partition, **options}))

    def forget_plan(self, note_id: str, mode: str = "auto") -> Json:
        return self._one("forget_plan", note_id=note_id, mode=mode)

    def forget(self, note_id: str, mode: str = "auto") -> list[str]:
        return cast(list[str], self._call("forget", {"note_id": note_id, "mode": mode}))

    def correct(self, note_id: str, text: str, title: str | None = None) -> Json:
        return self._one("correct", note_id=note_id, text=text, title=title)

    def close(self) -> None:
        self.client.close()
        if self._instead is not None:
            self._instead.close()


def view(brain: Brain, partition: str | None) -> Brain:
    """The Brain seen from that partition for one call."""
    return brain.in_partition(partition)


def note_to_json(note: Note) -> Json:
    return {"id": note.id, "path": note.path, "meta": dict(note.meta), "body": note.body}


def note_from_json(data: Json) -> Note:
    from brain._model import Note

    return Note(meta=data["meta"], body=data["body"], path=data["path"])


def hit_from_json(data: Json) -> Hit:
    from brain._model import Hit

    return Hit(
        id=data["id"],
        title=data["title"],
        snippet=data["snippet"],
        created=data["created"],
        path=data["path"],
        score=data["score"],
        kind=data["kind"],
        status=data["status"],
        node=data["node"],
        source=data["source"],
        flags=tuple(data["flags"]),
        parent=data["parent"],
        heading_path=tuple(data["heading_path"]),
        tags=tuple(data["tags"]),
        explain=data.get("explain"),
        relevance=data.get("relevance", 0.0),
        band=data.get("band", "weak"),
        more=data.get("more", False),
        updated=data.get("updated", ""),  # a daemon of an older brain sends none
    )


def row_to_json(row: ObjectRow) -> Json:
    return {
        "id": row.id,
        "title": row.title,
        "kind": row.kind,
        "status": row.status,
        "created": row.created,
        "touched": row.touched,
        "updated": row.updated,
        "path": row.path,
        "node": row.node,
        "tags": list(row.tags),
        "source": row.source,
        "defining": row.defining,
        "visibility": row.visibility,
    }
