"""brain: a local-first long-term memory for AI assistants and the person who uses them."""

# Imported under a private name (and no `from __future__` import, which binds `annotations`):
# the package's own namespace holds the public API and nothing else that looks like it.
import typing as _typing

if _typing.TYPE_CHECKING:
    from brain.brain import Brain, init_vault, open_vault
    from brain.clock import Clock, FixedClock, SystemClock
    from brain.doctor import DoctorReport
    from brain.errors import BrainError, BrokenNote, InvalidInput, NotFound, VaultBusy, VaultMissing
    from brain.indexes.rows import ObjectRow
    from brain.model import (
        Hit,
        Kind,
        ListOptions,
        Note,
        RecallOptions,
        Relation,
        RememberOptions,
        Status,
        Visibility,
    )
    from brain.notes.relations import Links
    from brain.sources.conversations import ImportReport
    from brain.sources.documents import SyncReport
    from brain.upkeep.sleep import SleepReport

# The public API (docs/python-api.md); everything else in the package is internal.
_HOMES = {
    "Brain": "brain.brain",
    "open_vault": "brain.brain",
    "init_vault": "brain.brain",
    "Note": "brain.model",
    "Hit": "brain.model",
    "Relation": "brain.model",
    "Kind": "brain.model",
    "Status": "brain.model",
    "Visibility": "brain.model",
    "RecallOptions": "brain.model",
    "RememberOptions": "brain.model",
    "ListOptions": "brain.model",
    "ObjectRow": "brain.indexes.rows",
    "Links": "brain.notes.relations",
    "SyncReport": "brain.sources.documents",
    "ImportReport": "brain.sources.conversations",
    "SleepReport": "brain.upkeep.sleep",
    "DoctorReport": "brain.doctor",
    "Clock": "brain.clock",
    "SystemClock": "brain.clock",
    "FixedClock": "brain.clock",
    "BrainError": "brain.errors",
    "InvalidInput": "brain.errors",
    "NotFound": "brain.errors",
    "VaultMissing": "brain.errors",
    "VaultBusy": "brain.errors",
    "BrokenNote": "brain.errors",
}

__all__ = [
    "Brain",
    "BrainError",
    "BrokenNote",
    "Clock",
    "DoctorReport",
    "FixedClock",
    "Hit",
    "ImportReport",
    "InvalidInput",
    "Kind",
    "Links",
    "ListOptions",
    "NotFound",
    "Note",
    "ObjectRow",
    "RecallOptions",
    "Relation",
    "RememberOptions",
    "SleepReport",
    "Status",
    "SyncReport",
    "SystemClock",
    "VaultBusy",
    "VaultMissing",
    "Visibility",
    "init_vault",
    "open_vault",
]


def __getattr__(name: str) -> _typing.Any:
    # Loaded on first use, so `brain --help` does not pay for the whole core.
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'brain' has no attribute {name!r}")


def __dir__() -> list[str]:
    # dir(brain) and a REPL's completion offer the API, not the internal modules loaded so far.
    return sorted(__all__)
