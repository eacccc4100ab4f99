"""Chunking: Markdown blocks and plain paragraphs become bounded, addressable chunks."""

from __future__ import annotations

import hashlib

import pytest

from brain._errors import BrainError
from brain._ingest.chunking import Chunk, chunk_markdown, chunk_text
from brain._model import content_hash

GUIDE = """\
---
title: Home server
tags: [infra]
---
# Home server

The box in the hall closet runs everything. It has 32 GB of RAM and two mirrored disks.

## Backups

Nightly restic snapshots go to the NAS and weekly ones to B2.

### Restore drill

Once a quarter, restore one folder to /tmp and diff it against the live copy.

## Services

| Service | Port | Notes |
|---------|-----:|-------|
| Jellyfin | 8096 | media, behind `caddy` |
| Pi-hole | 53 | DNS \\| ad blocking |
| Gitea | 3000 |

```yaml
# not a heading: a comment in the compose file
services:

  gitea:
    image: gitea/gitea:1.21
```

- Caddy terminates TLS
- Watchtower updates images
  every Sunday at 04:00
    - except Gitea, pinned on purpose

## Someday
"""


def _by_type(chunks: list[Chunk], block_type: str) -> list[Chunk]:
    return [c for c in chunks if c.block_type == block_type]


def test_headings_become_the_heading_path_of_what_follows() -> None:
    chunks = chunk_markdown(GUIDE)
    paths = [(c.block_type, c.heading_path) for c in chunks]
    assert paths[0] == ("paragraph", ("Home server",))
    assert ("paragraph", ("Home server", "Backups")) in paths
    assert ("paragraph", ("Home server", "Backups", "Restore drill")) in paths
    # A sibling heading replaces the deeper ones instead of stacking under them.
    table = _by_type(chunks, "table")[0]
    assert table.heading_path == ("Home server", "Services")
    # Headings with content are context, never chunks of their own.
    assert all(c.text != "Backups" for c in chunks)


def test_an_empty_section_keeps_its_heading_as_a_chunk() -> None:
    chunks = chunk_markdown(GUIDE)
    last = chunks[-1]
    assert (last.block_type, last.text, last.heading_path) == (
        "heading",
        "Someday",
        ("Home server", "Someday"),
    )
    assert len(_by_type(chunks, "heading")) == 1


def test_tables_carry_their_cells_header_first() -> None:
    table = _by_type(chunk_markdown(GUIDE), "table")[0]
    assert table.table_data == (
        ("Service", "Port", "Notes"),
        ("Jellyfin", "8096", "media, behind `caddy`"),
        ("Pi-hole", "53", "DNS | ad blocking"),
        ("Gitea", "3000", ""),  # a short row is padded to the header's width
    )
    assert table.text.splitlines()[0] == "| Service | Port | Notes |"
    assert all(c.table_data is None for c in chunk_markdown(GUIDE) if c.block_type != "table")


def test_code_fences_are_kept_verbatim_and_whole() -> None:
    code = _by_type(chunk_markdown(GUIDE), "code")
    assert len(code) == 1
    start = GUIDE.index("```yaml")
    end = GUIDE.index("```", start + 3) + 3
    assert code[0].text == GUIDE[start:end]
    assert code[0].heading_path == ("Home server", "Services")


def test_lists_keep_nested_and_continuation_lines_together() -> None:
    lists = _by_type(chunk_markdown(GUIDE), "list")
    assert len(lists) == 1
    assert lists[0].text.splitlines() == [
        "- Caddy terminates TLS",
        "- Watchtower updates images",
        "  every Sunday at 04:00",
        "    - except Gitea, pinned on purpose",
    ]


def test_front_matter_is_skipped_but_line_numbers_count_it() -> None:
    chunks = chunk_markdown(GUIDE)
    assert all("title: Home server" not in c.text for c in chunks)
    lines = GUIDE.split("\n")
    first = chunks[0]
    assert first.start_line == 7
    assert lines[first.start_line - 1].startswith("The box in the hall closet")
    for chunk in _by_type(chunks, "table") + _by_type(chunks, "code") + _by_type(chunks, "list"):
        source = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert source == chunk.text


def test_tiny_paragraphs_merge_under_one_heading_but_not_across_headings() -> None:
    text = "# A\n\nOne.\n\nTwo.\n\nThree.\n\n# B\n\nFour.\n"
    chunks = chunk_markdown(text, min_chars=200)
    assert [(c.text, c.heading_path) for c in chunks] == [
        ("One.\n\nTwo.\n\nThree.", ("A",)),
        ("Four.", ("B",)),
    ]
    assert (chunks[0].start_line, chunks[0].end_line) == (3, 7)


