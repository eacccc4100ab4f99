"""`brain init`: a new vault is a stamped copy of vault-template/."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

from brain._errors import InvalidInput
from brain._model import iso, new_id
from brain._settings import SETTINGS_FILE
from brain._vault import notefile, synced
from brain._vault.files import atomic_write

TEMPLATE_PARTITION = "main"


def template_dir() -> Path:
    """The template shipped inside the wheel, or the project's own folder when run from source."""
    packaged = Path(__file__).resolve().parents[1] / "_template"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "vault-template"


# What a folder may hold and still count as empty for a new vault: a clone of an empty
# repository, a sync tool's marks (Syncthing's, and what Finder and Explorer drop anywhere),
# an Obsidian vault not yet written in. None is a note, and none of them is replaced.
_NOT_NOTES = frozenset(
    {".git", ".stfolder", ".stignore", ".stversions", ".obsidian", ".DS_Store", ".localized"}
    | {"Thumbs.db", "desktop.ini"}
)


def init_vault(root: Path, now: datetime) -> bool:
    """Create a vault at root; False when one is already there (and nothing is changed)."""
    if (root / SETTINGS_FILE).is_file():
        return False
    if root.exists() and not root.is_dir():
        raise InvalidInput(
            f"{root} is a file, not a folder",
            "move the file away, or make the vault elsewhere (`brain init PATH`) and name it "
            "with --vault PATH or BRAIN_VAULT",
        )
    outer = enclosing_vault(root)
    if outer is not None:
        raise InvalidInput(
            f"{root} is inside the vault {outer}",
            "the outer vault would take this one's files for its own notes; choose a folder "
            "outside it, or `brain partition create NAME` for a separate tree in that vault",
        )
    repository = root / ".git"
    if root.exists() and any(p.name not in _NOT_NOTES for p in root.iterdir()):
        raise InvalidInput(
            f"{root} is not empty and is not a vault",
            f"choose an empty or new folder; to bring the notes in it into a vault, `brain "
            f"connect {root}` reads them as documents after you confirm",
        )
    if repository.exists() and not _repository_without_commits(repository):
        raise InvalidInput(
            f"{root} is a git repository with history, not a vault",
            "choose an empty or new folder, or a clone of an empty repository",
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
    if not root.exists():
        os.replace(staging, root)
        synced.keep_private(root)
        return True
    # A folder that is there is filled, not replaced: a shell standing in it (`brain init .`),
    # an editor or a sync tool watching it keeps it. brain.yaml last, so it marks a whole vault.
    for entry in sorted(staging.iterdir(), key=lambda entry: entry.name == SETTINGS_FILE):
        os.replace(entry, root / entry.name)
    staging.rmdir()
    synced.keep_private(root)  # before a sync tool sees `.brain/`, or its first writes
    return True


def enclosing_vault(root: Path) -> Path | None:
    """The vault that root would lie inside, if any."""
    for folder in root.resolve().parents:
        if (folder / SETTINGS_FILE).is_file():
            return folder
    return None


def _repository_without_commits(git_dir: Path) -> bool:
    """A .git folder (as `git init` or the clone of an empty repository leaves it) whose
    branches hold no commit yet."""
    if not git_dir.is_dir():
        return False
    heads = git_dir / "refs" / "heads"
    if heads.is_dir() and any(p.is_file() for p in heads.rglob("*")):
        return False
    packed = git_dir / "packed-refs"
    return not (packed.is_file() and "refs/heads/" in packed.read_text(encoding="utf-8"))


def stamp_notes(folder: Path, now: datetime) -> None:
    """Give every template note its own id and dates."""
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder).as_posix()
        note = notefile.parse(path.read_text(encoding="utf-8"), rel)
        stamped = note.with_meta(id=new_id(now), created=iso(now), touched=iso(now))
        meta = {"id": stamped.meta["id"], **{k: v for k, v in stamped.meta.items() if k != "id"}}
        atomic_write(path, notefile.render(stamped.__class__(meta=meta, body=note.body, path=rel)))
