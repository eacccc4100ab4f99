"""What killed writes leave behind: hidden temp files of atomic writes, caches set aside; and
a file-sync tool's conflict copies of files brain writes anew (synced.py)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from brain._settings import SETTINGS_FILE
from brain._vault import synced
from brain._vault.paths import CACHE_DIR

# A write in flight lives for milliseconds between its temp file and the rename; a temp file an
# hour old belongs to a process that died.
LEFTOVER_AGE = 3600.0
# The names `atomic_write` (mkstemp) and the vector and model savers give their temp files.
_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
_SET_ASIDE = re.compile(r"^fulltext\.old-[0-9a-f]+$")  # FullText.create() renames the old aside


def find(root: Path, now: float, min_age: float = LEFTOVER_AGE) -> list[str]:
    """Vault-relative paths of leftovers last changed at least `min_age` seconds before `now`
    (a sync tool's conflict copy of a file brain writes anew: at any age)."""
    found = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        rel = here.relative_to(root)
        if rel == Path():
            dirs[:] = [d for d in dirs if d != ".git"]
        elif SETTINGS_FILE in files:  # another vault's folder: its leftovers are its brain's
            dirs.clear()
            continue
        # A sync tool's copy is whole when it appears (and brain may have just renewed its id).
        found += [p for f in files if synced.generated_copy(p := (rel / f).as_posix())]
        candidates = [f for f in files if _TEMP.match(f)]
        if rel == Path(CACHE_DIR):
            candidates += [d for d in dirs if _SET_ASIDE.match(d)]
            dirs[:] = [d for d in dirs if not _SET_ASIDE.match(d)]
        for name in candidates:
            try:
                changed = (here / name).lstat().st_mtime
            except FileNotFoundError:
                continue
            if now - changed >= min_age:
                found.append((rel / name).as_posix())
    return sorted(found)


def remove(root: Path, paths: list[str]) -> int:
    """Delete these leftovers (as `find` named them); returns how many went."""
    gone = 0
    for rel in paths:
        path = root / rel
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        except FileNotFoundError:
            continue
        gone += 1
    return gone
