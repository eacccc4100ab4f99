"""Brain: the façade the CLI, the MCP server and the daemon call; one short method per use case."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Unpack

from brain import settings as settings_mod
from brain.clock import Clock, SystemClock
from brain.context import Context, Progress
from brain.doctor import DoctorReport, examine
from brain.errors import NotFound
from brain.git.autocommit import recorded, title_of
from brain.git.history import Entry
from brain.indexes.catalog import ObjectRow
from brain.indexes.embedder import Embedder, load_embedder
from brain.indexes.sparse import SparseEncoder, load_sparse
from brain.model import Hit, ListOptions, Note, RecallOptions, RememberOptions, Steps
from brain.notes import corrections, forgetting, levers, purging, reading, relations, writing
from brain.notes.purging import Purged
from brain.recall import pipeline
from brain.sources import conversations, documents
from brain.sources.connectors import Status
from brain.sources.consent import confirm_purge
from brain.sources.conversations import ImportReport
from brain.sources.documents import SyncReport
from brain.upkeep import dailylog, graph, regenerate, sleep, splits, tiers, traces, versions
from brain.upkeep.sleep import SleepReport, sleep_summary
from brain.upkeep.splits import Suggestion
from brain.vault.archive import check_writable
from brain.vault.paths import check_segment

__all__ = ["Brain", "models", "open_vault"]


class Brain(Context):
    """The opened vault with its use cases: each method hands the Context to one use case.

    The methods that change files wear `recorded`: under git each is one commit.
    """

    # notes ---------------------------------------------------------------------
    def remember(
        self, text: str, *, source: dict[str, Any] | None = None, **options: Unpack[RememberOptions]
    ) -> Note:
        """Store a memory; what happens depends on the note kind (see notes/writing.py)."""
        return self.remembered(text, source=source, **options).note

    @recorded(lambda written, a: f"remember {title_of(written.note)}")
    def remembered(
        self, text: str, *, source: dict[str, Any] | None = None, **options: Unpack[RememberOptions]
    ) -> writing.Written:
        """`remember`, saying what the write did: created, appended, replaced or unchanged."""
        return writing.remember(self, text, source=source, **options)

    # A forgotten note's title stays out of git's history: the commit names the id only.
    @recorded(lambda gone, a: f"forget {a['note_id']} ({len(gone)} objects)")
    def forget(self, note_id: str, mode: str = "auto") -> list[str]:
        """Forget a note (see forgetting.py); returns the object ids removed from the caches.

        mode: `auto` (a plain note and its children; the current version of a corrected note
        is reverted to the previous one), `version` (that version only), `history` (all).
        """
        check_writable(self.store, self.row(note_id).partition)
        done, dropped = forgetting.forget(self, note_id, mode)
        with self.lock.hold():
            dailylog.strike(self, [r.id for r in done.remove])
        return dropped

    def forget_plan(self, note_id: str, mode: str = "auto") -> forgetting.ForgetPlan:
        """What `forget` would remove, restore and relink, without changing anything."""
        self.catch_up()
        return forgetting.plan(self, note_id, mode)

    def forget_purge(self, note_id: str, mode: str = "auto") -> tuple[list[str], Purged]:
        """Forget, then purge the note from the vault's git history after asking the person
        at the terminal (see purging.py); never over MCP."""
        rows = self.forget_plan(note_id, mode).remove
        return purging.purge(self, rows, lambda: self.forget(note_id, mode), confirm_purge)

    @recorded(lambda note, a: f"correct {title_of(note)}, superseding {a['note_id']}")
    def correct(
        self,
        note_id: str,
        text: str,
        *,
        source: dict[str, Any] | None = None,
        title: str | None = None,
    ) -> Note:
        """A new version of a note that supersedes it (under its title, unless given one);
        the old one is kept as history."""
        return corrections.correct(self, note_id, text, source, title)

    def history(self, note_id: str) -> list[Note]:
        """Every version of a note, oldest first."""
        return corrections.history(self, note_id)

    @recorded(lambda _, a: f"relate {a['src']} {a['kind']} {a['dst']}")
    def relate(self, src: str, kind: str, dst: str, weight: float | None = None) -> Note:
        """Add a typed relation from one note to another (stored in the source's front-matter)."""
        return relations.relate(self, src, kind, dst, weight)

    @recorded(lambda _, a: f"unrelate {a['src']} {a['kind']} {a['dst']}")
    def unrelate(self, src: str, kind: str, dst: str) -> Note:
        """Remove a typed relation."""
        return relations.unrelate(self, src, kind, dst)

    def links(self, note_id: str) -> relations.Links:
        """A note's outgoing and incoming relations."""
        self.catch_up()
        return relations.links(self.caches.catalog, self.row(note_id).note_id)

    @recorded(lambda note, a: f"set {a['field']}={a['value']} on {title_of(note)}")
    def set_field(self, note_id: str, field: str, value: str) -> Note:
        """The person's levers: visibility, defining, eternal, status (see levers.py)."""
        return levers.set_field(self, note_id, field, value)

    @recorded(quiet=True)  # a touch rides along with the next commit
    def expand(self, note_id: str, *, touch: bool = True) -> Note:
        """The whole note, read for use: this counts as a touch (it keeps the note alive)."""
        return reading.expand(self, note_id, touch=touch)

    # recall --------------------------------------------------------------------
    def recall(self, query: str, **options: Unpack[RecallOptions]) -> list[Hit]:
        """The few objects that best answer the query, best first (see recall/pipeline.py).

        `scope`: `all` (the default), `auto` (the nodes whose index.json match), or one node.
        `explain`: each hit says why it came back (recall/explain.py).
        """
        hits = pipeline.recall(self, query, **options)
        if self.changed_under_model(hit.path for hit in hits):
            hits = pipeline.recall(self, query, **options)
        return hits

    # sources: connectors, transcripts, exports -----------------------------------
    @recorded(lambda report, a: f"connect {report.connector}")
    def connect(self, path: Path, name: str | None = None) -> SyncReport:
        """Ask the person at the terminal, then read the folder as document notes."""
        return documents.connect(self, path, name)

    def connectors(self) -> list[Status]:
        return documents.statuses(self)

    @recorded(lambda n, a: f"disconnect {a['name']} ({n} notes)")
    def disconnect(self, name: str, *, forget: bool = False) -> int:
        gone = [r.id for r in documents.to_forget(self, name)] if forget else []
        removed = documents.disconnect(self, name, forget=forget)
        with self.lock.hold():
            dailylog.strike(self, gone)
        return removed

    def disconnect_purge(self, name: str) -> tuple[int, Purged]:
        """`disconnect --forget`, then purge its documents from the git history (asked)."""
        rows = documents.to_forget(self, name)
        forget = lambda: self.disconnect(name, forget=True)  # noqa: E731 # one call, deferred
        return purging.purge(self, rows, forget, confirm_purge)

    @recorded(lambda reports, a: f"sync {', '.join(r.connector for r in reports) or 'nothing'}")
    def sync(self, names: Sequence[str] = ()) -> list[SyncReport]:
        return documents.sync(self, list(names))

    @recorded(lambda report, a: f"ingest {Path(a['path']).name}")
    def ingest(self, path: Path) -> ImportReport:
        """Store one transcript file (seed JSON or Markdown chat) as a recall note."""
        found = [conversations.read_transcript(path)]
        return conversations.store_transcripts(self, found, "ingest")

    @recorded(lambda report, a: f"import a {a['platform']} export")
    def import_export(
        self, platform: str, path: Path, progress: Progress | None = None
    ) -> ImportReport:
        """Store every conversation of a ChatGPT or Claude export as a recall note."""
        found = conversations.read_export(platform, path)
        return conversations.store_transcripts(self, found, "import", progress)

    # upkeep --------------------------------------------------------------------
    def doctor(self) -> DoctorReport:
        """Look without touching: broken notes, files the caches don't know, stale caches."""
        return examine(self)

    def forgotten_check(self, note_id: str) -> traces.TraceReport:
        """Any trace of a forgotten note left anywhere under the vault (see traces.py)."""
        return traces.check(self.root, note_id)

    @recorded(lambda note, a: f"graph {note.path}")
    def write_graph(self) -> Note:
        """Regenerate `<partition>/Insights/Graph.md` from the relations."""
        return graph.write_graph(self)

    @recorded(lambda report, a: f"sleep — {sleep_summary(report)}")
    def sleep(
        self, *, dry_run: bool = False, waiting: Callable[[], None] | None = None
    ) -> SleepReport:
        """One pass of the sleep cycle at the clock's time (see sleep.py)."""
        return sleep.run(self, self.clock.now(), dry_run=dry_run, waiting=waiting)

    @recorded(lambda move, a: f"move {a['note_id']} to the {a['tier']} tier")
    def tier_move(self, note_id: str, tier: str) -> tiers.Move | None:
        """Move a note to the hot or cold tier, byte for byte; None if it is already there."""
        return tiers.move(self, note_id, tier)

    def tier_status(self) -> tiers.TierStatus:
        return tiers.status(self)

    @recorded(lambda dict_id, a: f"train cold-tier dictionary {dict_id}")
    def tier_retrain(self) -> int:
        """Train a new cold-tier dictionary; returns its id (old ones are kept)."""
        return tiers.retrain(self)

    @recorded(lambda result, a: f"split {a['node']}")
    def split(self, node: str, *, apply: bool = False) -> tuple[Suggestion, Sequence[tiers.Move]]:
        """The suggested split of a crowded node; `apply` moves the files (ids unchanged)."""
        return splits.split(self, node, apply=apply)

    # the vault under git ---------------------------------------------------------
    def git_log(self, note_id: str | None = None, limit: int = 20) -> Sequence[Entry]:
        """Recent commits, newest first: all, or one note's (found by id, across renames)."""
        return versions.log(self, note_id, limit)

    def git_undo(self) -> tuple[str, str]:
        """Revert brain's last commit; returns (the commit undone, the commit that undoes it)."""
        return versions.undo(self)

    # Last: a method named `list` would shadow the builtin in the annotations below it.
    def list(self, **options: Unpack[ListOptions]) -> list[ObjectRow]:
        """Notes in this partition, newest first, optionally by node, status, kind or defining."""
        rows = reading.list_notes(self, **options)
        if self.changed_under_model(row.path for row in rows):
            rows = reading.list_notes(self, **options)
        return rows

    def count(self, **options: Unpack[ListOptions]) -> int:
        """How many notes `list` finds with these filters, whatever its limit."""
        return reading.count_notes(self, **options)


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


def open_vault(
    root: Path,
    *,
    clock: Clock | None = None,
    partition: str | None = None,
    embedder: Embedder | str | None = "settings",
    model_cache: Path | None = None,
    sparse: SparseEncoder | str | None = "settings",
    steps: Steps | None = None,
) -> Brain:
    """Open an existing vault (raises VaultMissing with the `brain init` hint).

    The embedder (and sparse encoder) are those brain.yaml names unless passed (None: none).
    `steps` is told how far a long job is (the first build of the caches, an embedding).
    """
    loaded = settings_mod.load(root)
    embedder, sparse = models(loaded, embedder, sparse, model_cache)
    brain = Brain(
        root=root,
        settings=loaded,
        clock=clock or SystemClock(),
        partition=partition or "",
        embedder=embedder,
        sparse=sparse,
        steps=steps,
    )
    if brain.partition not in brain.store.partitions():
        check_segment(brain.partition, "partition")
        raise NotFound(
            f"no partition {brain.partition!r} in {root}",
            f"partitions: {', '.join(brain.store.partitions()) or 'none'}",
        )
    regenerate.regenerate_after_merge(brain)  # a merge kept one side of the derived files
    return brain
