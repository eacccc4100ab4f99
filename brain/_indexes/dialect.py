"""The catalog's SQL that each database spells its own way, by name: SQLite's here."""

from __future__ import annotations

from typing import Protocol

# An object row's columns, in the order ObjectRow.from_sql reads them.
OBJECT_COLUMNS = (
    "id, note_id, path, partition, node, title, norm_title, kind, status, visibility, created, "
    "touched, parent, supersedes, defining, tags, source, heading_path, text_hash, updated"
)


class Dialect(Protocol):
    """What the shared catalog SQL (queries.py, nodestats.py) asks of a database by name:
    one implementation per database (PostgreSQL's in brain/_hosted/dialect.py)."""

    # Add a note's contribution to a node's count and dates (partition, node, parent,
    # memories, oldest, newest); to a node's term (partition, node, kind, term, notes, points).
    add_node_count: str
    add_node_term: str

    def json_text(self, column: str, key: str) -> str:
        """A top-level key of a JSON text column, as text."""
        ...

    def position(self, text: str, part: str) -> str:
        """Where `part` first occurs in `text`, from 1 (0: nowhere)."""
        ...


class SQLite:
    """SQLite's spelling (json1's `json_extract`, `instr`, its two-argument min and max)."""

    add_node_count = (
        "INSERT INTO node_counts VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (partition, node) "
        "DO UPDATE SET memories = memories + excluded.memories, "
        "oldest = min(oldest, excluded.oldest), newest = max(newest, excluded.newest)"
    )
    add_node_term = (
        "INSERT INTO node_terms VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT "
        "(partition, node, kind, term) DO UPDATE SET notes = notes + excluded.notes, "
        "points = points + excluded.points"
    )

    def json_text(self, column: str, key: str) -> str:
        return f"json_extract({column}, '$.{key}')"

    def position(self, text: str, part: str) -> str:
        return f"instr({text}, {part})"


SQLITE = SQLite()
