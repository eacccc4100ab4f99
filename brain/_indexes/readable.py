"""The text of a note that recall reads: without the data an editor's plugins keep in it.

A note holds, beside what the person wrote, what no one reads or asks for: an image pasted
inline as a base64 data URI (100 KB of letters in one "word"), a plugin's settings (Kanban's
`%% kanban:settings %%` JSON), a query that a plugin renders in its place (Dataview, Tasks).
Indexed, that text showed in snippets, filled a node's index.json with base64 "entities", and
made the note's embedding one of noise. The file keeps every byte; only the caches' text (full
text, vectors, snippets, node keywords) goes without it.
"""

from __future__ import annotations

import re

# A run this long of base64's letters (and base64url's) with no space in it is data, not
# words: a data URI's payload, a pasted key or blob, a drawing's compressed JSON.
_DATA_RUN = re.compile(r"[A-Za-z0-9+/=_-]{200,}")
# Fenced blocks that a plugin renders in their place: queries over other notes, and data.
_RENDERED = ("dataview", "dataviewjs", "tasks", "compressed-json")
_FENCED = re.compile(
    r"^[ \t]{0,3}(?P<fence>`{3,}|~{3,})[ \t]*(?:" + "|".join(map(re.escape, _RENDERED)) + r")"
    r"[ \t]*\n.*?^[ \t]{0,3}(?P=fence)[`~]*[ \t]*$\n?",
    re.MULTILINE | re.DOTALL,
)
# The Kanban plugin's settings, kept in an Obsidian comment at the end of a board.
_KANBAN_SETTINGS = re.compile(r"^%% kanban:settings[ \t]*\n.*?^%%[ \t]*$\n?", re.M | re.S)


def readable(text: str) -> str:
    """The text without plugins' data and rendered queries; text with none is returned as is."""
    if "```" in text or "~~~" in text:
        text = _FENCED.sub("", text)
    if "%% kanban:settings" in text:
        text = _KANBAN_SETTINGS.sub("", text)
    return _DATA_RUN.sub("", text)
