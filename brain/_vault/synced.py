"""A vault inside a file-sync folder (Syncthing, Dropbox, iCloud Drive and the like).

Such a tool copies every file of the folder to the person's other machines, `.brain/` too:
there each machine's daemon took the other's pid file for a rival and exited, the daemon log
mixed both machines, and caches were replaced under the processes reading them. `.brain/`
holds caches and this machine's own state, so brain tells the tool to leave it alone where the
tool can be told (`keep_private`, at every opening of the vault) and `brain doctor` says where
it cannot (`exposed`). Notes themselves sync as any file does; when both machines changed one,
the tool keeps the other version beside it as a conflict copy, which `conflict_copies` names.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from brain._vault.paths import CACHE_DIR

SYNCTHING_MARK = ".stfolder"  # the folder marker at the root of every Syncthing folder
STIGNORE = ".stignore"  # Syncthing's ignore patterns, read at the root only, never synced
DROPBOX_MARK = ".dropbox"  # the file the Dropbox client keeps at the root of its folder
DROPBOX_IGNORED = "user.com.dropbox.ignored"  # Dropbox's attribute for "do not sync this"
_PROVIDED = ("Mobile Documents", "CloudStorage")  # macOS's iCloud Drive and File Provider folders
_GRAPH = "/Insights/Graph.md"  # a partition's graph (brain/_upkeep/graph.py)
_GLOB = frozenset("*?[]{}!\\#")  # a path holding one cannot be written as a literal pattern
_STIGNORE_SAYS = "# brain: its caches and this machine's state stay on this machine"

_SYNCTHING_COPY = re.compile(
    r"^(?P<stem>.+)\.sync-conflict-\d{8}-\d{6}-[A-Z0-9]{7}(?P<ext>\.\w+)?$"
)
_DROPBOX_COPY = re.compile(  # Dropbox, and Nextcloud and ownCloud after it
    r"^(?P<stem>.+) \((?:[^()/]+'s )?conflicted copy \d{4}-\d{2}-\d{2}(?: \d{6})?(?: \d+)?\)"
    r"(?P<ext>\.\w+)?$"
)


@dataclass(frozen=True)
class Tool:
    name: str  # as the person knows it: "Syncthing", "Dropbox", "a macOS cloud folder"
    root: Path  # the synced folder that holds the vault (the vault itself or a folder above)


def tools(vault: Path) -> list[Tool]:
    """The file-sync tools whose folders hold this vault, nearest first (a few stats)."""
    found = []
    for folder in (vault, *vault.parents):
        if (folder / SYNCTHING_MARK).exists():
            found.append(Tool("Syncthing", folder))
        if (folder / DROPBOX_MARK).is_file():
            found.append(Tool("Dropbox", folder))
        if folder.parent.name in _PROVIDED and folder.parent.parent.name == "Library":
            found.append(Tool("a macOS cloud folder (iCloud Drive, Dropbox, OneDrive …)", folder))
    return found


def keep_private(vault: Path) -> None:
    """Tell each sync tool that can be told to leave `.brain/` on this machine. Quiet: a
    folder brain may not write is said by `brain doctor` (`exposed`)."""
    for tool in tools(vault):
        try:
            if tool.name == "Syncthing":
                _ignore_in_syncthing(vault, tool.root)
            elif tool.name == "Dropbox":
                _ignore_in_dropbox(vault)
        except OSError:
            pass


def exposed(vault: Path) -> list[str]:
    """What `brain doctor` says of each sync tool that still copies `.brain/` elsewhere."""
    said = []
    for tool in tools(vault):
        if tool.name == "Syncthing" and not _syncthing_ignores(vault, tool.root):
            line = _stignore_line(vault, tool.root) or f"{_rel(vault, tool.root)}/{CACHE_DIR}"
            said.append(
                f"{vault}: in the Syncthing folder {tool.root}, which copies brain's caches "
                f"({CACHE_DIR}/) to your other machines, where they break each other's; add the "
                f"line `{line}` to {tool.root / STIGNORE}"
            )
        elif tool.name == "Dropbox" and not _dropbox_ignores(vault):
            said.append(
                f"{vault}: in the Dropbox folder {tool.root}, which copies brain's caches "
                f"({CACHE_DIR}/) to your other machines; tell Dropbox to ignore it: "
                f"`attr -s com.dropbox.ignored -V 1 '{vault / CACHE_DIR}'` (on macOS "
                f"`xattr -w com.dropbox.ignored 1 '{vault / CACHE_DIR}'`)"
            )
        elif tool.name.startswith("a macOS"):
            said.append(
                f"{vault}: in {tool.name.removeprefix('a ')} {tool.root}, which copies brain's "
                f"caches ({CACHE_DIR}/) to your other machines and cannot be told to leave them; "
                "keep the vault outside it and sync it with git (`brain git enable`)"
            )
    return said


def conflict_copies(rels: list[str]) -> list[str]:
    """What `brain doctor` says of each file a sync tool kept as the other machine's version
    of a file both changed (Syncthing's `.sync-conflict-…`, Dropbox's `(… conflicted copy …)`)."""
    said = []
    for rel in rels:
        found = conflict_of(rel)
        if found is None:
            continue
        tool, original = found
        if generated_copy(rel):
            what = (
                f"{tool}'s conflict copy of {original}, which brain writes anew from the notes; "
                "`brain sleep` removes it"
            )
        elif original.endswith(".md"):
            what = (
                f"{tool} kept this version of {original} too, when two machines changed it; "
                f"compare the two, keep what you want in {original}, then delete this file "
                "(until then it is a note of its own)"
            )
        else:
            continue  # an attachment both machines changed: the person's, not brain's
        said.append(f"{rel}: {what}")
    return said


def generated_copy(rel: str) -> bool:
    """A sync tool's conflict copy of a file brain writes anew from the notes: a node's
    `index.json` (rewritten on every change of the node) or a partition's `Insights/Graph.md`
    (at every sleep). Two machines writing at once leave one behind, with nothing of the
    person's in it."""
    found = conflict_of(rel)
    if found is None:
        return False
    original = found[1]
    return original.rpartition("/")[2] == "index.json" or original.endswith(_GRAPH)


