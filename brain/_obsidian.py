"""What Obsidian (and tools like it) need of a vault: tags it accepts, relations as links.

Relations stay in `relations` (by id: the truth brain reads). `brain_links` beside them is
derived on every write of the note (`Context.save` calls `linked`): each target as a
`[[path|title]]` wikilink, which Obsidian shows in its graph view and backlinks. Brain never
reads it back; sleep rewrites the links whose targets moved (upkeep/wikilinks.py).
"""

from __future__ import annotations

import re

from brain._errors import InvalidInput
from brain._indexes.ports import CatalogReads
from brain._model import Note, Visibility
from brain._vault.cold import is_cold

LINKS_FIELD = "brain_links"
# A wikilink ends or splits at these: a target whose path holds one gets no link.
_UNLINKABLE = frozenset("[]|#^")
_SPACE = re.compile(r"\s")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_TAG = 100


def check_tag(tag: str) -> str:
    """A tag as Obsidian takes it: no '#' in front (dropped), no spaces, not only digits; a
    nested tag's levels split by '/' ('project/alpha'). A tag is a word, never a file name."""
    tag = tag.strip().lstrip("#")
    if not tag:
        raise InvalidInput("tag is empty")
    if _CONTROL.search(tag):
        raise InvalidInput(f"tag {tag!r} contains a control character (NUL, newline, …)")
    if len(tag) > MAX_TAG:
        raise InvalidInput(f"tag {tag[:20]!r}… is longer than {MAX_TAG} characters")
    if "" in tag.split("/"):
        raise InvalidInput(
            f"tag {tag!r} has an empty level", "a nested tag is written 'project/alpha'"
        )
    if _SPACE.search(tag):
        raise InvalidInput(
            f"tag {tag!r} contains a space; Obsidian and most tools end a tag there",
            f"use {'-'.join(tag.split())!r}",
        )
    if tag.isdigit():
        raise InvalidInput(
            f"tag {tag!r} is only digits, which Obsidian does not take as a tag",
            f"add a word, e.g. 'year-{tag}'",
        )
    return tag


def linked(catalog: CatalogReads, note: Note) -> Note:
    """The note with `brain_links` set from its relations (removed when it has none)."""
    links: list[str] = []
    for relation in note.relations:
        row = catalog.get(relation.target.split("#", 1)[0])
        if row is None or is_cold(row.path) or _UNLINKABLE & set(row.path):
            continue  # no such note (doctor reports it), compressed, or not linkable
        if row.visibility != Visibility.NORMAL:
            continue  # a hidden note's title and path never stand in another note's file
        target = row.path.removesuffix(".md")
        title = row.title if not _UNLINKABLE & set(row.title) else ""
        link = f"[[{target}|{title}]]" if title and title != target else f"[[{target}]]"
        if link not in links:
            links.append(link)
    return note.with_meta(**{LINKS_FIELD: links or None})
