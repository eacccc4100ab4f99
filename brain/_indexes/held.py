"""The catalog's briefs held in memory by a long-lived process, kept exact by its change log.

A recall at 100k memories reads ~300 briefs (status, visibility, kind: what its filters look at)
and ~40 neighbourhoods (the memories written just before and after one); from SQLite that was
~1 ms of a recall's thread, through the GIL. `Catalog.hold_briefs()` keeps them all here
instead. Triggers on the catalog's `objects` table log every changed id, whoever writes, so
before each use the copy reads what changed since it was made (docs/lab/latency.md, "the
catalog mapped and held in memory").
"""

from __future__ import annotations

import bisect
import sqlite3
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._indexes.queries import BRIEF_COLUMNS, Queries, shows
from brain._indexes.rows import Brief

if TYPE_CHECKING:
    from brain._indexes.fulltext import Filters

# The held briefs catch up change by change up to this many changes; past it (a bulk import by
# another process, a reindex) they are read whole again.
CATCH_UP_MOST = 20_000
READ_TIMEOUT = 60.0  # seconds the whole read waits for another process's lock


class Holding(Queries, ABC):
    """The catalog's reads, and its briefs held in memory once `hold_briefs` is called."""

    path: Path
    _hold = False  # hold_briefs() was called
    _held: Held | None = None
    _reading: threading.Thread | None = None  # hold_briefs(apart=True) reads them there
    _read_there: Held | None = None

    def hold_briefs(self, *, apart: bool = False) -> None:
        """Keep every object's brief in memory from now on, and the order they were written
        in, for a long-lived process (the daemon): a recall at 100k memories reads ~300 briefs
        and ~40 neighbourhoods, ~1 ms of it from SQLite. They are read whole at the first use
        (~0.3 s and ~35 MB at 100k, ~3.7 s at 1M); each later `held()` first reads what the
        change log says changed since, by this process or any other. `apart`: read whole
        now, on a thread of its own through a connection of its own, while recalls read the
        catalog (a daemon's answers do not wait for it)."""
        self._hold = True
        if apart:
            self._reading = threading.Thread(target=self._read_apart, name="brain-held")
            self._reading.daemon = True
            self._reading.start()

    def held(self) -> Held | None:
        """The held briefs as the catalog is now (a recall takes them once, at its first read),
        or None: not held, still being read apart, or inside a transaction of this connection,
        whose writes are not committed yet (read the catalog then)."""
        if not self._hold or self.db.in_transaction:
            return None
        if self._reading is not None:
            if self._reading.is_alive():
                return None
            self._held, self._read_there, self._reading = self._read_there, None, None
        self._held = current(self, self._held)
        return self._held

    def last_change(self) -> int:
        """The number of the last change logged (0: none yet)."""
        row = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name='changes'").fetchone()
        return int(row[0]) if row else 0

    def changes_since(self, seq: int, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` (number, object id) logged after `seq`, in order."""
        query = "SELECT seq, id FROM changes WHERE seq > ? ORDER BY seq LIMIT ?"
        return [(int(n), oid) for n, oid in self.db.execute(query, (seq, limit))]

    def every_brief_row(self) -> Iterator[tuple[Any, ...]]:
        """Every object's BRIEF_COLUMNS, read through a connection of its own that maps nothing:
        read through the map, every page of the file would stay counted in this process's RSS
        (~1 GB at 1M memories)."""
        db = sqlite3.connect(self.path, timeout=READ_TIMEOUT)
        try:
            yield from db.execute(f"SELECT {BRIEF_COLUMNS} FROM objects")
        finally:
            db.close()

    def close(self) -> None:
        self.db.close()

    @abstractmethod
    def _apart(self) -> Holding:
        """Another catalog of the same file, for a thread of its own."""

    def _read_apart(self) -> None:
        try:
            other = self._apart()
            try:
                self._read_there = current(other, None)
            finally:
                other.close()
        except (OSError, sqlite3.Error):  # then read whole at the first use, as without apart
            self._read_there = None


def current(catalog: Holding, held: Held | None) -> Held:
    """`held` as the catalog is now: itself if nothing changed, else with the changes since
    it was made, or read whole when the log cannot say (too many, pruned past, cleared). Each
    read comes after the log's, so what changes meanwhile is read again next time."""
    last = catalog.last_change()
    if held is not None and held.seq == last:
        return held
    if held is not None and last > held.seq:
        changed = catalog.changes_since(held.seq, CATCH_UP_MOST + 1)
        if changed and changed[0][0] == held.seq + 1 and len(changed) <= CATCH_UP_MOST:
            ids = list({oid for _seq, oid in changed})
            held.change(ids, catalog.brief_rows(ids))
            held.seq = changed[-1][0]
            return held
    return Held.of(catalog.every_brief_row(), last)


@dataclass
class Held:
    """Every object's brief, as of the change log's `seq`, and for each partition and node
    the ids of its memories (not sections) in write order: their neighbourhoods. Read by
    the thread that took it from `Catalog.held()`; changed only by `current`."""

    briefs: dict[str, Brief]
    order: dict[tuple[str, str], list[str]]
    seq: int
    _strings: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, rows: Iterable[Sequence[Any]], seq: int) -> Held:
        """From the catalog's rows of BRIEF_COLUMNS."""
        held = cls({}, {}, seq)
        order = held.order
        for row in rows:
            brief = held.brief(row)
            held.briefs[brief.id] = brief
            if "#" not in brief.id:
                order.setdefault((brief.partition, brief.node), []).append(brief.id)
        for ids in order.values():
            ids.sort()
        return held

    def brief(self, row: Sequence[Any]) -> Brief:
        """A row of BRIEF_COLUMNS as a Brief, its partition, node, status, visibility and kind
        each one string however many hold it (~250 bytes a memory less: ~35 MB at 100k)."""
        one = self._strings.setdefault
        oid, partition, node, status, visibility, kind, created, defining = row
        return Brief(
            oid,
            one(partition, partition),
            one(node, node),
            one(status, status),
            one(visibility, visibility),
            one(kind, kind),
            created,
            defining,
        )

    def near(
        self, brief: Brief, low: str, high: str, n: int, filters: Filters
    ) -> tuple[list[str], list[str]]:
        """`Queries.written_near`, read from memory."""
        run, me = self.order.get((brief.partition, brief.node), []), brief.id
        at = bisect.bisect_left(run, me)
        before: list[str] = []
        for i in range(at - 1, -1, -1):
            if len(before) == n or run[i] < low:
                break
            if shows(self.briefs[run[i]], filters):
                before.append(run[i])
        after: list[str] = []
        for i in range(at + 1 if at < len(run) and run[at] == me else at, len(run)):
            if len(after) == n or run[i] >= high:
                break
            if shows(self.briefs[run[i]], filters):
                after.append(run[i])
        return before, after

    def change(self, ids: Sequence[str], rows: Mapping[str, Sequence[Any]]) -> None:
        """These ids as the catalog now has them (their `rows`; none: removed)."""
        moved: dict[tuple[str, str], tuple[set[str], set[str]]] = {}  # gone, come
        for oid in ids:
            old = self.briefs.pop(oid, None)
            new = self.brief(rows[oid]) if oid in rows else None
            if new is not None:
                self.briefs[oid] = new
            if "#" in oid:
                continue
            if old is not None:
                moved.setdefault((old.partition, old.node), (set(), set()))[0].add(oid)
            if new is not None:
                moved.setdefault((new.partition, new.node), (set(), set()))[1].add(oid)
        for where, (gone, come) in moved.items():
            run = self.order.setdefault(where, [])
            if len(gone) + len(come) > 32:  # many: sorted again (most of it in order already)
                run[:] = sorted((set(run) - gone) | come)
                continue
            for oid in gone - come:
                at = bisect.bisect_left(run, oid)
                if at < len(run) and run[at] == oid:
                    del run[at]
            for oid in come - gone:
                bisect.insort(run, oid)
