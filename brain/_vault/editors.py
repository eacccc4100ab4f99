"""What the person's editor keeps in the vault that is not a note: templates and drawings.

A template ("Templates/Meeting.md", front-matter `created: {{date}}`) is the mould of notes,
not a memory: read as one, it was `broken` for good (its placeholders are not YAML), or given
an id and a title that every note made from it then copied. The folders named in Obsidian's
own settings (the core Templates plugin's `.obsidian/templates.json`, the Templater plugin's
`data.json`) are left out of every walk, as the names starting with a dot are; so is the
Excalidraw plugin's scripts folder, whose `.md` files are JavaScript it runs as they stand.

An Excalidraw drawing is a Markdown file too: the plugin's header, the drawing's text, and
the drawing itself as a compressed JSON block of hundreds of kilobytes. It is a drawing, as a
`.canvas` is, not a note: read as one, its base64 was recall's text (snippets, index.json
entities) and brain wrote its own fields into the plugin's front-matter. Brain never reads or
writes one: found by name (the plugin's `.excalidraw.md`) in every walk, and by the plugin's
front-matter key when a drawing was renamed or saved with the plain `.md` setting.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

# (settings file under the vault, the key naming a folder of the editor's own files)
SETTINGS = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
    (".obsidian/plugins/obsidian-excalidraw-plugin/data.json", "scriptFolderPath"),
)
DRAWING_SUFFIX = ".excalidraw.md"
DRAWING_KEY = "excalidraw-plugin"  # in every drawing's front-matter: `parsed` or `raw`


def template_folders(root: Path) -> tuple[str, ...]:
    """The vault-relative folders the editor keeps templates (and scripts) in; a setting that
    is missing, unreadable or names no folder inside the vault names none."""
    found: list[str] = []
    for name, key in SETTINGS:
        try:
            value = json.loads((root / name).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if not isinstance(value, str):
            continue
        parts = PurePosixPath(value.replace("\\", "/").strip("/")).parts
        if parts and not any(p in ("", ".", "..") for p in parts):
            found.append("/".join(parts))
    return tuple(dict.fromkeys(found))


def aside(rel: str, folders: tuple[str, ...]) -> bool:
    """Whether a vault-relative path is one of these folders or lies below one."""
    return any(rel == f or rel.startswith(f + "/") for f in folders)


def drawing_name(name: str) -> bool:
    """Whether a file's name is an Excalidraw drawing's."""
    return name.lower().endswith(DRAWING_SUFFIX)


def drawing(meta: Mapping[str, Any]) -> bool:
    """Whether a file's front-matter is an Excalidraw drawing's."""
    return DRAWING_KEY in meta
