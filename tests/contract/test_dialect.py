"""Each database's spelling of the catalog's named SQL pieces gives the same answers."""

from __future__ import annotations

import sqlite3

import pytest

from brain._hosted.dialect import POSTGRESQL
from brain._hosted.schema import connect
from brain._indexes.dialect import SQLITE, Dialect

SOURCE = '\'{"connector": "papers", "platform": "claude.ai"}\''
CASES = [
    (lambda d: d.json_text(SOURCE, "connector"), "papers"),
    (lambda d: d.json_text(SOURCE, "external_id"), None),
    (lambda d: d.position("'01ABC#3'", "'#'"), 6),
    (lambda d: d.position("'01ABC'", "'#'"), 0),
]


def answer_sqlite(sql: str) -> object:
    return sqlite3.connect(":memory:").execute(f"SELECT {sql}").fetchone()[0]


@pytest.mark.parametrize(("piece", "expected"), CASES)
def test_sqlite_and_postgresql_spell_it_alike(hosted_dsn: str, piece, expected) -> None:  # type: ignore[no-untyped-def]
    dialects: list[Dialect] = [SQLITE, POSTGRESQL]
    with connect(hosted_dsn) as conn:
        on_pg = conn.execute(f"SELECT {piece(POSTGRESQL)}").fetchone()[0]
    assert answer_sqlite(piece(SQLITE)) == expected == on_pg
    assert len({piece(d) for d in dialects}) == 2  # spelled each its own way
