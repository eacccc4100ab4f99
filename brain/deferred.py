"""A Brain opened on first use, so `brain serve` answers the handshake and `tools/list` before
any cache is opened (opening one can mean a reindex, a merge repair, or the daemon's start).

What the MCP tools need to be built (settings, clock, root, partition) is known at once;
anything else opens the vault, once. Flags set before that (`for_model`, `changes.defer`) are
applied to the Brain when it opens.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain.clock import Clock

if TYPE_CHECKING:
    from brain.brain import Brain
    from brain.settings import Settings

_OWN = ("root", "settings", "clock", "partition")


class DeferredBrain:
    """Stands in for a Brain until something needs more than its settings."""

    _opener: Callable[[], Brain]
    _brain: Brain | None
    _own: dict[str, Any]
    _pending: dict[str, Any]
    _changes: _PendingChanges

    def __init__(
        self,
        opener: Callable[[], Brain],
        *,
        root: Path,
        settings: Settings,
        clock: Clock,
        partition: str,
    ) -> None:
        state = {"root": root, "settings": settings, "clock": clock,
                 "partition": partition or settings.default_partition}  # fmt: skip
        object.__setattr__(self, "_opener", opener)
        object.__setattr__(self, "_brain", None)
        object.__setattr__(self, "_own", state)
        object.__setattr__(self, "_pending", {})
        object.__setattr__(self, "_changes", _PendingChanges(self))

    @property
    def is_open(self) -> bool:
        return self._brain is not None

    def opened(self) -> Brain:
        """The real Brain, opened now if it was not yet."""
        if self._brain is None:
            brain = self._opener()
            for name, value in self._pending.items():
                setattr(brain, name, value)
            brain.changes.defer = brain.changes.defer or self._changes.defer
            object.__setattr__(self, "_brain", brain)
        assert self._brain is not None
        return self._brain

    def close(self) -> None:
        if self._brain is not None:
            self._brain.close()

    def __getattr__(self, name: str) -> Any:
        # Only called for what the instance does not hold itself.
        if self._brain is None:
            if name in _OWN:
                return self._own[name]
            if name == "changes":
                return self._changes
        return getattr(self.opened(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if self._brain is None:
            if name in _OWN:
                self._own[name] = value
            self._pending[name] = value
        else:
            setattr(self._brain, name, value)


class _PendingChanges:
    """`brain.changes` before the Brain opens: a session with no call has nothing to commit."""

    def __init__(self, owner: DeferredBrain) -> None:
        self._owner = owner
        self.defer = False

    def commit(self) -> None:
        if self._owner.is_open:
            self._owner.opened().changes.commit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.opened().changes, name)
