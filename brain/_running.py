"""What a long-lived server does with an opened vault beside its use cases: follow brain.yaml,
warm up, watch the files, and say its state."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from brain import _settings as settings_mod
from brain._context import Context
from brain._errors import BrainError
from brain._git.repo import autocommit_on
from brain._model import Steps
from brain._opening import models
from brain._upkeep import regenerate

if TYPE_CHECKING:
    from brain._sources.watching import Watcher


class Running:
    """The daemon's and `serve --http`'s hold on the vault behind a Brain (`Brain.running()`)."""

    def __init__(self, context: Context) -> None:
        self.context = context

    def follow_settings(self, fresh: settings_mod.Settings) -> None:
        """Take brain.yaml afresh as a new process would: its default partition (if this
        view worked in the old one), git on or off, and its models if they changed."""
        context = self.context
        old = context.settings
        if context.partition == old.default_partition:
            context.partition = fresh.default_partition
        context.settings = fresh
        context.changes.enabled = autocommit_on(fresh)
        if (fresh.embedder, fresh.sparse) != (old.embedder, old.sparse):
            embedder, sparse = models(fresh, "settings", "settings")
            context.embedder, context.sparse = embedder, sparse
            context.caches.use_models(embedder, sparse)

    def follow(self, other: Running) -> None:
        """A view takes the settings and models the vault it was taken from took since."""
        mine, theirs = self.context, other.context
        mine.settings, mine.embedder, mine.sparse = theirs.settings, theirs.embedder, theirs.sparse

    def look_every(self, seconds: float) -> None:
        """Look for hand edits at most this often (a watcher or the shared caches say the rest)."""
        self.context.catch_up_every = seconds

    def follow_git(self) -> None:
        """Catch up at once when git moved HEAD (a pull) since the caches last saw the files
        (the watcher would, after a quiet spell, but the request comes first), and rewrite what
        a merge kept from one side, as a new process does when it opens the vault."""
        regenerate.regenerate_after_merge(self.context)
        regenerate.catch_up_after_pull(self.context)

    def tell_steps(self, steps: Steps) -> None:
        """Tell `steps` how far each long job is (a build, an embedding)."""
        context = self.context
        context.steps = context.caches.steps = steps

    def embedding_model(self) -> tuple[str, bool]:
        """The embedder's name ("none" without one) and whether its model is loaded."""
        embedder = self.context.embedder
        if embedder is None:
            return "none", True
        return embedder.name, bool(getattr(embedder, "loaded", True))

    def warm(self, *, catch_up: bool = True) -> None:
        """Catch up with the files (unless a watcher will) and load the models now."""
        context = self.context
        if catch_up:
            context.catch_up(force=True)
        context.flush()
        if context.embedder is not None:
            context.embedder.embed(["warm up"])
        if context.sparse is not None and context.caches.sparse_on:
            context.sparse.encode(["warm up"])

    def hold_briefs(self) -> None:
        """Hold the catalog's briefs in memory, read on a thread of their own (indexes/held.py)."""
        self.context.caches.catalog.hold_briefs(apart=True)

    def vault_counts(self) -> dict[str, Any]:
        """Memories, the vector index, full walks made, briefs held: a server's status."""
        context = self.context
        caches = context.caches
        vectors = None
        if caches.vectors_on:
            with contextlib.suppress(BrainError):  # stale: reindexed at the next flush
                vectors = {"kind": caches.vectors.kind(), "size": len(caches.vectors)}
        held = caches.catalog.held()  # None: not yet (read after the first catch-up)
        return {
            "memories": caches.catalog.note_count(),
            "vectors": vectors,
            "walks": context.walks,
            "briefs_held": None if held is None else len(held.briefs),
        }

    def watcher(self, **options: Any) -> Watcher:
        """A Watcher of the connected folders and the vault (sources/watching.py)."""
        from brain._sources.watching import Watcher

        return Watcher(self.context, **options)

    def watched(self, on: bool) -> None:
        """This process's watcher follows the vault from now on, or stopped (Context.watched)."""
        self.context.watched(on)

    def session(self, *, read_only: bool = False) -> contextlib.AbstractContextManager[None]:
        """One unit of a server's work (a tool call) on the storage: in PostgreSQL one pooled
        connection and one transaction for all its statements, on a read replica if one
        serves and the work only reads (`read_only`); nothing for files."""
        session = getattr(self.context.storage, "session", None)
        return contextlib.nullcontext() if session is None else session(read_only=read_only)

    def alive(self) -> bool:
        """Whether the storage still reaches its database (always, for files)."""
        alive = getattr(self.context.storage, "alive", None)
        return True if alive is None else bool(alive())
