"""Brain: the façade the CLI, the MCP server and the daemon call; one short method per use case."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Unpack

from brain import _doctor as doctor
from brain import _partitions as partitions
from brain import _settings as settings_mod
from brain._clock import Clock, SystemClock
from brain._context import Context, Progress
from brain._doctor import DoctorReport, examine
from brain._errors import NotFound
from brain._git.autocommit import recorded, title_of
from brain._git.history import Entry
from brain._indexes.catalog import ObjectRow
from brain._indexes.embedder import Embedder
from brain._indexes.sparse import SparseEncoder
from brain._model import Hit, ListOptions, Note, RecallOptions, Relation, RememberOptions, Steps
from brain._notes import corrections, forgetting, levers, purging, reading, relations, writing
from brain._notes.purging import Purged
from brain._opening import Opening, models, open_context
from brain._partitions import Partition
from brain._recall import pipeline
from brain._running import Running
from brain._sessions import Gate
from brain._sources import conversations, documents
from brain._sources.connectors import Status
from brain._sources.consent import confirm_purge
from brain._sources.conversations import ImportReport
from brain._sources.documents import SyncReport
from brain._upkeep import dailylog, dictionaries, graph, sleep, splits, tiers, traces, versions
from brain._upkeep.sleep import SleepReport, sleep_summary
from brain._upkeep.splits import Suggestion
from brain._vault import template
from brain._vault.archive import check_recallable, check_writable

__all__ = ["Brain", "init_vault", "models", "open_vault"]


class Brain:
    """One vault's use cases, seen from one partition: each method hands the opened vault (a
    Context) to one use case; the interfaces reach nothing else.

    The vault opens when first used (`open_vault` opens it at once, `brain serve` after the
    handshake: opening.py). The methods that change files wear `recorded`: under git each is
    one commit.
    """

    def __init__(self, opening: Opening) -> None:
        self._opening = opening

    @classmethod
    def over(cls, context: Context) -> Brain:
        """The façade over a Context opened already (hosted/tenant.py opens one in PostgreSQL)."""
        return cls(Opening.of(context))

    @property
    def _context(self) -> Context:
        """The opened vault behind this Brain, opened now if it was not yet: for the layers
        below (git/autocommit.py's `recorded`) and tests, never for an interface."""
        return self._opening.context()

    # what it is --------------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The vault's folder (for PostgreSQL: a name under `/hosted`, never a real path)."""
        return self._opening.root

    @property
    def settings(self) -> settings_mod.Settings:
        """brain.yaml, as read when opened (or taken afresh since by a long-lived server)."""
        return self._opening.now().settings

    @property
    def clock(self) -> Clock:
        return self._opening.now().clock

    @property
    def partition(self) -> str:
        """The partition this Brain works in (`partition_use` changes it)."""
        return self._opening.now().partition

    @property
    def for_model(self) -> bool:
        """Opened for a model: the person's private and local-only notes do not exist for it."""
        return self._opening.now().for_model

    def at(
        self,
        partition: str | None = None,
        *,
        for_model: bool | None = None,
        defer_commits: bool | None = None,
    ) -> Brain:
        """The same vault seen from another partition or by a model (its caches, lock and
        models shared); a view of an unopened vault opens with it."""
        return Brain(self._opening.view(partition, for_model, defer_commits))

    def close(self) -> None:
        self._opening.close()

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def bulk(self) -> Iterator[None]:
        """Many writes in a row (imports, benchmarks): the lock taken once, files and caches
        made durable a batch at a time (see Context.bulk)."""
        with self._context.bulk():
            yield

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
        return writing.remember(self._context, text, source=source, **options)

    # A forgotten note's title stays out of git's history: the commit names the id only.
    @recorded(lambda gone, a: f"forget {a['note_id']} ({len(gone)} objects)")
    def forget(self, note_id: str, mode: str = "auto") -> list[str]:
        """Forget a note (see forgetting.py); returns the object ids removed from the caches.

        mode: `auto` (a plain note and its children; the current version of a corrected note
        is reverted to the previous one), `version` (that version only), `history` (all).
        """
        check_writable(self._context.store, self._context.row(note_id).partition)
        done, dropped = forgetting.forget(self._context, note_id, mode)
        with self._context.lock.hold():
            dailylog.strike(self._context, [r.id for r in done.remove])
            dictionaries.after_forget(self._context, [r.id for r in done.remove])
        return dropped

    def forget_plan(self, note_id: str, mode: str = "auto") -> forgetting.ForgetPlan:
        """What `forget` would remove, restore and relink, without changing anything."""
        self._context.catch_up()
        return forgetting.plan(self._context, note_id, mode)

    def forget_purge(self, note_id: str, mode: str = "auto") -> tuple[list[str], Purged]:
        """Forget, then purge the note from the vault's git history after asking the person
        at the terminal (see purging.py); never over MCP."""
        rows = self.forget_plan(note_id, mode).remove
        forget = lambda: self.forget(note_id, mode)  # noqa: E731 # one call, deferred
        return purging.purge(self._context, rows, forget, confirm_purge)

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
        return corrections.correct(self._context, note_id, text, source, title)

    def history(self, note_id: str) -> list[Note]:
        """Every version of a note, oldest first."""
        return corrections.history(self._context, note_id)

    @recorded(
        lambda _, a: (
            f"relate {a['src']} {a['kind']} {a['dst']}"
            + (f" (weight {a['weight']:g})" if a.get("weight") is not None else "")
        )
    )
    def relate(self, src: str, kind: str, dst: str, weight: float | None = None) -> Note:
        """Add a typed relation from one note to another (stored in the source's front-matter)."""
        return relations.relate(self._context, src, kind, dst, weight)

    @recorded(lambda _, a: f"unrelate {a['src']} {a['kind']} {a['dst']}")
    def unrelate(self, src: str, kind: str, dst: str) -> Note:
        """Remove a typed relation."""
        return relations.unrelate(self._context, src, kind, dst)

    def links(self, note_id: str) -> relations.Links:
        """A note's outgoing and incoming relations."""
        self._context.catch_up()
        return relations.links(self._context.caches.catalog, self._context.row(note_id).note_id)

    @recorded(lambda note, a: f"set {a['field']}={a['value']} on {title_of(note)}")
    def set_field(self, note_id: str, field: str, value: str) -> Note:
        """The person's levers: visibility, defining, eternal, status (see levers.py)."""
        return levers.set_field(self._context, note_id, field, value)

    @recorded(quiet=True)  # a touch rides along with the next commit
    def expand(self, note_id: str, *, touch: bool = True) -> Note:
        """The whole note, read for use: this counts as a touch (it keeps the note alive)."""
        return reading.expand(self._context, note_id, touch=touch)

    # recall --------------------------------------------------------------------
    def recall(self, query: str, **options: Unpack[RecallOptions]) -> list[Hit]:
        """The few objects that best answer the query, best first (see recall/pipeline.py).

        `scope`: `all` (the default), `auto` (the nodes whose index.json match), or one node.
        `explain`: each hit says why it came back (recall/explain.py).
        """
        hits = pipeline.recall(self._context, query, **options)
        if self._context.changed_under_model(hit.path for hit in hits):
            hits = pipeline.recall(self._context, query, **options)
        return hits

    # sources: connectors, transcripts, exports -----------------------------------
    @recorded(lambda report, a: f"connect {report.connector}")
    def connect(self, path: Path, name: str | None = None) -> SyncReport:
        """Ask the person at the terminal, then read the folder as document notes."""
        return documents.connect(self._context, path, name)

    def connectors(self) -> list[Status]:
        return documents.statuses(self._context)

    @recorded(lambda n, a: f"disconnect {a['name']} ({n} notes)")
    def disconnect(self, name: str, *, forget: bool = False) -> int:
        gone = [r.id for r in documents.to_forget(self._context, name)] if forget else []
        removed = documents.disconnect(self._context, name, forget=forget)
        with self._context.lock.hold():
            dailylog.strike(self._context, gone)
            dictionaries.after_forget(self._context, gone)
        return removed

    def disconnect_purge(self, name: str) -> tuple[int, Purged]:
        """`disconnect --forget`, then purge its documents from the git history (asked)."""
        rows = documents.to_forget(self._context, name)
        forget = lambda: self.disconnect(name, forget=True)  # noqa: E731 # one call, deferred
        return purging.purge(self._context, rows, forget, confirm_purge)

    @recorded(lambda reports, a: f"sync {', '.join(r.connector for r in reports) or 'nothing'}")
    def sync(self, names: Sequence[str] = ()) -> list[SyncReport]:
        return documents.sync(self._context, list(names))

    @recorded(lambda report, a: f"ingest {Path(a['path']).name}")
    def ingest(self, path: Path, data: bytes | None = None) -> ImportReport:
        """Store one transcript (seed JSON or Markdown chat; `data`: piped in) as a recall note."""
        found = [conversations.read_transcript(path, data)]
        return conversations.store_transcripts(self._context, found, "ingest")

    @recorded(lambda report, a: f"import a {a['platform']} export")
    def import_export(
        self, platform: str, path: Path, progress: Progress | None = None
    ) -> ImportReport:
        """Store every conversation of a ChatGPT or Claude export as a recall note."""
        found = conversations.read_export(platform, path)
        return conversations.store_transcripts(self._context, found, "import", progress)

    # upkeep --------------------------------------------------------------------
    def reindex(self, *, embed: bool = True, show_steps: bool = False) -> int:
        """Rebuild every cache from the files; the number of notes indexed. `embed`: the vectors
        too, now; `show_steps`: the walk's progress is told to `steps` as "indexing"."""
        context = self._context
        count = context.reindex(context.indexing_steps() if show_steps else None, embed=embed)
        dictionaries.finish_recorded(context)  # a pass a crash stopped
        return count

    def doctor(self) -> DoctorReport:
        """Look without touching: broken notes, files the caches don't know, stale caches."""
        return examine(self._context)

    def forgotten_check(self, note_id: str) -> traces.TraceReport:
        """Any trace of a forgotten note left anywhere under the vault (see traces.py)."""
        return traces.check(self._context.root, note_id)

    @recorded(lambda note, a: f"graph {note.path}")
    def write_graph(self) -> Note:
        """Regenerate `<partition>/Insights/Graph.md` from the relations."""
        return graph.write_graph(self._context)

    @recorded(lambda report, a: f"sleep — {sleep_summary(report)}")
    def sleep(
        self, *, dry_run: bool = False, waiting: Callable[[], None] | None = None
    ) -> SleepReport:
        """One pass of the sleep cycle at the clock's time (see sleep.py)."""
        return sleep.run(self._context, self._context.clock.now(), dry_run=dry_run, waiting=waiting)

    @recorded(lambda move, a: f"move {a['note_id']} to the {a['tier']} tier")
    def tier_move(self, note_id: str, tier: str) -> tiers.Move | None:
        """Move a note to the hot or cold tier, byte for byte; None if it is already there."""
        return tiers.move(self._context, note_id, tier)

    def tier_status(self) -> tiers.TierStatus:
        return tiers.status(self._context)

    @recorded(lambda dict_id, a: f"train cold-tier dictionary {dict_id}")
    def tier_retrain(self) -> int:
        """Train a new cold-tier dictionary; returns its id (old ones are kept)."""
        return tiers.retrain(self._context)

    @recorded(lambda result, a: f"split {a['node']}")
    def split(self, node: str, *, apply: bool = False) -> tuple[Suggestion, Sequence[tiers.Move]]:
        """The suggested split of a crowded node; `apply` moves the files (ids unchanged)."""
        return splits.split(self._context, node, apply=apply)

    # the vault under git ---------------------------------------------------------
    def git_log(self, note_id: str | None = None, limit: int = 20) -> Sequence[Entry]:
        """Recent commits, newest first: all, or one note's (found by id, across renames)."""
        return versions.log(self._context, note_id, limit)

    def git_undo(self) -> tuple[str, str]:
        """Revert brain's last commit; returns (the commit undone, the commit that undoes it)."""
        return versions.undo(self._context)

    # a model's session, under git ------------------------------------------------
    def commit(self) -> str | None:
        """Commit brain's pending changes now (a model's session commits at its close); the
        commit made, if any. Nothing to do while the vault is unopened."""
        return self._context.changes.commit() if self._opening.is_open else None

    @contextlib.contextmanager
    def operation(self, said: str) -> Iterator[None]:
        """What the calls inside change is one operation under git, named `said` unless a
        call names it; a model's session defers it to the session's commit."""
        context = self._context
        with context.changes.operation(defer=context.defer_commits) as op:
            op.said, op.fallback = said, True
            yield

    def gate(self, source: Mapping[str, Any] | None = None) -> Gate:
        """Today's session gate of this partition (sessions.py), for the caller `source` names."""
        return Gate(self._context, source)

    def shown_relations(self, note: Note) -> list[Relation]:
        """A note's relations whose targets this Brain may show (see Context.shown_relations)."""
        return self._context.shown_relations(note)

    def titles(self, ids: Sequence[str]) -> dict[str, str]:
        """The titles of these notes, by id (those it knows)."""
        rows = self._context.caches.catalog.get_many(sorted(set(ids)))
        return {oid: row.title for oid, row in rows.items()}

    def diagnostics(self) -> dict[str, Any]:
        """Health, as the MCP `diagnostics` tool says it (see doctor.py)."""
        return doctor.diagnostics(self._context)

    def usage(self) -> dict[str, Any]:
        """Counts of notes by kind and status in this partition, and their size."""
        return doctor.usage(self._context)

    # partitions ------------------------------------------------------------------
    def partitions(self) -> list[Partition]:
        return partitions.listing(self._context)

    def partition_create(self, name: str) -> Partition:
        return partitions.create(self._context, name)

    def partition_use(self, name: str, *, default: bool = False) -> Partition:
        """Work in another partition; `default`: for every command too (brain.yaml)."""
        context = self._context
        chosen = partitions.use(context, name)
        if default:
            with context.lock.hold():
                partitions.set_default(context, name)
        return chosen

    def partition_rename(self, name: str, new_name: str) -> Partition:
        return partitions.rename(self._context, name, new_name)

    def partition_archive(self, name: str) -> Partition:
        return partitions.archive(self._context, name)

    def partition_restore(self, name: str) -> Partition:
        return partitions.restore(self._context, name)

    def in_partition(self, name: str | None) -> Brain:
        """This Brain seen from partition `name` (which must exist); None: this one."""
        return self if name is None else self.at(partitions.existing(self._context, name))

    def check_recallable(self) -> None:
        """Raise unless this Brain's partition exists and is not archived."""
        context = self._context
        if context.partition not in context.store.partitions():
            raise NotFound(f"no partition {context.partition!r} in {context.root}")
        check_recallable(context.store, context.partition)

    def running(self) -> Running:
        """What a long-lived server (the daemon, `serve --http`) does with this vault beside
        its use cases: follow brain.yaml, warm up, watch, say its state (running.py)."""
        return Running(self._context)

    # Last: a method named `list` would shadow the builtin in the annotations below it.
    def list(self, **options: Unpack[ListOptions]) -> list[ObjectRow]:
        """Notes in this partition, newest first, optionally by node, status, kind or defining."""
        rows = reading.list_notes(self._context, **options)
        if self._context.changed_under_model(row.path for row in rows):
            rows = reading.list_notes(self._context, **options)
        return rows

    def count(self, **options: Unpack[ListOptions]) -> int:
        """How many notes `list` finds with these filters, whatever its limit."""
        return reading.count_notes(self._context, **options)


def open_vault(
    root: str | PathLike[str],
    *,
    clock: Clock | None = None,
    partition: str | None = None,
    embedder: Embedder | str | None = "settings",
    model_cache: str | PathLike[str] | None = None,
    sparse: SparseEncoder | str | None = "settings",
    steps: Steps | None = None,
    lazily: bool = False,
) -> Brain:
    """Open an existing vault (raises VaultMissing with the `brain init` hint).

    The embedder (and sparse encoder) are those brain.yaml names unless passed (None: none).
    `steps` is told how far a long job is (the first build of the caches, an embedding).
    `lazily`: the caches open (a build, a catch-up) on the first use, not now.
    """
    vault = Path(root)  # a str or any PathLike too
    loaded = settings_mod.load(vault)
    clock = clock or SystemClock()

    def opener() -> Context:
        return open_context(
            vault,
            clock=clock,
            partition=partition,
            embedder=embedder,
            model_cache=Path(model_cache) if model_cache is not None else None,
            sparse=sparse,
            steps=steps,
            loaded=loaded,
        )

    opening = Opening(opener, vault, loaded, clock, partition or loaded.default_partition)
    if not lazily:
        opening.context()
    return Brain(opening)


def init_vault(root: str | PathLike[str], *, clock: Clock | None = None) -> bool:
    """Create a vault at `root` from the template (as `brain init`); False, with nothing
    changed, when one is already there."""
    return template.init_vault(Path(root), (clock or SystemClock()).now())
