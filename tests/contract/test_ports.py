"""Every storage part has every member of its port, and PostgreSQL's parts are their own."""

from __future__ import annotations

import dis
import inspect
from typing import Any, Protocol

import pytest

from brain._hosted.caches import PgCaches
from brain._hosted.catalog import PgCatalog
from brain._hosted.parts import IndexRows, PgJournal, PgLock
from brain._hosted.search import PgFullText, PgVectors
from brain._hosted.sparse import PgSparse
from brain._hosted.store import PgStore
from brain._indexes import nodeindex, ports
from brain._indexes.caches import Caches
from brain._indexes.catalog import Catalog
from brain._indexes.fulltext import FullText
from brain._indexes.postings import SparseIndex
from brain._indexes.queries import Queries
from brain._indexes.vectors import VectorIndex
from brain._vault.files import WriterLock
from brain._vault.journal import Journal
from brain._vault.store import NoteStore

# (port, the files part, the PostgreSQL part)
PARTS: list[tuple[Any, type, type]] = [
    (ports.NotesPort, NoteStore, PgStore),
    (ports.CatalogPort, Catalog, PgCatalog),
    (ports.CachesPort, Caches, PgCaches),
    (ports.FullTextPort, FullText, PgFullText),
    (ports.VectorsPort, VectorIndex, PgVectors),
    (ports.SparsePort, SparseIndex, PgSparse),
    (ports.LockPort, WriterLock, PgLock),
    (ports.JournalPort, Journal, PgJournal),
    (nodeindex.IndexFiles, nodeindex.IndexFolders, IndexRows),
]
# The PostgreSQL parts built by composition: nothing of the files storage under them, so a
# port member they lack is a member PostgreSQL has no implementation of.
OWN = {IndexRows, PgCaches, PgCatalog, PgFullText, PgJournal, PgLock, PgSparse, PgStore, PgVectors}


def members(port: Any) -> set[str]:
    """A Protocol's members, its bases' too: methods, properties and declared attributes."""
    found: set[str] = set()
    for cls in port.__mro__:
        if Protocol not in cls.__bases__ and cls is not port:
            continue
        found |= {n for n in vars(cls) if not n.startswith("_") or n == "__len__"}
        found |= set(getattr(cls, "__annotations__", {}))
    return found - {"__module__", "__doc__", "__annotations__"}


def has(cls: type, name: str) -> bool:
    """Defined on the class, or a plain attribute one of its methods sets (`self.name = …`)."""
    for c in cls.__mro__:
        if name in vars(c) or name in getattr(c, "__annotations__", {}):
            return True
        for method in vars(c).values():
            code = getattr(method, "__code__", None)
            if code is not None and any(
                i.opname == "STORE_ATTR" and i.argval == name for i in dis.get_instructions(code)
            ):
                return True
    return False


@pytest.mark.parametrize(("port", "files", "pg"), PARTS, ids=[p.__name__ for p, _, _ in PARTS])
def test_both_storages_have_every_member_of_a_port(port: Any, files: type, pg: type) -> None:
    for part in (files, pg):
        missing = sorted(n for n in members(port) if not has(part, n))
        assert missing == [], f"{part.__name__} lacks {missing} of {port.__name__}"


@pytest.mark.parametrize("pg", sorted(OWN, key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_a_postgresql_part_takes_nothing_from_the_files_storage(pg: type) -> None:
    borrowed = [
        c.__name__
        for c in pg.__mro__
        if c.__module__.startswith(("brain._vault", "brain._indexes")) and c is not Queries
    ]
    assert borrowed == []
    port = next(p for p, _, part in PARTS if part is pg)
    assert sorted(n for n in members(port) if not has(pg, n)) == []


def test_the_shared_reads_spell_nothing_only_one_database_knows() -> None:
    """`Queries`, the named reads both catalogs share, asks its dialect for what differs."""
    source = inspect.getsource(Queries)
    for sqlite_only in ("json_extract", "instr(", "sqlite_", "INSERT OR", "WHERE 1"):
        assert sqlite_only not in source


def test_the_check_sees_a_member_a_postgresql_part_lacks() -> None:
    class Half:
        def append(self, event: object) -> None: ...

    assert not has(Half, "events") and "events" in members(ports.JournalPort)
