"""`brain init`: a new vault is a stamped copy of vault-template/."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

from brain._errors import InvalidInput
from brain._model import iso, new_id
from brain._settings import SETTINGS_FILE
from brain._vault import notefile
from brain._vault.files import atomic_write

TEMPLATE_PARTITION = "main"


def template_dir() -> Path:
    """The template shipped inside the wheel, or the project's own folder when run from source."""
    packaged = Path(__file__).resolve().parents[1] / "_template"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "vault-template"


def init_vault(root: Path, now: datetime) -> bool:
    """Create a vault at root; False when one is already there (and nothing is changed)."""
    if (root / SETTINGS_FILE).is_file():
        return False
    if root.exists() and not root.is_dir():
        raise InvalidInput(f"{root} is a file, not a folder")
    if root.exists() and any(root.iterdir()):
        raise InvalidInput(
            f"{root} is not empty and is not a vault",
            f"choose an empty or new folder; to bring the notes in it into a vault, `brain "
            f"connect {root}` reads them as documents after you confirm",
        )
    source = template_dir()
    staging = root.parent / f".{root.name}.init-{os.getpid()}"
    # Build beside the target and rename, so an interrupted init leaves no half vault.
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging)
    settings = (staging / SETTINGS_FILE).read_text(encoding="utf-8")
    atomic_write(staging / SETTINGS_FILE, settings.replace("VAULT_ID", new_id(now)))
    stamp_notes(staging / TEMPLATE_PARTITION, now)
    root.parent.mkdir(parents=True, exist_ok=True)
    if root.exists():
        root.rmdir()
    os.replace(staging, root)
    return True


def stamp_notes(folder: Path, now: datetime) -> None:
    """Give every template note its own id and dates."""
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder).as_posix()
        note = notefile.parse(path.read_text(encoding="utf-8"), rel)
        stamped = note.with_meta(id=new_id(now), created=iso(now), touched=iso(now))
        meta = {"id": stamped.meta["id"], **{k: v for k, v in stamped.meta.items() if k != "id"}}
        atomic_write(path, notefile.render(stamped.__class__(meta=meta, body=note.body, path=rel)))
