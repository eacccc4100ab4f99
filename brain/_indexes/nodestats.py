"""Node statistics: per-node counts, date ranges and term tallies, kept in the catalog database.

Each counted note records the few terms and names it contributes; each node (its whole subtree)
holds the memory count, the date range, and how many notes contribute each term. A change to one
note subtracts its old contribution and adds its new one, so no change ever re-reads a node.
The tables are a cache: `brain reindex` and the sleep cycle rebuild them from the notes.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brain._indexes.ports import SqlCatalogPort
    from brain._indexes.queries import Database

SCHEMA = "1"
KEYWORD, ENTITY = "k", "e"

_TABLES = """
CREATE TABLE IF NOT EXISTS node_notes (
    note_id TEXT PRIMARY KEY, partition TEXT NOT NULL, node TEXT NOT NULL, day TEXT NOT NULL,
    terms TEXT NOT NULL, entities TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS node_notes_node ON node_notes(partition, node, day);
CREATE TABLE IF NOT EXISTS node_counts (
    partition TEXT NOT NULL, node TEXT NOT NULL, parent TEXT NOT NULL, memories INTEGER NOT NULL,
    oldest TEXT NOT NULL, newest TEXT NOT NULL, PRIMARY KEY (partition, node)
);
CREATE INDEX IF NOT EXISTS node_counts_parent ON node_counts(partition, parent, node);
CREATE TABLE IF NOT EXISTS node_terms (
    partition TEXT NOT NULL, node TEXT NOT NULL, kind TEXT NOT NULL, term TEXT NOT NULL,
    notes INTEGER NOT NULL, points INTEGER NOT NULL, PRIMARY KEY (partition, node, kind, term)
);
CREATE INDEX IF NOT EXISTS node_terms_top
    ON node_terms(partition, node, kind, notes DESC, points DESC, term);
"""


@dataclass(frozen=True)
class NoteStats:
    """What one counted note contributes to its node and every ancestor."""

    partition: str
    node: str
    day: str  # YYYY-MM-DD of creation
    terms: tuple[tuple[str, int], ...]  # (word, weight in the note)
    entities: tuple[tuple[str, int], ...]  # (name, mentions)


@dataclass(frozen=True)
class NodeCount:
    node: str
    memories: int
    oldest: str
    newest: str


def ancestors(node: str) -> list[str]:
    """`A/B/C` → [`A`, `A/B`, `A/B/C`]; the partition root itself is not a node."""
    parts = [p for p in node.split("/") if p]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


class NodeStats:
    """The statistics tables, on the catalog's connection (so they share its transactions)."""

    def __init__(self, catalog: SqlCatalogPort) -> None:
        self.catalog = catalog
        self._on = catalog.db
        self._on.executescript(_TABLES)
        self.stale = catalog.info("node_stats") != SCHEMA
        self._tally: _Tally | None = None

    @property
    def db(self) -> Database:
        """The catalog's connection; a damaged catalog made anew has another, and no tables."""
        if self.catalog.db is not self._on:
            self._on = self.catalog.db
            for statement in _TABLES.split(";")[:-1]:  # inside the caller's transaction
                self._on.execute(statement)
        return self._on

    @contextlib.contextmanager
    def tallying(self) -> Iterator[None]:
        """Inside (a rebuild): notes added are summed in memory and the node counts and term
        tallies written once at the end, not upserted per note and term (a quarter of a
        reindex's time went there). A removal writes the sums first, then goes as always."""
        with self.transaction():  # unstamped until the sums are in: a kill halfway is stale
            self.catalog.drop_info("node_stats")
        self._tally = _Tally()
        try:
            yield
        except BaseException:
            self._tally = None
            raise
        tally, self._tally = self._tally, None
        with self.transaction():
            self._write(tally)
            self.catalog.set_info("node_stats", SCHEMA)

    def transaction(self) -> contextlib.AbstractContextManager[object]:
        """One commit for a batch of changes; inside a caller's transaction, a part of it
        that an error undoes alone (the catalog's savepoint)."""
        return self.catalog.transaction()

    def put(self, note_id: str, new: NoteStats | None) -> set[tuple[str, str]]:
        """Record a note's contribution (None: it no longer counts); returns the nodes changed."""
        row = self.db.execute(
            "SELECT partition, node, day, terms, entities FROM node_notes WHERE note_id=?",
            (note_id,),
        ).fetchone()
        old = None
        if row is not None:
            old = NoteStats(row[0], row[1], row[2], _pairs(row[3]), _pairs(row[4]))
        if old == new:
            return set()
        touched: set[tuple[str, str]] = set()
        if old is not None:
            self.db.execute("DELETE FROM node_notes WHERE note_id=?", (note_id,))
            touched |= self._count(old, -1)
        if new is not None:
            self.db.execute(
                "INSERT INTO node_notes VALUES (?, ?, ?, ?, ?, ?)",
                (
                    note_id,
                    new.partition,
                    new.node,
                    new.day,
                    json.dumps(list(new.terms)),
                    json.dumps(list(new.entities)),
                ),
            )
            touched |= self._count(new, +1)
        return touched

    def _count(self, stats: NoteStats, sign: int) -> set[tuple[str, str]]:
        nodes = ancestors(stats.node)
        if self._tally is not None:
            if sign > 0:
                self._tally.add(stats, nodes)
                return {(stats.partition, node) for node in nodes}
            self._write(self._tally)  # what follows reads the tables
            self._tally = _Tally()
        for node in nodes:
            self.db.execute(
                self.catalog.dialect.add_node_count,
                (stats.partition, node, node.rpartition("/")[0], sign, stats.day, stats.day),
            )
        # Points (uses, title words more) order the terms that as many notes share.
        rows = [
            (stats.partition, node, kind, term, sign, sign * points)
            for kind, items in ((KEYWORD, stats.terms), (ENTITY, stats.entities))
            for term, points in items
            for node in nodes
        ]
        self.db.executemany(self.catalog.dialect.add_node_term, rows)
        if sign < 0:
            self.db.executemany(
                "DELETE FROM node_terms WHERE partition=? AND node=? AND kind=? AND term=? "
                "AND notes <= 0",
                [row[:4] for row in rows],
            )
            for node in nodes:
                self._narrow(stats.partition, node, stats.day)
        return {(stats.partition, node) for node in nodes}

    def _write(self, tally: _Tally) -> None:
        self.db.executemany(
            self.catalog.dialect.add_node_count,
            [(*key, *value) for key, value in tally.counts.items()],
        )
        self.db.executemany(
            self.catalog.dialect.add_node_term,
            [(*key, *value) for key, value in tally.terms.items()],
        )

    def _narrow(self, partition: str, node: str, day: str) -> None:
        """After a removal: drop an emptied node, or look again at its date range."""
        count = self.count(partition, node)
        if count is None:
            return
        if count.memories <= 0:
            self.db.execute(
                "DELETE FROM node_counts WHERE partition=? AND node=?", (partition, node)
            )
            return
        if day not in (count.oldest, count.newest):
            return
        found = self.db.execute(
            "SELECT min(day), max(day) FROM node_notes WHERE partition=? AND "
            "(node=? OR (node >= ? AND node < ?))",
            (partition, node, node + "/", node + "0"),
        ).fetchone()
        self.db.execute(
            "UPDATE node_counts SET oldest=?, newest=? WHERE partition=? AND node=?",
            (found[0], found[1], partition, node),
        )

    def clear(self) -> None:
        with self.transaction():
            for table in ("node_notes", "node_counts", "node_terms"):
                self.db.execute(f"DELETE FROM {table}")
            self.catalog.set_info("node_stats", SCHEMA)
        self.stale = False

    # reading ---------------------------------------------------------------------
    def count(self, partition: str, node: str) -> NodeCount | None:
        row = self.db.execute(
            "SELECT node, memories, oldest, newest FROM node_counts WHERE partition=? AND node=?",
            (partition, node),
        ).fetchone()
        return NodeCount(*row) if row else None

    def nodes(self, partition: str) -> list[NodeCount]:
        """Every node of a partition with at least one counted memory, by path."""
        return [
            NodeCount(*row)
            for row in self.db.execute(
                "SELECT node, memories, oldest, newest FROM node_counts WHERE partition=? "
                "ORDER BY node",
                (partition,),
            )
        ]

    def children(self, partition: str, node: str) -> list[NodeCount]:
        return [
            NodeCount(*row)
            for row in self.db.execute(
                "SELECT node, memories, oldest, newest FROM node_counts "
                "WHERE partition=? AND parent=? ORDER BY node",
                (partition, node),
            )
        ]

    def top(self, partition: str, node: str, kind: str, limit: int) -> list[str]:
        """The terms (or names) most of a node's memories share; ties by weight, then A–Z."""
        return [
            str(r[0])
            for r in self.db.execute(
                "SELECT term FROM node_terms WHERE partition=? AND node=? AND kind=? "
                "ORDER BY notes DESC, points DESC, term LIMIT ?",
                (partition, node, kind, limit),
            )
        ]


class _Tally:
    """Notes' contributions summed in memory, keyed as the tables are."""

    def __init__(self) -> None:
        # (partition, node) → [parent, memories, oldest, newest]
        self.counts: dict[tuple[str, str], list[str | int]] = {}
        # (partition, node, kind, term) → [notes, points]
        self.terms: dict[tuple[str, str, str, str], list[int]] = {}

    def add(self, stats: NoteStats, nodes: list[str]) -> None:
        for node in nodes:
            count = self.counts.get((stats.partition, node))
            if count is None:
                parent = node.rpartition("/")[0]
                self.counts[(stats.partition, node)] = [parent, 1, stats.day, stats.day]
            else:
                count[1] = int(count[1]) + 1
                count[2] = min(str(count[2]), stats.day)
                count[3] = max(str(count[3]), stats.day)
        for kind, items in ((KEYWORD, stats.terms), (ENTITY, stats.entities)):
            for term, points in items:
                for node in nodes:
                    tally = self.terms.setdefault((stats.partition, node, kind, term), [0, 0])
                    tally[0] += 1
                    tally[1] += points


def _pairs(data: str) -> tuple[tuple[str, int], ...]:
    return tuple((str(term), int(points)) for term, points in json.loads(data))
