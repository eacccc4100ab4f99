"""The catalog's columns and WHERE clauses, built from recall's filters: both databases' SQL."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from brain._indexes.rows import Brief
from brain._ingest.sections import SECTIONED_KINDS

if TYPE_CHECKING:
    from brain._indexes.fulltext import Filters


class Rows(Protocol):
    """What a statement gives back: rows as tuples."""

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Database(Protocol):
    """The connection the catalog's SQL runs on: SQLite here, PostgreSQL in brain/_hosted."""

    @property
    def in_transaction(self) -> bool: ...
    def execute(self, sql: str, parameters: Any = (), /) -> Rows: ...
    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any: ...
    def executescript(self, script: str, /) -> Any: ...
    def close(self) -> None: ...


BRIEF_COLUMNS = "id, partition, node, status, visibility, kind, created, defining"
FILE_COLUMNS = "path, note_id, hash, mtime_ns, size, error, inode"  # a FileRow's, in order


def marks(values: Sequence[Any]) -> str:
    return ",".join("?" * len(values))


def scopes(filters: Filters) -> list[tuple[str, ...]]:
    """Each restriction to a set of subtrees; a row must fall in one subtree of every set."""
    found: list[tuple[str, ...]] = []
    if filters.node:
        found.append((filters.node.strip("/"),))
    if filters.nodes is not None:
        found.append(tuple(n.strip("/") for n in filters.nodes))
    return found


# A node's sub-nodes: its path and "/" then anything, its own "%" and "_" (which a folder name
# may hold) escaped so that they mean themselves ("a_b" is not "axb"); the same in SQLite and
# PostgreSQL.
BELOW = "node LIKE ? ESCAPE '\\'"


def below(node: str) -> str:
    """The LIKE pattern of the nodes under `node` (BELOW's parameter)."""
    escaped = node.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


def filter_sql(filters: Filters, id_column: str = "id") -> tuple[str, list[Any]]:
    """The filters as a WHERE clause over the catalog's objects (`id_column`: their id where
    another table joined holds an `id` too)."""
    where, params = ["TRUE"], []
    if filters.partition is not None:
        where.append("partition=?")
        params.append(filters.partition)
    for nodes in scopes(filters):
        where.append("(" + " OR ".join(f"node=? OR {BELOW}" for _ in nodes) + ")")
        for n in nodes:
            params += [n, below(n)]
    shown, shown_params = shown_sql(filters)
    where += shown
    params += shown_params
    if filters.ids is not None:
        where.append(f"{id_column} IN ({marks(sorted(filters.ids)) or 'NULL'})")
        params += sorted(filters.ids)
    return " AND ".join(where), params


def shown_sql(filters: Filters) -> tuple[list[str], list[Any]]:
    """The filters on a memory's own fields (status, visibility, kind) as WHERE conditions."""
    where, params = [], []
    if filters.exclude_status:
        where.append(f"status NOT IN ({','.join('?' * len(filters.exclude_status))})")
        params += list(filters.exclude_status)
    for name, allowed in (("visibility", filters.visibility), ("kind", filters.kinds)):
        if allowed is not None:
            where.append(f"{name} IN ({','.join('?' * len(allowed))})")
            params += list(allowed)
    if filters.exclude_kinds:
        where.append(f"kind NOT IN ({','.join('?' * len(filters.exclude_kinds))})")
        params += list(filters.exclude_kinds)
    return where, params


def near_sql(
    asks: Sequence[tuple[Brief, str, str, int]], filters: Filters, no_section: str
) -> tuple[str, list[Any]]:
    """`Queries.written_near_each`'s one statement: for each (brief, low, high, n), up to n
    ids of its partition and node just before it and just after it, each row tagged with the
    ask's place; `no_section` is the dialect's test that an id names no section."""
    shown, params = shown_sql(filters)
    shown.append(f"kind NOT IN ({marks(SECTIONED_KINDS)})")  # a sync's files are no talk
    params.extend(SECTIONED_KINDS)
    where = "".join(f" AND {condition}" for condition in shown)
    side = (
        f"SELECT ? AS ask, id FROM objects WHERE partition=? AND node=? AND {no_section}"
        f"{where} AND id {{}} ? AND id {{}} ? ORDER BY id {{}} LIMIT ?"
    )
    before, after = side.format("<", ">=", "DESC"), side.format(">", "<", "ASC")
    parts: list[str] = []
    args: list[Any] = []
    for i, (brief, low, high, n) in enumerate(asks):
        head = (i, brief.partition, brief.node, *params, brief.id)
        parts += [f"SELECT * FROM ({before})", f"SELECT * FROM ({after})"]
        args += [*head, low, n, *head, high, n]
    return " UNION ALL ".join(parts), args


def shows(brief: Brief, filters: Filters) -> bool:
    """`shown_sql` and `written_near`'s own condition on a brief in memory: the filters'
    status, visibility and kinds let it through, and it is no section or document."""
    if brief.kind in SECTIONED_KINDS or brief.status in filters.exclude_status:
        return False
    if filters.visibility is not None and brief.visibility not in filters.visibility:
        return False
    if filters.kinds is not None and brief.kind not in filters.kinds:
        return False
    return brief.kind not in filters.exclude_kinds


def notes_where(
    partition: str,
    normal_only: bool,
    node: str | None,
    status: str | None,
    kind: str | None,
    defining_only: bool,
) -> tuple[str, list[Any]]:
    """The WHERE clause of a partition's notes (not their chunks), with its parameters."""
    where = ["partition=?", "id=note_id"]
    params: list[Any] = [partition]
    if normal_only:
        where.append("visibility='normal'")
    if node:
        where.append(f"(node=? OR {BELOW})")
        params += [node, below(node)]
    if status:
        where.append("status=?")
        params.append(status)
    if kind:
        where.append("kind=?")
        params.append(kind)
    if defining_only:
        where.append("defining IS NOT NULL")
    return " AND ".join(where), params
