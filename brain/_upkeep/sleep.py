"""The sleep cycle: one idempotent upkeep pass, meant for cron every couple of hours.

Each step takes the writer lock only while it writes, so `brain serve` and `brain watch` keep
working beside it (their writes wait a moment; none is lost). Two sleeps never run at once: a
second one waits for the first (a lock of its own) and then finds nothing left to do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from brain._model import Status, iso
from brain._upkeep import dailylog, dictionaries, graph, lifecycle, splits, tiers, wikilinks
from brain._vault.journal import Event

if TYPE_CHECKING:
    from brain._context import Context


@dataclass
class SleepReport:
    """What one pass did (or, with `dry_run`, would do)."""

    now: str
    dry_run: bool
    caught_up: int = 0
    aged: list[lifecycle.Aging] = field(default_factory=list)
    moved: list[tiers.Move] = field(default_factory=list)
    splits: list[splits.Suggestion] = field(default_factory=list)
    logs: list[str] = field(default_factory=list)
    compacted: bool = False
    leftovers: list[str] = field(default_factory=list)  # temp files of killed writes, removed
    steps: list[tuple[str, str]] = field(default_factory=list)  # (step, what it did)

    @property
    def changed(self) -> bool:
        return bool(self.caught_up or self.aged or self.moved or self.logs)

    def to_json(self) -> dict[str, Any]:
        return {
            "now": self.now,
            "dry_run": self.dry_run,
            "caught_up": self.caught_up,
            "aged": [a.to_json() for a in self.aged],
            "moved": [m.to_json() for m in self.moved],
            "split_suggestions": [s.to_json() for s in self.splits],
            "logs": self.logs,
            "compacted": self.compacted,
            "leftovers": self.leftovers,
            "steps": [{"step": name, "result": what} for name, what in self.steps],
        }


Step = Callable[["Context", datetime, SleepReport], str]


def _catch_up(brain: Context, now: datetime, report: SleepReport) -> str:
    found = brain.catch_up(force=True)  # the full walk: also what the folders cannot show
    report.caught_up = len(found.changed) + len(found.removed)
    return f"{len(found.changed)} changed, {len(found.removed)} removed, {len(found.broken)} broken"


def _lifecycle(brain: Context, now: datetime, report: SleepReport) -> str:
    report.aged = lifecycle.sweep(brain, now, dry_run=report.dry_run)
    dormant = sum(1 for a in report.aged if a.after == Status.DORMANT)
    return f"{dormant} to dormant, {len(report.aged) - dormant} to archived"


def _cold_tier(brain: Context, now: datetime, report: SleepReport) -> str:
    if not report.dry_run:
        with brain.lock.hold():
            dictionaries.finish(brain)  # a pass a crash stopped, even with the tier off now
    if not brain.settings.cold_tier:
        return "off (tiers.cold in brain.yaml)"
    report.moved = tiers.cool(brain, now, dry_run=report.dry_run)
    return f"{len(report.moved)} moved to cold"


def _split_suggestions(brain: Context, now: datetime, report: SleepReport) -> str:
    report.splits = splits.suggestions(brain)
    return f"{len(report.splits)} node(s) worth splitting"


def _node_indexes(brain: Context, now: datetime, report: SleepReport) -> str:
    if report.dry_run:
        return "skipped (dry run)"
    from brain._upkeep.regenerate import rebuild_node_indexes

    settled = rebuild_node_indexes(brain)
    return f"{len(settled.written)} written, {len(settled.removed)} removed"


def _graph(brain: Context, now: datetime, report: SleepReport) -> str:
    if report.dry_run:
        return "skipped (dry run)"
    drawn = []
    for name in brain.store.partitions():
        if not dailylog.sleeps_in(brain, name):
            continue
        at = f"{name}/{graph.GRAPH_NODE}/{graph.GRAPH_FILE}"
        if not brain.store.exists(at) and not brain.caches.catalog.visible_notes(name):
            continue  # a folder of no notes (an editor's attachments or drawings): left alone
        graph.write_graph(brain.at(name))  # the partition's own view draws its graph
        drawn.append(name)
    relinked = wikilinks.refresh(brain)  # relations' wikilinks whose targets moved
    return f"regenerated for {', '.join(drawn) or 'no partition'}; {relinked} notes relinked"


def _daily_log(brain: Context, now: datetime, report: SleepReport) -> str:
    pending = []
    if report.dry_run:
        # Nothing was journaled: tell the log what the pass would have done.
        changes = [("aged", a.id, f"{a.before} → {a.after}") for a in report.aged]
        changes += [("moved", m.id, "hot → cold") for m in report.moved]
        for kind, note_id, detail in changes:
            row = brain.caches.catalog.get(note_id)
            if row is not None:
                pending.append(
                    Event(iso(now), kind, note_id, row.title, row.partition, row.visibility, detail)
                )
    else:
        brain.journal.trim(now)
    report.logs = dailylog.regenerate(
        brain, now, report.splits, dry_run=report.dry_run, pending=pending
    )
    return f"{len(report.logs)} regenerated" if report.logs else "up to date"


def _leftovers(brain: Context, now: datetime, report: SleepReport) -> str:
    from brain._vault import leftovers

    # Under the lock no brain write is in flight; the age rule also spares anyone else's.
    if not brain.capabilities.folder:
        return "none: the store is not a folder"
    with brain.lock.hold():
        report.leftovers = leftovers.find(brain.root, now.timestamp())
        if report.dry_run:
            return f"{len(report.leftovers)} temp file(s) of killed writes to remove"
        gone = leftovers.remove(brain.root, report.leftovers)
    return f"{gone} temp file(s) of killed writes removed"


def _compaction(brain: Context, now: datetime, report: SleepReport) -> str:
    if report.dry_run:
        return "skipped (dry run)"
    with brain.lock.hold():
        brain.caches.compact()
    report.compacted = True
    return "full text rewritten if needed, catalog vacuumed"


def _vectors(brain: Context, now: datetime, report: SleepReport) -> str:
    """Move the vectors to the index their number calls for (exact, or IVF above a size)."""
    if report.dry_run or not brain.caches.vectors_on:
        return "skipped"
    index = brain.caches.vectors
    with brain.lock.hold():
        brain.caches.flush_vectors()
        plan = index.begin_rebuild()
    if plan is not None:
        # Built without the writer lock (a minute or two at 1M): other processes remember,
        # forget and recall meanwhile; what they changed is replayed as it is swapped in.
        built = plan.build()
        with brain.lock.hold():
            brain.caches.flush_vectors()
            index.finish_rebuild(plan, built)
            index.save()
    return f"{index.kind()}, {len(index)} vectors" + (" (rebuilt)" if plan else "")


# The pass, in order.
STEPS: list[tuple[str, Step]] = [
    ("catch up", _catch_up),
    ("lifecycle", _lifecycle),
    ("cold tier", _cold_tier),
    # Settle deletions into index.json files, recompute keywords, entities and summaries,
    # drop the indexes of nodes that fell under the threshold.
    ("index.json", _node_indexes),
    ("split suggestions", _split_suggestions),
    ("graph", _graph),
    ("daily log", _daily_log),
    ("leftovers", _leftovers),
    ("compaction", _compaction),
    ("vectors", _vectors),
]


def run(
    brain: Context,
    now: datetime,
    *,
    dry_run: bool = False,
    waiting: Callable[[], None] | None = None,
) -> SleepReport:
    """One pass of every step; `waiting` is called if another sleep holds the vault first."""
    report = SleepReport(now=iso(now), dry_run=dry_run)
    with sleep_lock(brain, waiting):
        for name, step in STEPS:
            report.steps.append((name, step(brain, now, report)))
    return report


def sleep_lock(
    brain: Context, waiting: Callable[[], None] | None = None
) -> contextlib.AbstractContextManager[None]:
    """Only one sleep per vault: a second one says it is waiting, then waits its turn."""
    return brain.lock.turn("sleep", waiting)


def sleep_summary(report: Any) -> str:
    """`3 dormant, 1 archived, 2 moved, 1 log` from a SleepReport."""
    counts: dict[str, int] = {}
    for aging in report.aged:
        counts[aging.after] = counts.get(aging.after, 0) + 1
    parts = [f"{n} {state}" for state, n in sorted(counts.items())]
    if report.moved:
        parts.append(f"{len(report.moved)} moved between tiers")
    if report.logs:
        parts.append(f"{len(report.logs)} daily log(s)")
    return ", ".join(parts) or "settled"
