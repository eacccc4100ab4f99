"""Opening a vault's Context, at once or on first use: models loaded, partition checked."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from brain import _settings as settings_mod
from brain._clock import Clock, SystemClock
from brain._context import Context
from brain._errors import NotFound
from brain._git.repo import ensure_drivers
from brain._indexes.embedder import Embedder, load_embedder
from brain._indexes.sparse import SparseEncoder, load_sparse
from brain._model import Steps
from brain._upkeep import regenerate
from brain._vault import synced
from brain._vault.paths import check_segment


def models(
    loaded: settings_mod.Settings,
    embedder: Embedder | str | None,
    sparse: SparseEncoder | str | None,
    model_cache: Path | None = None,
) -> tuple[Embedder | None, SparseEncoder | None]:
    """The embedder and sparse encoder to open a vault with: those passed, or (for a string)
    those its brain.yaml names, loaded from the model cache."""
    cache = model_cache or settings_mod.model_cache_dir(os.environ, Path.home())
    if isinstance(embedder, str):
        embedder = load_embedder(loaded.embedder, cache)
    if isinstance(sparse, str):
        sparse = load_sparse(loaded.sparse, cache)
    return embedder, sparse


def open_context(
    root: Path,
    *,
    clock: Clock | None = None,
    partition: str | None = None,
    embedder: Embedder | str | None = "settings",
    model_cache: Path | None = None,
    sparse: SparseEncoder | str | None = "settings",
    steps: Steps | None = None,
    loaded: settings_mod.Settings | None = None,
) -> Context:
    """The vault's files and caches opened (see brain.open_vault for the arguments)."""
    loaded = loaded or settings_mod.load(root)
    embedder, sparse = models(loaded, embedder, sparse, model_cache)
    context = Context(
        root=root,
        settings=loaded,
        clock=clock or SystemClock(),
        partition=partition or "",
        embedder=embedder,
        sparse=sparse,
        steps=steps,
    )
    if context.partition not in context.store.partitions():
        check_segment(context.partition, "partition")
        raise NotFound(
            f"no partition {context.partition!r} in {root}",
            f"partitions: {', '.join(context.store.partitions()) or 'none'}",
        )
    ensure_drivers(root)  # a clone made without `brain git enable` merges like the others
    synced.keep_private(root)  # a file-sync tool copies the vault, but not its caches
    regenerate.regenerate_after_merge(context)  # a merge kept one side of the derived files
    regenerate.catch_up_after_pull(context)  # git changed the files since the caches saw them
    regenerate.catch_up_after_restore(context)  # an older backup's caches, forgets since
    regenerate.refresh_git_layout(context)  # git enabled by an older brain: today's lines, once
    return context


@dataclass
class Opening:
    """A vault's Context, opened once when first needed, or a view of one (another partition,
    a model's): what is known before it opens is enough to build the MCP tools, so `brain
    serve` answers its host before any cache is opened (a build, a catch-up, the daemon)."""

    opener: Callable[[], Context]
    root: Path
    settings: settings_mod.Settings
    clock: Clock
    partition: str
    for_model: bool = False
    defer_commits: bool = False
    parent: Opening | None = None  # a view taken before the vault opened opens from it
    opened: Context | None = None

    @classmethod
    def of(cls, context: Context) -> Opening:
        """A Context opened already."""
        return cls(
            lambda: context,
            context.root,
            context.settings,
            context.clock,
            context.partition,
            context.for_model,
            context.defer_commits,
            opened=context,
        )

    def context(self) -> Context:
        """The Context, opened now if it was not yet (a view: its parent's, seen as asked)."""
        if self.opened is None:
            if self.parent is None:
                context = self.opener()
                context.partition = self.partition
                context.for_model, context.defer_commits = self.for_model, self.defer_commits
            else:
                context = self.parent.context().at(
                    self.partition, for_model=self.for_model, defer_commits=self.defer_commits
                )
            self.opened = context
        return self.opened

    def now(self) -> Context | Opening:
        """Where the settings, clock, partition and mode are read: the Context once open."""
        return self if self.opened is None else self.opened

    @property
    def is_open(self) -> bool:
        """Whether this vault (or the one it is a view of) has opened."""
        return self.opened is not None or (self.parent is not None and self.parent.is_open)

    def view(
        self, partition: str | None, for_model: bool | None, defer_commits: bool | None
    ) -> Opening:
        """The same vault seen from another partition or by a model (None: as seen here)."""
        if self.opened is not None:
            return Opening.of(
                self.opened.at(partition, for_model=for_model, defer_commits=defer_commits)
            )
        return Opening(
            self.opener,
            self.root,
            self.settings,
            self.clock,
            self.partition if partition is None else partition,
            self.for_model if for_model is None else for_model,
            self.defer_commits if defer_commits is None else defer_commits,
            parent=self,
        )

    def close(self) -> None:
        if self.opened is not None:
            self.opened.close()
