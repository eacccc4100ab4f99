"""The catalog's reads by name, shared by both databases: what a caller means, as SQL.

Callers ask for what they mean (a note's children, a connector's documents, the notes due
to age); the WHERE clauses live here (and in where.py), so no caller writes SQL.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from brain._indexes.dialect import OBJECT_COLUMNS, SQLITE, Dialect
from brain._indexes.rows import Brief, FileRow, ObjectRow, RelationRow, Stamp
from brain._indexes.where import BRIEF_COLUMNS as BRIEF_COLUMNS
from brain._indexes.where import FILE_COLUMNS as FILE_COLUMNS
from brain._indexes.where import Database as Database
from brain._indexes.where import filter_sql, marks, near_sql, notes_where
from brain._indexes.where import scopes as scopes
from brain._indexes.where import shows as shows

if TYPE_CHECKING:
    from brain._indexes.fulltext import Filters


class Queries:
    """The named reads both catalogs share: SQLite's (catalog.py) and PostgreSQL's
    (hosted/catalog.py), each of which holds its own schema and writes. The SQL here is what
    both accept; what they spell differently is asked of `dialect`."""

    db: Database
    dialect: Dialect = SQLITE  # the SQL each database spells its own way

    # info, files and objects by key ------------------------------------------------------
    def info(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM info WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    # files
    def files(self) -> dict[str, FileRow]:
        return {
            row[0]: FileRow(*row) for row in self.db.execute(f"SELECT {FILE_COLUMNS} FROM files")
        }

    def stamps(self) -> dict[str, Stamp]:
        """Every file's (mtime_ns, size, inode) by path: what a walk compares, and no more."""
        query = "SELECT path, mtime_ns, size, inode FROM files"
        return {row[0]: (row[1], row[2], row[3]) for row in self.db.execute(query)}

    def file(self, path: str) -> FileRow | None:
        row = self.db.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE path=?", (path,)).fetchone()
        return FileRow(*row) if row else None

    def inodes_in(self, folder: str) -> dict[str, int]:
        """The files right in a folder (not below it), each with its inode (0: not known)."""
        start = f"{folder}/"
        return {
            path: inode
            for path, inode in self.db.execute(
                "SELECT path, inode FROM files WHERE path > ? AND path < ?",
                (start, f"{folder}/\U0010ffff"),
            )
            if "/" not in path[len(start) :]
        }

    def files_under(self, folder: str) -> dict[str, FileRow]:
        """The files at any depth below a folder (vault-relative, no trailing slash)."""
        return {
            row[0]: FileRow(*row)
            for row in self.db.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE path > ? AND path < ?",
                (f"{folder}/", f"{folder}/\U0010ffff"),
            )
        }

    def broken_files(self) -> list[FileRow]:
        return [
            FileRow(*row)
            for row in self.db.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE error IS NOT NULL ORDER BY path"
            )
        ]

    def object_ids_of(self, note_id: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM objects WHERE note_id=?", (note_id,))]

    def get(self, object_id: str) -> ObjectRow | None:
        query = f"SELECT {OBJECT_COLUMNS} FROM objects WHERE id=?"
        row = self.db.execute(query, (object_id,)).fetchone()
        return ObjectRow.from_sql(row) if row else None

    def get_many(self, ids: Sequence[str]) -> dict[str, ObjectRow]:
        out: dict[str, ObjectRow] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            query = f"SELECT {OBJECT_COLUMNS} FROM objects WHERE id IN ({marks})"
            for row in self.db.execute(query, batch):
                out[row[0]] = ObjectRow.from_sql(row)
        return out

    def briefs(self, ids: Sequence[str]) -> dict[str, Brief]:
        return {oid: Brief._make(row) for oid, row in self.brief_rows(ids).items()}

    def said_titles(self, ids: Sequence[str]) -> dict[str, str]:
        """Each object's title; a turn's opens with who said it ("Ann: <its conversation>")."""
        out: dict[str, str] = {}
        said = f"COALESCE({self.dialect.json_text('source', 'role')} || ': ', '') || title"
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            sql = f"SELECT id, {said} FROM objects WHERE id IN ({','.join('?' * len(batch))})"
            out.update(self.db.execute(sql, batch))
        return out

    def find_title(
        self, partition: str, node: str, norm_title: str, *, visible_only: bool = False
    ) -> ObjectRow | None:
        visible = " AND visibility='normal'" if visible_only else ""
        row = self.db.execute(
            f"SELECT {OBJECT_COLUMNS} FROM objects WHERE partition=? AND node=? AND norm_title=? "
            f"AND id=note_id AND status!='superseded'{visible} ORDER BY created LIMIT 1",
            (partition, node, norm_title),
        ).fetchone()
        return ObjectRow.from_sql(row) if row else None

    # as a WHERE clause (for the named reads below, and for tests) --------------------
    def select(self, where: str = "TRUE", params: Sequence[Any] = ()) -> Iterator[ObjectRow]:
        for row in self.db.execute(f"SELECT {OBJECT_COLUMNS} FROM objects WHERE {where}", params):
            yield ObjectRow.from_sql(row)

    def notes(
        self,
        partition: str,
        *,
        normal_only: bool = False,
        node: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        limit: int | None = None,
        defining_only: bool = False,
    ) -> list[ObjectRow]:
        """A partition's notes (not their chunks), newest first; a node includes its sub-nodes."""
        where, params = notes_where(partition, normal_only, node, status, kind, defining_only)
        sql = where + " ORDER BY created DESC, id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return list(self.select(sql, params))

    def count_notes(
        self,
        partition: str,
        *,
        normal_only: bool = False,
        node: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        defining_only: bool = False,
    ) -> int:
        """How many notes `notes` would give without a limit."""
        return self.count(*notes_where(partition, normal_only, node, status, kind, defining_only))

    def find_thread(
        self, partition: str, threads: str, norm_title: str, *, visible_only: bool = False
    ) -> ObjectRow | None:
        """The current index note of the thread of this normalised title, in any folder
        directly under `threads` (a fixed folder name, free of LIKE's wildcards)."""
        visible = " AND visibility='normal'" if visible_only else ""
        # The folders under `threads` as a range of the (partition, node, …) index: "0" is
        # the character after "/".
        found = self.select(
            "partition=? AND node>? AND node<? AND node NOT LIKE ? AND kind='thread' AND "
            f"norm_title=? AND id=note_id AND status!='superseded'{visible} "
            "ORDER BY created LIMIT 1",
            (partition, f"{threads}/", f"{threads}0", f"{threads}/%/%", norm_title),
        )
        return next(found, None)

    def count(self, where: str = "TRUE", params: Sequence[Any] = ()) -> int:
        return int(
            self.db.execute(f"SELECT count(*) FROM objects WHERE {where}", params).fetchone()[0]
        )

    def relations(self, where: str = "TRUE", params: Sequence[Any] = ()) -> list[RelationRow]:
        sql = f"SELECT source, type, target, weight FROM relations WHERE {where}"
        return [
            RelationRow(*row)
            for row in self.db.execute(sql + " ORDER BY source, type, target", params)
        ]

    # by name ---------------------------------------------------------------------------
    def object_ids(self) -> list[str]:
        """Every object id (notes and chunks)."""
        return [r[0] for r in self.db.execute("SELECT id FROM objects")]

    def ids_matching(self, filters: Filters) -> set[str]:
        """The ids of the objects the recall filters allow."""
        return {row.id for row in self.select(*filter_sql(filters))}

    def note_count(self) -> int:
        return self.count("id=note_id")

    def all_notes(self) -> list[ObjectRow]:
        """Every note of the vault (not the chunks), by path."""
        return list(self.select("id=note_id ORDER BY path"))

    def children(self, parents: Sequence[str]) -> list[ObjectRow]:
        """The notes whose `parent` is one of these ids (a thread's days, a document's parts)."""
        if not parents:
            return []
        return list(self.select(f"id=note_id AND parent IN ({marks(parents)})", parents))

    def below(self, parent: str) -> list[ObjectRow]:
        """Every object whose parent is this note: its chunks and its child notes."""
        return list(self.select("parent=?", (parent,)))

    def successors(self, note_id: str) -> list[ObjectRow]:
        """The notes that supersede this one."""
        return list(self.select("supersedes=? AND id=note_id", [note_id]))

    def superseded_on(self, days: Sequence[str], *, normal_only: bool = False) -> list[ObjectRow]:
        """Superseded notes written on one of these UTC days (`YYYY-MM-DD`)."""
        if not days:
            return []
        hide = " AND visibility='normal'" if normal_only else ""
        where = f"status='superseded' AND id=note_id AND substr(created, 1, 10) IN ({marks(days)})"
        return list(self.select(where + hide, days))

    def superseding(self, note_ids: Sequence[str], *, normal_only: bool = False) -> list[ObjectRow]:
        """The notes that supersede any of these."""
        if not note_ids:
            return []
        hide = " AND visibility='normal'" if normal_only else ""
        where = f"id=note_id AND supersedes IN ({marks(note_ids)}){hide}"
        return list(self.select(where, note_ids))

    def placed_title(self, partition: str, norm_title: str, under: str) -> ObjectRow | None:
        """The oldest current titled note of this title anywhere below the node `under`."""
        rows = self.select(
            "partition=? AND norm_title=? AND id=note_id AND kind='titled' AND "
            "status!='superseded' AND node>=? AND node<? ORDER BY created, id LIMIT 1",
            (partition, norm_title, under + "/", under + "0"),
        )
        return next(iter(rows), None)

    def documents_of(self, connector: str) -> list[ObjectRow]:
        """The document notes one connector wrote."""
        connector_of = self.dialect.json_text("source", "connector")
        return list(
            self.select(f"kind='document' AND id=note_id AND {connector_of}=?", [connector])
        )

    def conversations(self, platform: str, key: str, value: str) -> list[ObjectRow]:
        """The recall notes of a conversation stored before, by one field of their `source`."""
        field = self.dialect.json_text
        rows = self.select(
            f"kind='recall' AND id=note_id AND {field('source', 'platform')}=? "
            f"AND {field('source', key)}=?",
            [platform, value],
        )
        return list(rows)

    def of_kind(self, kind: str) -> list[ObjectRow]:
        """Every note of one kind (the daily logs, …), in every partition."""
        return list(self.select("kind = ?", (kind,)))

    def hot_notes(self, statuses: Sequence[str], kinds: Sequence[str]) -> list[ObjectRow]:
        """Notes of these statuses and kinds still in the hot tier, by path."""
        return list(
            self.select(
                f"id=note_id AND status IN ({marks(statuses)}) AND kind IN ({marks(kinds)}) "
                "AND path NOT LIKE 'cold/%' ORDER BY path",
                (*statuses, *kinds),
            )
        )

    def recently_touched(self, limit: int) -> list[ObjectRow]:
        """The normal notes touched last, newest first."""
        return list(
            self.select(
                "id=note_id AND visibility='normal' ORDER BY touched DESC, id LIMIT ?", (limit,)
            )
        )

    def aging(self, kinds: Sequence[str]) -> list[ObjectRow]:
        """Active and dormant notes of these kinds, by path: what the lifecycle sweep looks at."""
        return list(
            self.select(
                f"id=note_id AND kind IN ({marks(kinds)}) AND status IN ('active', 'dormant') "
                "ORDER BY path",
                kinds,
            )
        )

    def crowded_nodes(self, at_least: int) -> list[tuple[str, str, int]]:
        """(partition, node, count) of nodes holding `at_least` titled notes directly."""
        query = (
            "SELECT partition, node, count(*) FROM objects WHERE id=note_id AND kind='titled' "
            "GROUP BY partition, node HAVING count(*) >= ? ORDER BY partition, node"
        )
        return [(str(p), str(n), int(c)) for p, n, c in self.db.execute(query, (at_least,))]

    def titled_in(self, partition: str, node: str) -> list[ObjectRow]:
        """The titled notes directly in one node, by id."""
        return list(
            self.select(
                "id=note_id AND kind='titled' AND partition=? AND node=? ORDER BY id",
                (partition, node),
            )
        )

    def visible_notes(self, partition: str) -> list[ObjectRow]:
        """A partition's normal notes (what the graph may draw)."""
        return list(self.select("partition=? AND id=note_id AND visibility='normal'", [partition]))

    def created_on(self, partition: str, day: str) -> list[ObjectRow]:
        """A partition's notes created on one day (`YYYY-MM-DD`), daily logs left out."""
        return list(
            self.select(
                "id=note_id AND partition=? AND created LIKE ? AND kind!='log' "
                "ORDER BY created, id",
                (partition, day + "%"),
            )
        )

    def usage(
        self, partition: str, *, normal_only: bool
    ) -> tuple[dict[str, int], dict[str, int], int]:
        """A partition's notes counted by kind and by status, and their files' bytes."""
        hide = " AND o.visibility='normal'" if normal_only else ""
        base = f"FROM objects o WHERE o.partition=? AND o.id=o.note_id{hide}"
        by_kind = dict(
            self.db.execute(f"SELECT o.kind, count(*) {base} GROUP BY o.kind", (partition,))
        )
        by_status = dict(
            self.db.execute(f"SELECT o.status, count(*) {base} GROUP BY o.status", (partition,))
        )
        size = self.db.execute(
            "SELECT coalesce(sum(f.size), 0) FROM files f JOIN objects o ON o.id=f.note_id "
            f"WHERE o.partition=? AND o.id=o.note_id{hide}",
            (partition,),
        ).fetchone()[0]
        return by_kind, by_status, int(size)

    def relations_from(self, source: str) -> list[RelationRow]:
        return self.relations("source=?", [source])

    def relations_into(self, note_id: str) -> list[RelationRow]:
        """Edges into a note or any of its chunks."""
        return self.relations("target=? OR target LIKE ?", [note_id, note_id + "#%"])

    def relations_to_any(self, targets: Sequence[str]) -> list[RelationRow]:
        if not targets:
            return []
        return self.relations(f"target IN ({marks(targets)})", targets)

    def relations_to_parts(self, note_id: str) -> list[RelationRow]:
        """Edges into a note's chunks (`<id>#<n>`)."""
        return self.relations("target LIKE ?", [note_id + "#%"])

    # recall's neighbour context (recall/neighbours.py) -----------------------------------
    # the change log and the briefs' rows, for the briefs held in memory (held.py)
    def brief_rows(self, ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """The BRIEF_COLUMNS of each of these ids the catalog holds."""
        out: dict[str, tuple[Any, ...]] = {}
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            query = f"SELECT {BRIEF_COLUMNS} FROM objects WHERE id IN ({marks(batch)})"
            out.update((row[0], tuple(row)) for row in self.db.execute(query, batch))
        return out

    def sections(self, note_id: str) -> list[Brief]:  # `<note id>#<n>`, in no order
        query = f"SELECT {BRIEF_COLUMNS} FROM objects WHERE note_id=? AND id!=note_id"
        return [Brief(*row) for row in self.db.execute(query, (note_id,))]

    def written_between(
        self, partition: str, start: str, end: str, n: int, *, normal_only: bool = False
    ) -> list[Brief]:
        """Up to n objects of the partition created in [start, end), in no order (when.py)."""
        hide = " AND visibility='normal'" if normal_only else ""
        where = f"partition=? AND created>=? AND created<?{hide}"
        query = f"SELECT {BRIEF_COLUMNS} FROM objects WHERE {where} LIMIT ?"
        return [Brief(*row) for row in self.db.execute(query, (partition, start, end, n))]

    def written_near(
        self, brief: Brief, low: str, high: str, n: int, filters: Filters
    ) -> tuple[list[str], list[str]]:
        """Its neighbours: the ids of up to n objects (not sections, nor documents) of its
        partition and node written just before and just after it, nearest first, ids within
        [low, high), that the filters let through. From the `objects_order` index alone."""
        return self.written_near_each([(brief, low, high, n)], filters)[brief.id]

    def written_near_each(
        self, asks: Sequence[tuple[Brief, str, str, int]], filters: Filters
    ) -> dict[str, tuple[list[str], list[str]]]:
        """`written_near` of each (brief, low, high, n) in one statement (one round trip)."""
        if not asks:
            return {}
        no_section = self.dialect.position("id", "'#'") + "=0"
        sql, args = near_sql(asks, filters, no_section)
        near: dict[str, tuple[list[str], list[str]]] = {b.id: ([], []) for b, *_ in asks}
        for ask, oid in self.db.execute(sql, args):
            me = asks[int(ask)][0].id
            near[me][0 if oid < me else 1].append(oid)
        for earlier, later in near.values():  # nearest first (a union keeps no order)
            earlier.sort(reverse=True)
            later.sort()
        return near

    # the session gate's briefing, upkeep and cues (a partition's notes; `normal_only` for a model)
    def _in_partition(
        self, partition: str, normal_only: bool, where: str, params: Sequence[Any] = ()
    ) -> list[ObjectRow]:
        hide = " AND visibility='normal'" if normal_only else ""
        sql = "partition=? AND id=note_id" + hide + " AND " + where
        return list(self.select(sql, (partition, *params)))

    def titled(
        self, partition: str, node: str, title: str, *, normal_only: bool
    ) -> list[ObjectRow]:
        """The notes of one title in one node."""
        return self._in_partition(partition, normal_only, "node=? AND title=?", (node, title))

    def active_threads(
        self, partition: str, *, normal_only: bool, latest: int | None = None
    ) -> list[ObjectRow]:
        """Active threads; with `latest`, only that many, the last touched first."""
        where = "kind='thread' AND status='active'"
        if latest is None:
            return self._in_partition(partition, normal_only, where)
        return self._in_partition(
            partition, normal_only, where + " ORDER BY touched DESC LIMIT ?", (latest,)
        )

    def recent_defining(self, partition: str, *, normal_only: bool, limit: int) -> list[ObjectRow]:
        """The newest current defining memories."""
        where = "defining IS NOT NULL AND status!='superseded' ORDER BY created DESC LIMIT ?"
        return self._in_partition(partition, normal_only, where, (limit,))

    def active_in(self, partition: str, node: str, *, normal_only: bool) -> list[ObjectRow]:
        """The active notes directly in one node."""
        return self._in_partition(partition, normal_only, "node=? AND status='active'", (node,))

    def created_or_touched_on(
        self, partition: str, day: str, *, normal_only: bool
    ) -> list[ObjectRow]:
        """The notes created or touched on one day (`YYYY-MM-DD`)."""
        where = "(created LIKE ? OR touched LIKE ?)"
        return self._in_partition(partition, normal_only, where, (day + "%", day + "%"))

    def superseded(self, partition: str, *, normal_only: bool) -> list[ObjectRow]:
        return self._in_partition(partition, normal_only, "status='superseded'")
