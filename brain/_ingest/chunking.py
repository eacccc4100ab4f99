"""Split a document's text into addressable chunks: Markdown blocks or plain paragraphs."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from brain._errors import InvalidInput

BLOCK_TYPES = ("paragraph", "heading", "list", "table", "code")


@dataclass(frozen=True)
class Chunk:
    """One addressable section of a document; lines are 1-based and inclusive in the source."""

    index: int
    text: str
    block_type: str
    heading_path: tuple[str, ...]
    table_data: tuple[tuple[str, ...], ...] | None
    start_line: int
    end_line: int


@dataclass(frozen=True)
class _Block:
    """A parsed Markdown block before sizing: its kind and its source lines."""

    kind: str
    lines: tuple[str, ...]
    start_line: int
    level: int = 0
    title: str = ""


@dataclass(frozen=True)
class _Piece:
    """A sized chunk still waiting for its index and heading path."""

    text: str
    block_type: str
    start_line: int
    end_line: int
    table_data: tuple[tuple[str, ...], ...] | None = None


_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_THEMATIC = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]*([-*+]|\d{1,9}[.)])(?:[ \t]+(\S?)|$)")
_TABLE_DELIM = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
# CJK full stops end a sentence without a following space; Latin ones need one, so "3.14" holds.
_SENTENCE_END = re.compile(r"[。！？]+|[.!?…]+[\"'”’)\]]*(?=\s|$)")


def front_matter_length(lines: list[str]) -> int:
    """How many leading lines a `---` YAML front-matter block takes (0 when there is none)."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for number, line in enumerate(lines[1:], start=1):
        if line.rstrip() in ("---", "..."):
            return number + 1
    return 0  # never closed: a thematic break, not front-matter


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of each sentence in text, trimmed of surrounding whitespace."""
    bounds, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        bounds.append((start, match.end()))
        start = match.end()
    bounds.append((start, len(text)))
    spans = []
    for begin, end in bounds:
        while begin < end and text[begin].isspace():
            begin += 1
        while end > begin and text[end - 1].isspace():
            end -= 1
        if end > begin:
            spans.append((begin, end))
    return spans


def chunk_markdown(text: str, *, max_chars: int = 1500, min_chars: int = 200) -> list[Chunk]:
    """Chunk Markdown by block: headings give each chunk its path, tiny paragraphs merge."""
    _check_bounds(max_chars, min_chars)
    lines = _lines(text)
    blocks = _parse_blocks(lines, front_matter_length(lines))
    placed: list[tuple[tuple[str, ...], _Piece]] = []
    stack: list[tuple[int, str]] = []
    paragraphs: list[_Piece] = []

    def flush() -> None:
        path = tuple(title for _, title in stack)
        placed.extend((path, p) for p in _merge(paragraphs, min_chars, max_chars))
        paragraphs.clear()

    for number, block in enumerate(blocks):
        if block.kind == "heading":
            flush()
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
            following = blocks[number + 1] if number + 1 < len(blocks) else None
            # A heading is context for what follows; only an empty section keeps it as a chunk.
            if following is None or (
                following.kind == "heading" and following.level <= block.level
            ):
                path = tuple(title for _, title in stack)
                end = block.start_line + len(block.lines) - 1
                whole = [_Piece(block.title, "heading", block.start_line, end)]
                fits = len(block.title) <= max_chars
                pieces = whole if fits else _split_prose(block.title, block, max_chars, "heading")
                placed.extend((path, p) for p in pieces)
        elif block.kind == "paragraph":
            text_of = "\n".join(block.lines)
            paragraphs.extend(_split_prose(text_of, block, max_chars, "paragraph"))
        else:
            flush()
            path = tuple(title for _, title in stack)
            placed.extend((path, p) for p in _split_block(block, lines, max_chars))
    flush()
    return [_chunk(i, path, piece) for i, (path, piece) in enumerate(placed)]


def chunk_text(text: str, *, max_chars: int = 1500, min_chars: int = 200) -> list[Chunk]:
    """Chunk plain text on blank lines, with the same merge and split bounds as Markdown."""
    _check_bounds(max_chars, min_chars)
    lines = _lines(text)
    pieces: list[_Piece] = []
    start = None
    for number, line in enumerate([*lines, ""]):
        if line.strip() and start is None:
            start = number
        elif not line.strip() and start is not None:
            block = _Block("paragraph", tuple(lines[start:number]), start + 1)
            pieces.extend(_split_prose("\n".join(block.lines), block, max_chars, "paragraph"))
            start = None
    merged = _merge(pieces, min_chars, max_chars)
    return [_chunk(i, (), piece) for i, piece in enumerate(merged)]


def _check_bounds(max_chars: int, min_chars: int) -> None:
    if max_chars < 1:
        raise InvalidInput(f"max_chars must be at least 1, got {max_chars}")
    if min_chars < 0:  # above max_chars is fine: merging never grows a chunk past max_chars
        raise InvalidInput(f"min_chars must be 0 or more, got {min_chars}")


def _lines(text: str) -> list[str]:
    # Split only on real line ends so line numbers match what an editor shows.
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _chunk(index: int, path: tuple[str, ...], piece: _Piece) -> Chunk:
    return Chunk(
        index,
        piece.text,
        piece.block_type,
        path,
        piece.table_data,
        piece.start_line,
        piece.end_line,
    )


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip())


def _fence_opening(line: str) -> str | None:
    match = _FENCE.match(line)
    if match is None or (match.group(1)[0] == "`" and "`" in match.group(2)):
        return None
    return match.group(1)


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return (
        _indent(line) <= 3
        and len(stripped) >= len(marker)
        and stripped == marker[0] * len(stripped)
    )


def _is_list_item(line: str) -> bool:
    return _LIST_ITEM.match(line) is not None and _THEMATIC.match(line) is None


def _is_table_start(lines: list[str], i: int) -> bool:
    if i + 1 >= len(lines) or "|" not in lines[i] or "|" not in lines[i + 1]:
        return False
    if _TABLE_DELIM.match(lines[i + 1]) is None:
        return False
    return len(_cells(lines[i])) == len(_cells(lines[i + 1]))


def _interrupts_paragraph(lines: list[str], i: int) -> bool:
    line = lines[i]
    if (
        _ATX.match(line)
        or _fence_opening(line)
        or _THEMATIC.match(line)
        or _is_table_start(lines, i)
    ):
        return True
    match = _LIST_ITEM.match(line)
    # As in CommonMark, only a non-empty bullet or an ordered list starting at 1 cuts a paragraph.
    return bool(match and _indent(line) <= 3 and match.group(2) and match.group(1)[0] in "-*+1")


def _cells(line: str) -> tuple[str, ...]:
    row = line.strip()
    row = row.removeprefix("|")
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return tuple(cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(row))


def _parse_blocks(lines: list[str], first: int) -> list[_Block]:
    blocks: list[_Block] = []
    i, n = first, len(lines)
    while i < n:
        line = lines[i]
        marker = _fence_opening(line)
        heading = _ATX.match(line)
        if not line.strip() or _THEMATIC.match(line):
            i += 1
        elif marker is not None:
            end = next((j for j in range(i + 1, n) if _closes(lines[j], marker)), n - 1)
            blocks.append(_Block("code", tuple(lines[i : end + 1]), i + 1))
            i = end + 1
        elif heading is not None:
            title = (heading.group(2) or "").strip()
            if title:  # an empty `##` names nothing, so it changes no path
                blocks.append(_Block("heading", (line,), i + 1, len(heading.group(1)), title))
            i += 1
        elif _is_table_start(lines, i):
            end = i + 2
            while end < n and lines[end].strip() and "|" in lines[end]:
                end += 1
            blocks.append(_Block("table", tuple(lines[i:end]), i + 1))
            i = end
        elif _is_list_item(line) and _indent(line) <= 3:
            end = _list_end(lines, i)
            blocks.append(_Block("list", tuple(lines[i:end]), i + 1))
            i = end
        else:
            i = _paragraph(lines, i, blocks)
    return blocks


def _list_end(lines: list[str], start: int) -> int:
    n, j, last = len(lines), start + 1, start
    while j < n:
        if not lines[j].strip():
            k = j
            while k < n and not lines[k].strip():
                k += 1
            # A blank line ends the list unless an item or an indented continuation follows.
            if k < n and (_is_list_item(lines[k]) or _indent(lines[k]) >= 2):
                j = k
                continue
            break
        if not (_is_list_item(lines[j]) or _indent(lines[j]) >= 2) and _interrupts_paragraph(
            lines, j
        ):
            break
        last, j = j, j + 1  # an item, a nested line, or a lazy continuation
    return last + 1


def _paragraph(lines: list[str], start: int, blocks: list[_Block]) -> int:
    end = start + 1
    while end < len(lines) and lines[end].strip():
        underline = _SETEXT.match(lines[end])
        if underline is not None:
            title = " ".join(line.strip() for line in lines[start:end])
            level = 1 if underline.group(1)[0] == "=" else 2
            blocks.append(_Block("heading", tuple(lines[start : end + 1]), start + 1, level, title))
            return end + 1
        if _interrupts_paragraph(lines, end):
            break
        end += 1
    blocks.append(_Block("paragraph", tuple(lines[start:end]), start + 1))
    return end


def _split_prose(text: str, block: _Block, max_chars: int, block_type: str) -> list[_Piece]:
    """Cut text at sentence ends (then spaces, then anywhere) into pieces of at most max_chars."""
    units: list[tuple[int, int]] = []
    for begin, end in sentence_spans(text):
        if end - begin <= max_chars:
            units.append((begin, end))
            continue
        for word in re.finditer(r"\S+", text[begin:end]):
            w_begin, w_end = begin + word.start(), begin + word.end()
            units.extend((c, min(c + max_chars, w_end)) for c in range(w_begin, w_end, max_chars))
    spans: list[tuple[int, int]] = []
    for begin, end in units:
        if spans and end - spans[-1][0] <= max_chars:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((begin, end))
    first = block.start_line
    return [
        _Piece(
            text[b:e], block_type, first + text.count("\n", 0, b), first + text.count("\n", 0, e)
        )
        for b, e in spans
    ]


def _merge(pieces: list[_Piece], min_chars: int, max_chars: int) -> list[_Piece]:
    merged: list[_Piece] = []
    for piece in pieces:
        if merged:
            last = merged[-1]
            small = len(last.text) < min_chars or len(piece.text) < min_chars
            if small and len(last.text) + 2 + len(piece.text) <= max_chars:
                text = f"{last.text}\n\n{piece.text}"
                merged[-1] = _Piece(text, "paragraph", last.start_line, piece.end_line)
                continue
        merged.append(piece)
    return merged


def _split_block(block: _Block, source: list[str], max_chars: int) -> list[_Piece]:
    """Size a code, list or table block: whole when it fits, else packed by lines or rows."""
    end_line = block.start_line + len(block.lines) - 1
    text = "\n".join(block.lines).rstrip()
    if len(text) <= max_chars:
        whole = range(block.start_line, end_line + 1)
        rows = _table_rows(whole, source, block.start_line) if block.kind == "table" else None
        return [_Piece(text, block.kind, block.start_line, end_line, rows)]
    numbered = list(enumerate(block.lines, start=block.start_line))
    head: list[tuple[int, str]] = []
    tail: list[tuple[int, str]] = []
    synthetic_tail = False
    groups: list[list[tuple[int, str]]]
    if block.kind == "code":
        # Each piece of a long code block is re-fenced so it still renders as code.
        marker = _fence_opening(block.lines[0]) or "```"
        closed = len(block.lines) > 1 and _closes(block.lines[-1], marker)
        synthetic_tail = not closed
        head = numbered[:1]
        tail = numbered[-1:] if closed else [(end_line, marker)]
        groups = [[line] for line in (numbered[1:-1] if closed else numbered[1:])]
    elif block.kind == "table":
        head = numbered[:2]  # the header and delimiter rows open every piece
        groups = [[line] for line in numbered[2:]]
    else:
        base = _indent(block.lines[0])
        groups = []
        for line in numbered:
            if not groups or (_is_list_item(line[1]) and _indent(line[1]) <= base):
                groups.append([])
            groups[-1].append(line)
    frame = sum(len(line) + 1 for _, line in head + tail)
    if frame > max_chars // 2:  # no room to repeat the frame: pack its lines like the rest
        kept_tail = [] if synthetic_tail else [[line] for line in tail]
        groups = [[line] for line in head] + groups + kept_tail
        head, tail, frame = [], [], 0
    pieces = []
    for group in _pack(groups, max_chars - frame):
        lines = head + group + tail
        numbers = [number for number, _ in group]
        body = "\n".join(line for _, line in lines).rstrip()
        if not body.strip():
            continue  # a run of blank lines cut off on its own says nothing
        rows = _table_rows(numbers, source, block.start_line) if block.kind == "table" else None
        pieces.append(_Piece(body, block.kind, numbers[0], numbers[-1], rows))
    return pieces


def _pack(groups: list[list[tuple[int, str]]], budget: int) -> list[list[tuple[int, str]]]:
    """Fill pieces of at most budget chars with whole groups, breaking only what can't fit."""
    budget = max(budget, 1)
    units: list[list[tuple[int, str]]] = []
    for group in groups:
        if sum(len(line) + 1 for _, line in group) <= budget + 1:
            units.append(group)
            continue
        for number, line in group:  # too big whole: fall back to lines, then to slices
            units.extend(
                [(number, line[c : c + budget])] for c in range(0, max(len(line), 1), budget)
            )
    packed: list[list[tuple[int, str]]] = []
    size = 0
    for unit in units:
        cost = sum(len(line) + 1 for _, line in unit)
        if packed and size + cost <= budget + 1:
            packed[-1].extend(unit)
            size += cost
        else:
            packed.append(list(unit))
            size = cost
    return packed


def _table_rows(
    numbers: Iterable[int], source: list[str], first: int
) -> tuple[tuple[str, ...], ...]:
    """The header then the given body rows as cells, padded or cut to the header's width (GFM)."""
    header = _cells(source[first - 1])
    rows = [header, *(_cells(source[n - 1]) for n in sorted(set(numbers)) if n > first + 1)]
    return tuple(tuple((*row, *([""] * len(header)))[: len(header)]) for row in rows)
