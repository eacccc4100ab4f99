"""The full-text index's glyph field: an index made before it is rebuilt, never served."""

from __future__ import annotations

import shutil
from pathlib import Path

from brain._brain import open_vault
from brain._clock import FixedClock


def _index_of_schema_1(folder: Path) -> None:
    """The full-text index as a brain before the glyph field made it: title and body only."""
    import tantivy

    builder = tantivy.SchemaBuilder()
    for name in ("id", "note_id"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw")
    for name in ("partition", "nodes", "status", "visibility", "kind"):
        builder.add_text_field(name, stored=False, tokenizer_name="raw")
    for name in ("title", "body"):
        builder.add_text_field(name, stored=True, tokenizer_name="en_stem")
    shutil.rmtree(folder)
    folder.mkdir()
    tantivy.Index(builder.build(), path=str(folder), reuse=True)
    (folder / "schema").write_text("1")


def test_a_vault_indexed_before_glyphs_rebuilds_itself_and_finds_them(
    vault: Path, clock: FixedClock
) -> None:
    brain = open_vault(vault, clock=clock, embedder=None)
    brain.remember("東京の天気は今日は晴れです。桜がきれいでした。", title="Tokyo diary")
    brain.close()
    _index_of_schema_1(vault / ".brain" / "fulltext")
    brain = open_vault(vault, clock=clock, embedder=None)
    try:
        assert [hit.title for hit in brain.recall("桜", mode="text")] == ["Tokyo diary"]
        report = brain.doctor()
        assert report.rebuilt and "was built for schema '1', not '2'" in report.rebuilt
    finally:
        brain.close()
