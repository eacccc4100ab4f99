"""brain: a local-first long-term memory for AI assistants and the person who uses them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from brain.brain import Brain, open_vault
    from brain.errors import BrainError
    from brain.model import Hit, Note

__all__ = ["Brain", "BrainError", "Hit", "Note", "open_vault"]

_HOMES = {
    "Brain": "brain.brain",
    "open_vault": "brain.brain",
    "BrainError": "brain.errors",
    "Hit": "brain.model",
    "Note": "brain.model",
}


def __getattr__(name: str) -> Any:
    # Loaded on first use, so `brain --help` does not pay for the whole core.
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'brain' has no attribute {name!r}")
