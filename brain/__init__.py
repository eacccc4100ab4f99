"""brain: a local-first long-term memory for AI assistants and the person who uses them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brain.errors import BrainError
from brain.model import Hit, Note

if TYPE_CHECKING:
    from brain.brain import Brain, open_vault

__all__ = ["Brain", "BrainError", "Hit", "Note", "open_vault"]


def __getattr__(name: str) -> Any:
    # The core (numpy, tantivy, SQLite) loads on first use, so a thin client that only talks
    # to the daemon starts in a blink.
    if name in ("Brain", "open_vault"):
        from brain import brain as core

        return getattr(core, name)
    raise AttributeError(f"module 'brain' has no attribute {name!r}")
