"""File names a clone of the vault on another system cannot hold: said by `brain doctor`.

Git stops a checkout at the first name the file system refuses, so one `Q?.md` made on Linux
leaves a Windows clone with no vault; two names differing only in case or Unicode normal form
("Kite.md", "kite.md") are one file on macOS and Windows, and a clone there keeps one of them.
Brain makes no such name (paths.file_stem, check_portable); these are hand-made or older.
"""

from __future__ import annotations

import os
from pathlib import Path

from brain._vault.paths import CACHE_DIR, name_key, unportable

LONG_PATH = 200  # Windows refuses 260 characters from the drive on, the vault's folder included


def names(root: Path) -> list[str]:
    """Each file or folder of the vault (but `.git/` and `.brain/`) another system cannot hold,
    vault-relative, with why; a path too long for Windows once the vault's folder is before it."""
    said = []
    for folder, dirs, files in os.walk(root):
        if folder == os.fspath(root):
            dirs[:] = [d for d in dirs if d not in (".git", CACHE_DIR)]
        rel = Path(folder).relative_to(root)
        seen: dict[str, str] = {}
        for name in sorted(dirs) + sorted(files):
            path = (rel / name).as_posix()
            if why := unportable(name):
                said.append(f"{path}: {why}; a clone there fails to check out (rename it)")
            elif (twin := seen.setdefault(name_key(name), name)) != name:
                how = "case" if name_key(name) != twin.casefold() else "Unicode form"
                said.append(
                    f"{path}: {twin!r} beside it in another {how}; macOS and Windows take them "
                    "for one file, and a clone there keeps one of the two (rename one)"
                )
            elif len(path) > LONG_PATH and name not in dirs:
                said.append(
                    f"{path}: {len(path)} characters; a Windows clone needs "
                    "`git config core.longpaths true` (or a shorter name)"
                )
    return said
