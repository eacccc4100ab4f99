"""Archived partitions: a marker file makes one read-only and out of recall."""

from __future__ import annotations

from pathlib import Path

from brain.errors import InvalidInput, NotFound

ARCHIVED_MARK = ".archived"


def is_archived(root: Path, name: str) -> bool:
    return (root / name / ARCHIVED_MARK).is_file()


def check_present(root: Path, name: str) -> None:
    """A partition renamed or removed by another process is not silently made again."""
    if not (root / name).is_dir():
        raise NotFound(
            f"partition {name!r} no longer exists (renamed or removed by another process?)",
            "choose one with partition_use, or `brain partition list`",
        )


def check_writable(root: Path, name: str) -> None:
    """Refuse to change anything in an archived (or vanished) partition."""
    check_present(root, name)
    if is_archived(root, name):
        raise InvalidInput(
            f"partition {name!r} is archived (read-only)",
            f"restore it first: `brain partition restore {name}`",
        )


def check_recallable(root: Path, name: str) -> None:
    check_present(root, name)
    if is_archived(root, name):
        raise InvalidInput(
            f"partition {name!r} is archived and out of recall",
            f"restore it first: `brain partition restore {name}`",
        )
