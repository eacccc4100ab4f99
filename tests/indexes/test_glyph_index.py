"""The full-text index's schema: one made before the glyph field (1) or before words apart
(2) is rebuilt, never served."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock


def _index_of_schema(folder: Path, version: int) -> None:
    """The full-text index as a brain of that schema made it: title and body stored and
    indexed as written, and from 2 the glyph field."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    for name in ("id", "note_id"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw")
    for name in ("partition", "nodes", "status", "visibility", "kind"):
        builder.add_text_field(name, stored=False, tokenizer_name="raw")
    for name in ("title", "body"):
        builder.add_text_field(name, stored=True, tokenizer_name="en_stem")
    if version >= 2:
        builder.add_text_field("glyphs", tokenizer_name="whitespace", index_option="freq")
    shutil.rmtree(folder)
    folder.mkdir()
    tantivy.Index(builder.build(), path=str(folder), reuse=True)
    (folder / "schema").write_text(str(version))


@pytest.mark.parametrize(("version", "query"), [(1, "桜"), (2, "python")])
def test_a_vault_indexed_by_an_older_schema_rebuilds_itself_and_finds_what_it_missed(
    vault: Path, clock: FixedClock, version: int, query: str
) -> None:
    brain = open_vault(vault, clock=clock, embedder=None)
    brain.remember("東京の天気は晴れ。桜がきれい。Pythonでデータ分析。", title="Tokyo diary")
    brain.close()
    _index_of_schema(vault / ".brain" / "fulltext", version)
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        assert [hit.title for hit in brain.recall(query, mode="text")] == ["Tokyo diary"]
        report = brain.doctor()
        assert report.rebuilt and f"was built for schema '{version}', not '3'" in report.rebuilt
    finally:
        brain.close()
