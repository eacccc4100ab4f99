"""The models brain ships in brain/_models: where they lie, each file checked by its sha256."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from brain._errors import BrainError
from brain._indexes.pins import PINS

MODELS = Path(__file__).resolve().parents[1] / "_models"
REINSTALL = "reinstall brain (pip install --force-reinstall brain-memory, or from its clone)"


def folder(model: str, root: Path = MODELS) -> Path:
    """`root/model`, once every file pinned for it has its pinned sha256; else a BrainError
    naming the file. A model's files are hashed once a process (~0.1 s for MiniLM's 45 MB)."""
    where = root / model
    for name, want in PINS[model].items():
        path = where / name
        try:
            stat = path.stat()
            got = _digest(path, stat.st_size, stat.st_mtime_ns)
        except OSError as exc:
            raise BrainError(
                f"the {model} model file {path} cannot be read ({exc.strerror or exc})", REINSTALL
            ) from None
        if got != want:
            raise BrainError(
                f"the {model} model file {path} has sha256 {got[:16]}…, not the pinned "
                f"{want[:16]}…: it was altered or damaged",
                REINSTALL,
            )
    return where


@lru_cache(maxsize=64)
def _digest(path: Path, size: int, mtime_ns: int) -> str:
    # Keyed by size and mtime too: a file changed on disk is hashed again.
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
