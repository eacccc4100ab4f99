"""Archived partitions: a marker file makes one read-only and out of recall."""

from __future__ import annotations

from typing import Protocol

from brain._errors import InvalidInput, NotFound

ARCHIVED_MARK = ".archived"


class Folders(Protocol):
    """What the checks ask of a vault's store (files on disk, or rows in a database)."""

    def exists(self, rel: str) -> bool: ...
    def is_folder(self, rel: str) -> bool: ...


def is_archived(root: Folders, name: str) -> bool:
    return root.exists(f"{name}/{ARCHIVED_MARK}")


def check_present(root: Folders, name: str) -> None:
    """A partition renamed or removed by another process is not silently made again."""
    if not root.is_folder(name):
        raise NotFound(
            f"partition {name!r} no longer exists (renamed or removed by another process?)",
            "choose one with partition_use, or `brain partition list`",
        )


def check_writable(root: Folders, name: str) -> None:
    """Refuse to change anything in an archived (or vanished) partition."""
    check_present(root, name)
    if is_archived(root, name):
        raise InvalidInput(
            f"partition {name!r} is archived (read-only)",
            f"restore it first: `brain partition restore {name}`",
        )


def check_recallable(root: Folders, name: str) -> None:
    check_present(root, name)
    if is_archived(root, name):
        raise InvalidInput(
            f"partition {name!r} is archived and out of recall",
            f"restore it first: `brain partition restore {name}`",
        )
