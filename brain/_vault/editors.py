"""What the person's editor keeps in the vault that is not a note: Obsidian's templates.

A template ("Templates/Meeting.md", front-matter `created: {{date}}`) is the mould of notes,
not a memory: read as one, it was `broken` for good (its placeholders are not YAML), or given
an id and a title that every note made from it then copied. The folders named in Obsidian's
own settings (the core Templates plugin's `.obsidian/templates.json`, the Templater plugin's
`data.json`) are left out of every walk, as the names starting with a dot are.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

# (settings file under the vault, the key naming the templates folder)
SETTINGS = (
    (".obsidian/templates.json", "folder"),
    (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"),
)


def template_folders(root: Path) -> tuple[str, ...]:
    """The vault-relative folders the editor keeps templates in; a setting that is missing,
    unreadable or names no folder inside the vault names none."""
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
