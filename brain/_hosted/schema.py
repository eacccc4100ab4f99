"""The database: versioned migrations, tables that all carry the tenant, row-level security."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from brain._errors import BrainError
from brain._hosted import roles
from brain._hosted.roles import ROLE
from brain._indexes import glued, glyphs

if TYPE_CHECKING:
    import psycopg

# A new row's tenant by default; the policies (roles.py) check it against the proven one.
TENANT = "current_setting('brain.tenant')"
VECTOR_DIMS = (256, 384)  # the hashing test embedder and MiniLM: one HNSW index each

# Text compares byte by byte, as in SQLite: ids, paths and nodes order and range the same way.
C = 'COLLATE "C"'

# Each table's columns in the order the catalog's SQL writes them; `tenant` comes last, so a
# positional INSERT fills it from the session's setting and RLS checks it.
_TABLES: dict[str, tuple[str, str]] = {
    "vault_files": (
        f"path text {C} NOT NULL, data bytea NOT NULL, note_id text {C}, kind text, "
        "status text, visibility text, created text, touched text, "
        "written timestamptz NOT NULL DEFAULT now(), stamp bigint NOT NULL",
        "path",
    ),
    "info": (f"key text {C} NOT NULL, value text NOT NULL", "key"),
    "files": (
        f"path text {C} NOT NULL, note_id text {C}, hash text NOT NULL, mtime_ns bigint NOT NULL, "
        "size bigint NOT NULL, error text, inode bigint NOT NULL DEFAULT 0",
        "path",
    ),
    "objects": (
        f"id text {C} NOT NULL, note_id text {C} NOT NULL, path text {C} NOT NULL, "
        f"partition text {C} NOT NULL, node text {C} NOT NULL, title text NOT NULL, "
        f"norm_title text {C} NOT NULL, kind text NOT NULL, status text NOT NULL, "
        f"visibility text NOT NULL, created text {C} NOT NULL, touched text {C} NOT NULL, "
        f"parent text {C}, supersedes text {C}, defining text, tags text NOT NULL, "
        "source text NOT NULL, heading_path text NOT NULL, text_hash text NOT NULL",
        "id",
    ),
    "relations": (
        f"source text {C} NOT NULL, type text NOT NULL, target text {C} NOT NULL, "
        "weight double precision",
        "",
    ),
    "node_notes": (
        f"note_id text {C} NOT NULL, partition text {C} NOT NULL, node text {C} NOT NULL, "
        f"day text {C} NOT NULL, terms text NOT NULL, entities text NOT NULL",
        "note_id",
    ),
    "node_counts": (
        f"partition text {C} NOT NULL, node text {C} NOT NULL, parent text {C} NOT NULL, "
        f"memories integer NOT NULL, oldest text {C} NOT NULL, newest text {C} NOT NULL",
        "partition, node",
    ),
    "node_terms": (
        f"partition text {C} NOT NULL, node text {C} NOT NULL, kind text NOT NULL, "
        f"term text {C} NOT NULL, notes integer NOT NULL, points integer NOT NULL",
        "partition, node, kind, term",
    ),
    "texts": (
        f"id text {C} NOT NULL, title text NOT NULL, body text NOT NULL, "
        "tsv tsvector GENERATED ALWAYS AS (setweight(to_tsvector('english', title), 'A') || "
        "setweight(to_tsvector('english', body), 'B')) STORED",
        "id",
    ),
    "vectors": (
        f"id text {C} NOT NULL, hash text NOT NULL, dims integer NOT NULL, "
        "embedding vector NOT NULL",
        "id",
    ),
    "journal": (
        "seq bigserial, at text NOT NULL, kind text NOT NULL, id text NOT NULL, "
        "title text NOT NULL, partition text NOT NULL, visibility text NOT NULL, "
        "detail text NOT NULL",
        "seq",
    ),
}

_INDEXES = [
    "CREATE INDEX IF NOT EXISTS objects_note ON objects(tenant, note_id)",
    "CREATE INDEX IF NOT EXISTS objects_folder ON objects(tenant, partition, node, norm_title)",
    "CREATE INDEX IF NOT EXISTS objects_parent ON objects(tenant, parent)",
    "CREATE INDEX IF NOT EXISTS objects_supersedes ON objects(tenant, supersedes)",
    "CREATE INDEX IF NOT EXISTS objects_order ON objects(tenant, partition, node, id)",
    "CREATE INDEX IF NOT EXISTS objects_created ON objects(tenant, partition, created)",
    "CREATE INDEX IF NOT EXISTS relations_source ON relations(tenant, source)",
    "CREATE INDEX IF NOT EXISTS relations_target ON relations(tenant, target)",
    "CREATE INDEX IF NOT EXISTS node_notes_node ON node_notes(tenant, partition, node, day)",
    "CREATE INDEX IF NOT EXISTS node_counts_parent ON node_counts(tenant, partition, parent)",
    "CREATE INDEX IF NOT EXISTS texts_tsv ON texts USING gin (tsv)",
    *(
        f"CREATE INDEX IF NOT EXISTS vectors_hnsw_{n} ON vectors USING hnsw "
        f"((embedding::vector({n})) vector_cosine_ops) WHERE dims = {n}"
        for n in VECTOR_DIMS
    ),
]


def _table(name: str, columns: str, key: str) -> list[str]:
    # Versions 1 and 2 as they ran; version 3 replaced their policies (roles.version_3), and
    # a table added later takes that version's policy, not this one.
    primary = f", PRIMARY KEY (tenant, {key})" if key else ""
    return [
        f"CREATE TABLE IF NOT EXISTS {name} ({columns}, "
        f"tenant text {C} NOT NULL DEFAULT {TENANT}{primary})",
        f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS by_tenant ON {name}",
        f"CREATE POLICY by_tenant ON {name} USING (tenant = {TENANT}) "
        f"WITH CHECK (tenant = {TENANT})",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {name} TO {ROLE}",
    ]


def _version_1() -> list[str]:
    statements = [
        "CREATE EXTENSION IF NOT EXISTS vector",
        # The tenants themselves: for the administrator's commands, never for a tenant's role.
        f"CREATE TABLE IF NOT EXISTS tenants (name text {C} PRIMARY KEY, "
        "created timestamptz NOT NULL DEFAULT now())",
        f"REVOKE ALL ON tenants FROM {ROLE}",
    ]
    for name, (columns, key) in _TABLES.items():
        statements += _table(name, columns, key)
    statements += _INDEXES
    statements.append(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {ROLE}")
    return statements


def _version_2() -> list[str]:
    # The learned-sparse terms (SPLADE) of each object: pgvector's sparsevec, scored by inner
    # product; `encoder` names what made them, so terms of another model are never mixed in.
    columns = (
        f"id text {C} NOT NULL, hash text NOT NULL, encoder text NOT NULL, terms sparsevec NOT NULL"
    )
    return _table("sparse_terms", columns, "id")


_BEFORE_3 = (*_TABLES, "sparse_terms")


def _version_3() -> list[str]:
    # The tenant bound by a proof the server's login cannot make (brain/_hosted/roles.py).
    return roles.version_3(_BEFORE_3)


def _version_4() -> list[str]:
    # Each tenant's count of committed writes, which a server reading a replica compares
    # there and on the primary (brain/_hosted/replica.py); under version 3's policy.
    name = "write_marks"
    return [
        f"CREATE TABLE IF NOT EXISTS {name} (written bigint NOT NULL, "
        f"tenant text {C} NOT NULL DEFAULT {TENANT} PRIMARY KEY)",
        f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY",
        f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS by_tenant ON {name}",
        f"CREATE POLICY by_tenant ON {name} USING (tenant = {roles.TENANT_OF_SESSION}) "
        f"WITH CHECK (tenant = {roles.TENANT_OF_SESSION})",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {name} TO {ROLE}",
    ]


def _version_5() -> list[str]:
    # Each text's CJK characters and emoji as words of their own (brain/_indexes/glyphs.py),
    # a generated column: adding it computes the rows already written, none is left stale.
    return [
        glyphs.SQL_FUNCTION_5,
        "ALTER TABLE texts ADD COLUMN IF NOT EXISTS glyphs tsvector GENERATED ALWAYS AS "
        "(to_tsvector('simple', brain_glyphs(title || ' ' || body))) STORED",
        "CREATE INDEX IF NOT EXISTS texts_glyphs ON texts USING gin (glyphs)",
    ]


def _version_6() -> list[str]:
    # Generated columns, so adding them computes the rows already written. `words`: the
    # English words of a text whose Latin is glued to CJK or Thai or is fullwidth
    # (brain/_indexes/glued.py), weighted as `tsv`; NULL for every other text, whose `tsv`
    # holds its words already. `glyph_terms`: version 5's `glyphs` and the letters of Thai,
    # Lao, Khmer and Myanmar, a flag whole; `glyphs` stays for the servers of version 5.
    return [
        glued.SQL_FUNCTION,
        "ALTER TABLE texts ADD COLUMN IF NOT EXISTS words tsvector GENERATED ALWAYS AS (CASE "
        "WHEN brain_apart(title) <> title OR brain_apart(body) <> body THEN "
        "setweight(to_tsvector('english', brain_apart(title)), 'A') || "
        "setweight(to_tsvector('english', brain_apart(body)), 'B') END) STORED",
        "CREATE INDEX IF NOT EXISTS texts_words ON texts USING gin (words)",
        glyphs.SQL_FUNCTION,
        "ALTER TABLE texts ADD COLUMN IF NOT EXISTS glyph_terms tsvector GENERATED ALWAYS AS "
        "(to_tsvector('simple', brain_glyph_terms(title || ' ' || body))) STORED",
        "CREATE INDEX IF NOT EXISTS texts_glyph_terms ON texts USING gin (glyph_terms)",
    ]


def _version_7() -> list[str]:
    # The glyph functions of versions 5 and 6 replaced by linear ones with the same output
    # (brain/_indexes/glyphs.py): a generated column's stored values stay right as they are.
    return list(glyphs.SQL_FUNCTIONS_7)


def _version_8() -> list[str]:
    # When a memory's text was last written or said again (Note.updated), which recall's hits
    # show; NULL in a row an older server wrote reads as its `created` (ObjectRow.from_sql).
    return [f"ALTER TABLE objects ADD COLUMN IF NOT EXISTS updated text {C}"]


TENANT_TABLES = (*_BEFORE_3, "write_marks")  # every table whose rows are one tenant's

# Version → its statements; a new version never edits an old one.
MIGRATIONS = {
    1: _version_1,
    2: _version_2,
    3: _version_3,
    4: _version_4,
    5: _version_5,
    6: _version_6,
    7: _version_7,
    8: _version_8,
}
# A rolling upgrade runs servers of two versions on one database. A version that only adds
# (a table, a nullable column, an index, a function) leaves the database usable by the servers
# before it: it names here the oldest server version that still runs on it. A version not named
# here changes what older servers rely on, so they stop at it (see docs/hosted.md, "Upgrading").
# Version 3 changed every policy (a server of 2 would see nothing): it names none. Version 4
# only adds a table a server of 3 never reads (its writes do not count for the replicas:
# turn `--db-read` on once no server of 3 is left; docs/hosted.md, "Read replicas"). Version 5
# only adds a generated column older servers neither write nor read; so does version 6.
# Version 7 only makes two functions faster, their output unchanged. Version 8 only adds a
# nullable column older servers neither write nor read.
SERVES_FROM: dict[int, int] = {4: 3, 5: 3, 6: 3, 7: 3, 8: 3}
SCHEMA_VERSION = max(MIGRATIONS)


def connect(dsn: str, *, autocommit: bool = True) -> psycopg.Connection[tuple[object, ...]]:
    """A connection, or one clear error naming what failed (a bad DSN, a server not there)."""
    import psycopg

    try:
        conn = psycopg.connect(dsn, autocommit=autocommit, connect_timeout=10)
    except (psycopg.Error, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise HostedError(
            f"cannot connect to the database: {first}",
            "check the DSN (postgresql://user@host:port/db) and that the server runs",
        ) from None
    # No prepared statements, as in a server's pool (hosted/pool.py): behind pgbouncer in
    # transaction mode one named here may meet another client's of the same name.
    conn.prepare_threshold = None
    return conn


class HostedError(BrainError):
    """The database is missing, unreachable, uninitialised, or does not know a user."""


@contextlib.contextmanager
def database_errors() -> Iterator[None]:
    """What the database says when it fails under a command (a dropped connection, a full
    disk) as one clear error, not a traceback."""
    import psycopg

    try:
        yield
    except psycopg.errors.InsufficientPrivilege as exc:
        # The servers' login (brain_server) may not read the tokens or the tenants.
        raise HostedError(
            f"the database refused this login: {_first(exc)}",
            "run the administrator's commands with the database owner's DSN, not the servers'",
        ) from None
    except psycopg.Error as exc:
        raise HostedError(f"the database failed: {_first(exc)}", "check the server's log") from None


def _first(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def init(
    dsn: str,
    migrations: dict[int, Callable[[], list[str]]] = MIGRATIONS,
    serves_from: dict[int, int] = SERVES_FROM,
) -> int:
    """Create or bring up to date the roles, the schema, the policies and the tenants' key;
    idempotent. Run as the database's owner (who may create roles).

    Returns the database's schema version. Migrations run in one transaction under an advisory
    lock, so two `brain hosted init` at once apply each version once; an older brain's init on
    a newer database applies nothing.
    """
    from brain._hosted import tokens

    with connect(dsn, autocommit=False) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('brain:migrations'))")
        roles.create_roles(conn)
        tokens.ensure_schema(conn)  # the token lookup the server role is granted
        conn.execute(
            "CREATE TABLE IF NOT EXISTS brain_migrations (version integer PRIMARY KEY, "
            "applied timestamptz NOT NULL DEFAULT now())"
        )
        # The oldest server version each applied version still serves (NULL: only its own).
        conn.execute("ALTER TABLE brain_migrations ADD COLUMN IF NOT EXISTS serves_from integer")
        applied = {int(str(r[0])) for r in conn.execute("SELECT version FROM brain_migrations")}
        for version in sorted(set(migrations) - applied):
            for statement in migrations[version]():
                conn.execute(statement)
            conn.execute(
                "INSERT INTO brain_migrations (version, serves_from) VALUES (%s, %s)",
                (version, serves_from.get(version)),
            )
        if 3 in applied | set(migrations):  # the key's table is version 3's
            roles.ensure_key(conn)
        conn.commit()
        return max(applied | set(migrations))


def set_server_password(dsn: str, password: str) -> None:
    """Give the servers' login its password (as the owner; PostgreSQL keeps its SCRAM hash)."""
    from psycopg import sql

    with connect(dsn) as conn:
        conn.execute(
            sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(roles.SERVER_ROLE), sql.Literal(password)
            )
        )


