"""One note changed on two machines where git's lines overlap, merged field by field.

brain's own writes change a note's front-matter in ways git's line merge cannot put together:
`brain relate` and `brain set` on one machine and a correction on the other both rewrite the
fields around `status:` and `relations:`, and `remember --title` adds a paragraph at the end of
a body the other machine's correction replaced. What each side changed is known from the base:
- the same note on both sides (same id): each field takes the side that changed it; `touched`
  the later; `relations`, `tags` and `brain_links` keep what either added and drop what either
  removed. The body is the side that changed it, or the base with both sides' additions.
- a correction on one side (a new id superseding the base) and the base changed on the other:
  the correction stays the note, and takes the other side's field changes and the paragraphs it
  added at the end (the base's own text was corrected; what was added to it was not).
A singleton (Goals …) replaced on both sides keeps both texts, the later first (`_both`). A
field both sides set differently, or a body both rewrote, is not merged here: git's conflict.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from brain._model import Kind, Note, Status
from brain._vault import notefile

_LISTS = ("relations", "tags", "brain_links")
_GONE = object()


def merge_fields(base: str, ours: str, theirs: str, *, rel: str) -> str | None:
    """The merged note's text, or None when the two sides are not changes it merges."""
    if not (base.strip() and ours.strip() and theirs.strip()):
        return None
    old, a, b = (notefile.parse(t, rel) for t in (base, ours, theirs))
    if not old.id:
        return None
    if a.id == old.id and b.id == old.id:
        # Both clones put the two sides in one order, so a merge either way gives one text.
        first, second = sorted(
            (a, b), key=lambda n: (str(n.meta.get("touched")), notefile.render(n))
        )
        body = _body(old.body, first.body, second.body, appends=old.kind != Kind.SINGLETON)
        touched = {str(n.meta.get("touched")) for n in (old, first, second)}
        if body is None and old.kind == Kind.SINGLETON and len(touched) == 3:
            body = _both(first, second)  # brain replaced it on both (hand edits: a conflict)
    else:
        fresh = [n for n in (a, b) if n.id != old.id]
        if len(fresh) != 1:
            return None
        first = fresh[0]
        second = b if first is a else a
        if first.supersedes != old.id or first.status == Status.SUPERSEDED:
            return None
        added = _added(old.body, second.body)
        if added and old.kind == Kind.SINGLETON:
            added = None  # a singleton's text is replaced, never added to
        body = None if added is None else first.body.rstrip("\n") + added if added else first.body
    meta = _meta(old.meta, first.meta, second.meta) if body is not None else None
    if meta is None or body is None:
        return None
    return notefile.render(replace(first, meta=meta, body=body, raw_front=None))


def _body(old: str, first: str, second: str, *, appends: bool) -> str | None:
    if first == second or second == old:
        return first
    if first == old:
        return second
    one, other = _added(old, first), _added(old, second)
    if appends and one and other:  # added to by title on both machines: both, in time order
        return first.rstrip("\n") + other
    return None


def _both(earlier: Note, later: Note) -> str:
    """A singleton (Goals, Biography …) replaced on two machines: the later text stays its
    text, and the earlier one follows under a line that says so. Neither machine's words are
    lost, and the note stays one that brain and the briefing read; the person keeps what
    still holds (a replacement on one machine has no history to find the other in)."""
    when = str(earlier.meta.get("touched") or earlier.created)
    kept, other = later.body.strip().split("\n\n"), earlier.body.strip().split("\n\n")
    same = 0  # the paragraphs both begin with (the note's purpose line) are said once
    while same < min(len(kept), len(other)) - 1 and kept[same] == other[same]:
        same += 1
    return (
        f"{later.body.rstrip()}\n\n---\n\n"
        f"Replaced on two machines; the earlier text (written {when}), kept by the merge:\n\n"
        + "\n\n".join(other[same:])
        + "\n"
    )


def _added(old: str, new: str) -> str | None:
    """What `new` adds after the whole of `old` ("\\n\\n…\\n"), "" if nothing, None if it
    changed `old` itself."""
    if new == old:
        return ""
    head = old.rstrip("\n")
    if new.startswith(head + "\n\n") and new[len(head) :].strip():
        return new[len(head) :].rstrip("\n") + "\n"
    return None


def _meta(
    old: Mapping[str, Any], first: Mapping[str, Any], second: Mapping[str, Any]
) -> dict[str, Any] | None:
    merged: dict[str, Any] = {}
    for key in [*first, *(k for k in second if k not in first)]:
        was, one, other = (m.get(key, _GONE) for m in (old, first, second))
        if one == other or other == was:
            value = one
        elif one == was:
            value = other
        elif key in ("touched", "updated") and _GONE not in (one, other):
            value = max(str(one), str(other))
        elif key in _LISTS and all(isinstance(v, list) for v in (one, other)):
            value = _list(was if isinstance(was, list) else [], one, other)
        else:
            return None  # one field set two ways: the person decides
        if value is not _GONE:
            merged[key] = value
    return merged


def _list(old: list[Any], one: list[Any], other: list[Any]) -> list[Any]:
    """What either side added, less what either side removed, in the first side's order."""
    removed = [item for item in old if item not in one or item not in other]
    kept = [item for item in one if item not in removed]
    return kept + [item for item in other if item not in kept and item not in removed]
