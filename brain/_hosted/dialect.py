"""The catalog's SQL that each database spells its own way, by name: PostgreSQL's here."""

from __future__ import annotations

# A tenant's rows: row-level security sets and checks the `tenant` column, which every key
# begins with, so an upsert's conflict names it; the columns are named (tenant is last).
_COUNT_COLUMNS = "partition, node, parent, memories, oldest, newest"
_TERM_COLUMNS = "partition, node, kind, term, notes, points"


class PostgreSQL:
    """PostgreSQL's spelling (jsonb's `->>`, `strpos`, `least` and `greatest`)."""

    add_node_count = (
        f"INSERT INTO node_counts ({_COUNT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (tenant, partition, node) DO UPDATE SET "
        "memories = node_counts.memories + excluded.memories, "
        "oldest = least(node_counts.oldest, excluded.oldest), "
        "newest = greatest(node_counts.newest, excluded.newest)"
    )
    add_node_term = (
        f"INSERT INTO node_terms ({_TERM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (tenant, partition, node, kind, term) DO UPDATE SET "
        "notes = node_terms.notes + excluded.notes, points = node_terms.points + excluded.points"
    )

    def json_text(self, column: str, key: str) -> str:
        return f"({column}::jsonb ->> '{key}')"

    def position(self, text: str, part: str) -> str:
        return f"strpos({text}, {part})"


POSTGRESQL = PostgreSQL()