def conflict_of(rel: str) -> tuple[str, str] | None:
    """(the tool, the file it is a copy of) for a sync tool's conflict copy, else None."""
    folder, _, name = rel.rpartition("/")
    for tool, pattern in (("Syncthing", _SYNCTHING_COPY), ("Dropbox", _DROPBOX_COPY)):
        if found := pattern.match(name):
            original = found["stem"] + (found["ext"] or "")
            return tool, f"{folder}/{original}" if folder else original
    return None


def _rel(vault: Path, root: Path) -> str:
    return "/" + vault.relative_to(root).as_posix() if vault != root else ""


def _stignore_line(vault: Path, root: Path) -> str | None:
    """The pattern that ignores `.brain/` from the Syncthing folder's root, or None when the
    path holds a character Syncthing reads as a pattern."""
    line = f"{_rel(vault, root)}/{CACHE_DIR}"
    return None if _GLOB & set(line) else line


def _syncthing_ignores(vault: Path, root: Path) -> bool:
    line = _stignore_line(vault, root)
    try:
        lines = {raw.strip() for raw in (root / STIGNORE).read_text("utf-8").splitlines()}
    except (OSError, UnicodeDecodeError):
        return False
    return bool({line, CACHE_DIR, f"**/{CACHE_DIR}"} & lines)


def _ignore_in_syncthing(vault: Path, root: Path) -> None:
    line = _stignore_line(vault, root)
    if line is None or _syncthing_ignores(vault, root):
        return
    path = root / STIGNORE
    try:
        before = path.read_bytes()
    except FileNotFoundError:
        before = b""
    gap = b"" if not before or before.endswith(b"\n") else b"\n"
    with open(path, "ab") as out:  # appended: the person's own patterns stay as they are
        out.write(gap + f"{_STIGNORE_SAYS}\n{line}\n".encode())


def _dropbox_ignores(vault: Path) -> bool:
    try:
        return os.getxattr(vault / CACHE_DIR, DROPBOX_IGNORED) == b"1"
    except (OSError, AttributeError):  # no such attribute, or a system without them
        return False


def _ignore_in_dropbox(vault: Path) -> None:
    if hasattr(os, "setxattr") and not _dropbox_ignores(vault):
        os.setxattr(vault / CACHE_DIR, DROPBOX_IGNORED, b"1")
