"""What a merge driver leaves for the next brain command, once the merge is over.

A driver writes one file (git's %A). When a merge must also add a file (the earlier of two
corrections made on two machines) or repoint relations (a dated note whose id the merge did
not keep), the driver leaves a line here and flags the regeneration that follows every merge
(`regenerate.regenerate_after_merge` reads the lines, acts, and commits).
"""

from __future__ import annotations

import json
from pathlib import Path

from brain._git.repo import flag_regeneration
from brain._vault.files import owner_only, remove_file
from brain._vault.paths import CACHE_DIR

PENDING = f"{CACHE_DIR}/git-merged.jsonl"


def leave(cwd: Path, entry: dict[str, str]) -> bool:
    """Append one entry for after the merge; False when this clone has no `.brain/` yet."""
    if not (cwd / CACHE_DIR).is_dir():
        return False
    with owner_only(), (cwd / PENDING).open("a", encoding="utf-8") as out:
        # ASCII: a line cut short by a crash is bad JSON, never bytes that do not decode.
        out.write(json.dumps(entry, sort_keys=True) + "\n")
    flag_regeneration(cwd)
    return True


def left(root: Path) -> list[dict[str, str]]:
    """The entries waiting, oldest first (a line that does not read is skipped: every command
    that opens the vault reads them, so a torn or garbled line must not stop them all)."""
    try:
        lines = (root / PENDING).read_bytes().splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(entry, dict) and all(isinstance(v, str) for v in entry.values()):
            entries.append(entry)
    return entries


def done(root: Path) -> None:
    if (root / PENDING).exists():
        remove_file(root / PENDING)
