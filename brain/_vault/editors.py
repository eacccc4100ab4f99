"""What the person's editor keeps in the vault that is not a note: templates and drawings.

A template ("Templates/Meeting.md", front-matter `created: {{date}}`) is the mould of notes,
not a memory: read as one, it was `broken` for good (its placeholders are not YAML), or given
an id and a title that every note made from it then copied. The folders named in Obsidian's
own settings (the core Templates plugin's `.obsidian/templates.json`, the Templater plugin's
`data.json`) are left out of every walk, as the names starting with a dot are; so is the
Excalidraw plugin's scripts folder, whose `.md` files are JavaScript it runs as they stand.

Obsidian also makes folders of its own at the vault's top, which brain would take for
partitions (every top-level folder is one): the attachments folder (`.obsidian/app.json`
`attachmentFolderPath`, when it names one folder, not "/" or "./…") and the Excalidraw
plugin's drawings folder (its `data.json` `folder`). They hold pictures and drawings, not
notes, so they are no partitions. Its daily notes are notes: a top-level daily-notes folder
stays a partition, and `brain doctor` says how to have it recalled with the rest.

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
# (settings file, key) naming a top-level folder of the editor's attachments or drawings
TOP_SETTINGS = (
    (".obsidian/app.json", "attachmentFolderPath"),
    (".obsidian/plugins/obsidian-excalidraw-plugin/data.json", "folder"),
)
DAILY_NOTES = ".obsidian/daily-notes.json"  # the core Daily notes plugin: `folder`
PERIODIC_NOTES = ".obsidian/plugins/periodic-notes/data.json"  # `daily: {folder, enabled}`, …
PERIODS = ("daily", "weekly", "monthly", "quarterly", "yearly")
DRAWING_SUFFIX = ".excalidraw.md"
DRAWING_KEY = "excalidraw-plugin"  # in every drawing's front-matter: `parsed` or `raw`


def template_folders(root: Path) -> tuple[str, ...]:
    """The vault-relative folders the editor keeps templates (and scripts) in; a setting that
    is missing, unreadable or names no folder inside the vault names none."""
    return _named(root, SETTINGS)


def top_folders(root: Path) -> tuple[str, ...]:
    """The top-level folders the editor keeps attachments and drawings in (none named: none).
    "./assets" (beside each note) and "/" (the vault's top) name no folder of their own."""
    found = [f for f in _named(root, TOP_SETTINGS, relative=False) if "/" not in f]
    return tuple(found)


def daily_folders(root: Path) -> tuple[tuple[str, str], ...]:
    """Where the editor writes its daily (and other periodic) notes: (folder, the settings
    files naming it); the vault's top is no folder."""
    found: dict[str, list[str]] = {}
    for folder in _named(root, ((DAILY_NOTES, "folder"),)):
        found.setdefault(folder, []).append(DAILY_NOTES)
    periodic = _settings(root, PERIODIC_NOTES)
    for period in PERIODS:
        entry = periodic.get(period)
        if isinstance(entry, dict) and entry.get("enabled", True) is not False:
            for folder in _folder(entry.get("folder")):
                named = found.setdefault(folder, [])
                if PERIODIC_NOTES not in named:
                    named.append(PERIODIC_NOTES)
    return tuple((folder, ", ".join(named)) for folder, named in found.items())


def _named(
    root: Path, settings: tuple[tuple[str, str], ...], *, relative: bool = True
) -> tuple[str, ...]:
    """The folders these settings name; `relative`: a value starting "./" names one too."""
    found: list[str] = []
    for name, key in settings:
        value = _settings(root, name).get(key)
        if relative or not (isinstance(value, str) and value.startswith("./")):
            found += _folder(value)
    return tuple(dict.fromkeys(found))


def _settings(root: Path, name: str) -> dict[str, Any]:
    """One settings file of the editor's; missing, unreadable or no JSON object: empty."""
    try:
        found = json.loads((root / name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _folder(value: object) -> list[str]:
    """A setting's folder as a vault-relative path; none if it names no folder inside."""
    if not isinstance(value, str):
        return []
    parts = PurePosixPath(value.replace("\\", "/").strip("/")).parts
    if parts and not any(p in ("", ".", "..") for p in parts):
        return ["/".join(parts)]
    return []


def aside(rel: str, folders: tuple[str, ...]) -> bool:
    """Whether a vault-relative path is one of these folders or lies below one."""
    return any(rel == f or rel.startswith(f + "/") for f in folders)


def drawing_name(name: str) -> bool:
    """Whether a file's name is an Excalidraw drawing's."""
    return name.lower().endswith(DRAWING_SUFFIX)


def drawing(meta: Mapping[str, Any]) -> bool:
    """Whether a file's front-matter is an Excalidraw drawing's."""
    return DRAWING_KEY in meta
