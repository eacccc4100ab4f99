"""A catalog an older brain built, opened by this one: brought up to date from the files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._indexes.embedder import HashingEmbedder


class Counting(HashingEmbedder):
    """The test embedder, counting every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().embed(texts)


def test_a_schema_2_catalog_is_rebuilt_by_the_first_command_and_embeds_nothing_again(
    vault: Path, clock: FixedClock
) -> None:
    embedder = Counting()
    b = open_vault(vault, clock=clock, embedder=embedder)
    note = b.remember("The launch is planned for March", title="Launch")
    assert [h.id for h in b.recall("launch March")][:1] == [note.id]
    b.close()
    embedded = len(embedder.seen)
    db = sqlite3.connect(vault / ".brain" / "catalog.sqlite")  # as brain before `updated` left it
    db.execute("ALTER TABLE objects DROP COLUMN updated")
    db.execute("UPDATE info SET value = '2' WHERE key = 'schema'")
    db.commit()
    db.close()

    again = open_vault(vault, clock=clock, embedder=embedder)
    assert [h.id for h in again.recall("launch March")][:1] == [note.id]
    assert [n.id for n in again.list()] and again.expand(note.id).id == note.id
    again.close()
    # Only the query was embedded: the embedding cache served every unchanged note's text.
    assert embedder.seen[embedded:] == ["launch March"]