def export_key(dsn: str, path: Path) -> None:
    """The database's tenants' key into a file (`brain hosted init --key-file`), read as the
    owner; the servers' `--tenant-key`."""
    with connect(dsn) as conn:
        roles.write_key(roles.stored_key(conn), path)


def check_schema(
    conn: psycopg.Connection[tuple[object, ...]], version: int = SCHEMA_VERSION
) -> None:
    """Refuse a database `brain hosted init` has not made or brought up to this brain's
    version, or one a later version changed beyond what this brain knows (a newer database
    that still serves this version, during a rolling upgrade, is fine)."""
    have, needs = schema_state(conn)
    if have < version:
        raise HostedError(
            f"the database has brain schema version {have}, this brain needs {version}",
            "run `brain hosted init DSN` (with this brain's version)",
        )
    if needs > version:
        raise HostedError(
            f"the database has brain schema version {have}, which needs a brain of schema "
            f"version {needs} or later; this brain has {version}",
            "upgrade brain on this server",
        )


def schema_state(conn: psycopg.Connection[tuple[object, ...]]) -> tuple[int, int]:
    """(the database's schema version, the oldest server version that runs on it); (0, 0)
    for a database `init` has not made."""
    import psycopg

    try:
        # Read through to_jsonb: a table made before `serves_from` has no such column.
        row = conn.execute(
            "SELECT max(version), max(coalesce((to_jsonb(m) ->> 'serves_from')::int, version)) "
            "FROM brain_migrations m"
        ).fetchone()
    except psycopg.errors.UndefinedTable:
        row = None
    if not row or row[0] is None:
        return 0, 0
    return int(str(row[0])), int(str(row[1]))