def test_paragraphs_of_decent_size_stay_apart() -> None:
    first, second = "Alpha " * 50, "Beta " * 50
    chunks = chunk_markdown(f"{first.strip()}\n\n{second.strip()}\n", min_chars=200)
    assert [c.text for c in chunks] == [first.strip(), second.strip()]


def test_a_huge_paragraph_splits_on_sentence_boundaries_within_max() -> None:
    sentences = [f"Sentence number {i} talks about the garden and the shed." for i in range(80)]
    chunks = chunk_markdown("## Notes\n\n" + " ".join(sentences) + "\n", max_chars=300)
    assert len(chunks) > 1
    assert all(len(c.text) <= 300 for c in chunks)
    assert all(c.text.endswith(".") and c.text[0].isupper() for c in chunks)
    assert " ".join(c.text for c in chunks) == " ".join(sentences)
    assert all(c.heading_path == ("Notes",) for c in chunks)


def test_every_block_type_respects_max_chars() -> None:
    rows = "\n".join(f"| host-{i} | 10.0.0.{i} | {'rack ' * 6}|" for i in range(60))
    code = "\n".join(f"    step_{i}()  # {'x' * (i % 40)}" for i in range(120))
    items = "\n".join(f"- item {i}: {'word ' * 12}\n  detail {i}" for i in range(60))
    text = (
        f"# Big\n\n| Host | IP | Where |\n|---|---|---|\n{rows}\n\n"
        f"```python\n{code}\n```\n\n{items}\n\n{'y' * 2000}\n"
    )
    chunks = chunk_markdown(text, max_chars=400, min_chars=50)
    assert all(len(c.text) <= 400 for c in chunks)
    tables = _by_type(chunks, "table")
    assert len(tables) > 1
    for piece in tables:  # each piece of a long table repeats the header row
        assert piece.text.startswith("| Host | IP | Where |\n|---|---|---|")
        assert piece.table_data is not None and piece.table_data[0] == ("Host", "IP", "Where")
    body_rows = [row for piece in tables for row in (piece.table_data or ())[1:]]
    assert [row[0] for row in body_rows] == [f"host-{i}" for i in range(60)]
    code_pieces = _by_type(chunks, "code")
    assert len(code_pieces) > 1
    assert all(p.text.startswith("```python\n") and p.text.endswith("\n```") for p in code_pieces)
    bodies = [p.text.removeprefix("```python\n").removesuffix("\n```") for p in code_pieces]
    assert "\n".join(bodies) == code  # split on line boundaries, nothing lost
    lists = _by_type(chunks, "list")
    assert all(p.text.startswith("- item") for p in lists)  # split between items


def test_chunking_is_deterministic_and_indexed_in_order() -> None:
    first, second = chunk_markdown(GUIDE, max_chars=120), chunk_markdown(GUIDE, max_chars=120)
    assert first == second
    assert [c.index for c in first] == list(range(len(first)))
    starts = [c.start_line for c in first]
    assert starts == sorted(starts)


def test_setext_headings_and_trailing_hashes_are_understood() -> None:
    text = "Title\n=====\n\nIntro text.\n\n## Part two ##\n\nMore text.\n"
    assert [c.heading_path for c in chunk_markdown(text)] == [("Title",), ("Title", "Part two")]


def test_plain_text_splits_on_blank_lines_with_the_same_bounds() -> None:
    long = " ".join(f"Line {i} of the long story goes on." for i in range(40))
    text = f"Dear diary,\n\ntoday was long.\n\n\n{long}\n\n# not a heading here\n"
    chunks = chunk_text(text, max_chars=250, min_chars=40)
    assert chunks[0].text.startswith("Dear diary,\n\ntoday was long.")
    assert all(c.block_type == "paragraph" and c.heading_path == () for c in chunks)
    assert all(len(c.text) <= 250 for c in chunks)
    assert chunks[-1].text.endswith("# not a heading here")
    assert chunk_text("") == [] and chunk_markdown("   \n\n") == []


def test_content_hash_is_sha256_hex() -> None:
    assert content_hash(b"hello") == hashlib.sha256(b"hello").hexdigest()


@pytest.mark.parametrize(("max_chars", "min_chars"), [(0, 0), (100, -1)])
def test_impossible_bounds_are_refused(max_chars: int, min_chars: int) -> None:
    with pytest.raises(BrainError, match="must be"):
        chunk_markdown("text", max_chars=max_chars, min_chars=min_chars)
