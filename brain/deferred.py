"""A Brain opened on first use, so `brain serve` answers the handshake and `tools/list` before
any cache is opened (opening one can mean a reindex, a merge repair, or the daemon's start).

What the MCP tools need to be built (settings, clock, root, partition, and the model's view:
`for_model`, `defer_commits`) is known at once; anything else opens the vault, once. A view
taken before that (`at()`, as the MCP server takes its model view) stays deferred too, and
becomes the opened Brain's own view (`Context.at`) when it is first used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain.clock import Clock

if TYPE_CHECKING:
    from brain.brain import Brain
    from brain.settings import Settings

_OWN = ("root", "settings", "clock", "partition", "for_model", "defer_commits")


class DeferredBrain:
    """Stands in for a Brain (or a view of one) until something needs more than its settings."""

    _opener: Callable[[], Brain]
    _parent: DeferredBrain | None
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
        for_model: bool = False,
        defer_commits: bool = False,
        parent: DeferredBrain | None = None,
    ) -> None:
        state = {"root": root, "settings": settings, "clock": clock,
                 "partition": partition or settings.default_partition,
                 "for_model": for_model, "defer_commits": defer_commits}  # fmt: skip
        object.__setattr__(self, "_opener", opener)
        object.__setattr__(self, "_parent", parent)
        object.__setattr__(self, "_brain", None)
        object.__setattr__(self, "_own", state)
        object.__setattr__(self, "_pending", {})
        object.__setattr__(self, "_changes", _PendingChanges(self))

    @property
    def is_open(self) -> bool:
        return self._brain is not None

    def opened(self) -> Brain:
        """The real Brain (for a view, the opened Brain's view), opened now if it was not yet."""
        if self._brain is None:
            own = self._own
            if self._parent is None:
                brain = self._opener()
                brain.partition = own["partition"]
                brain.for_model, brain.defer_commits = own["for_model"], own["defer_commits"]
            else:
                brain = self._parent.opened().at(
                    own["partition"], for_model=own["for_model"], defer_commits=own["defer_commits"]
                )
            for name, value in self._pending.items():
                setattr(brain, name, value)
            object.__setattr__(self, "_brain", brain)
        assert self._brain is not None
        return self._brain

    def at(
        self,
        partition: str | None = None,
        *,
        for_model: bool | None = None,
        defer_commits: bool | None = None,
    ) -> Any:
        """The same vault seen from another partition or by a model (as `Context.at`), itself
        deferred while nothing is open."""
        if self._brain is not None:
            return self._brain.at(partition, for_model=for_model, defer_commits=defer_commits)
        own = self._own
        return DeferredBrain(
            self._opener,
            root=own["root"],
            settings=own["settings"],
            clock=own["clock"],
            partition=own["partition"] if partition is None else partition,
            for_model=own["for_model"] if for_model is None else for_model,
            defer_commits=own["defer_commits"] if defer_commits is None else defer_commits,
            parent=self,
        )

    def _root(self) -> DeferredBrain:
        return self if self._parent is None else self._parent._root()

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
            else:
                self._pending[name] = value
        else:
            setattr(self._brain, name, value)


class _PendingChanges:
    """`brain.changes` before the Brain opens: a session with no call has nothing to commit.

    The views of one Brain share its changes, so any of them opened means there may be some."""

    def __init__(self, owner: DeferredBrain) -> None:
        self._owner = owner

    def commit(self) -> None:
        root = self._owner._root()
        if root.is_open:
            root.opened().changes.commit()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.opened().changes, name)
