"""brain: a local-first long-term memory for AI assistants and the person who uses them."""

from brain.brain import Brain, open_vault
from brain.errors import BrainError
from brain.model import Hit, Note

__all__ = ["Brain", "BrainError", "Hit", "Note", "open_vault"]
