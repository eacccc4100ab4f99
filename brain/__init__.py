"""brain: a local-first long-term memory for AI assistants and the person who uses them."""

# Imported under a private name (and no `from __future__` import, which binds `annotations`):
# the package's own namespace holds the public API and nothing else that looks like it.
import typing as _typing

if _typing.TYPE_CHECKING:
    from brain._brain import Brain, init_vault, open_vault
    from brain._clock import Clock, FixedClock, SystemClock
    from brain._doctor import DoctorReport
    from brain._errors import (
        BrainError,
        BrokenNote,
        InvalidInput,
        NotFound,
        VaultBusy,
        VaultMissing,
    )
    from brain._indexes.rows import ObjectRow
    from brain._model import (
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
    from brain._notes.relations import Links
    from brain._sources.conversations import ImportReport
    from brain._sources.documents import SyncReport
    from brain._upkeep.sleep import SleepReport

# The public API (docs/python-api.md); everything else in the package is internal.
_HOMES = {
    "Brain": "brain._brain",
    "open_vault": "brain._brain",
    "init_vault": "brain._brain",
    "Note": "brain._model",
    "Hit": "brain._model",
    "Relation": "brain._model",
    "Kind": "brain._model",
    "Status": "brain._model",
    "Visibility": "brain._model",
    "RecallOptions": "brain._model",
    "RememberOptions": "brain._model",
    "ListOptions": "brain._model",
    "ObjectRow": "brain._indexes.rows",
    "Links": "brain._notes.relations",
    "SyncReport": "brain._sources.documents",
    "ImportReport": "brain._sources.conversations",
    "SleepReport": "brain._upkeep.sleep",
    "DoctorReport": "brain._doctor",
    "Clock": "brain._clock",
    "SystemClock": "brain._clock",
    "FixedClock": "brain._clock",
    "BrainError": "brain._errors",
    "InvalidInput": "brain._errors",
    "NotFound": "brain._errors",
    "VaultMissing": "brain._errors",
    "VaultBusy": "brain._errors",
    "BrokenNote": "brain._errors",
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
