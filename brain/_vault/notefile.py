"""Markdown with YAML front-matter: parse and render so an unchanged note round-trips exactly."""

from __future__ import annotations

import re
from typing import Any

import yaml

from brain._errors import BrokenNote
from brain._model import Note
from brain._safeyaml import drop_timestamp_resolver, load_yaml

_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[misc]  # the base is Any: C or Python dumper
    """Safe YAML that writes timestamps back unquoted, as they were read (safeyaml keeps
    them as strings when reading)."""


drop_timestamp_resolver(_Dumper)
# Except a bare date (a dated note's title: 2027-01-01): quoted, so that other YAML readers
# (Obsidian, python-frontmatter, gray-matter) read the same text brain reads, not a date.
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:timestamp", re.compile(r"^\d{4}-\d\d?-\d\d?$"), list("0123456789")
)


class _Top(dict[str, Any]):
    """The front-matter mapping itself: always one field per line."""


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _represent_top(dumper: Any, data: _Top) -> Any:
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=False)


def _represent_dict(dumper: Any, data: dict[str, Any]) -> Any:
    flow = all(_scalar(v) for v in data.values())
    return dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=flow)


def _represent_list(dumper: Any, data: list[Any]) -> Any:
    flow = all(_scalar(v) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


# Short lists and small mappings inline (`tags: [a, b]`), everything else in block style.
_Dumper.add_representer(_Top, _represent_top)
_Dumper.add_representer(dict, _represent_dict)
_Dumper.add_representer(list, _represent_list)

_FENCE = "---"
BOM = "\ufeff"  # a UTF-8 byte-order mark, as many Windows editors save one
# Front-matter is metadata: bounded, so a hand-made note cannot cost minutes or gigabytes
# (and each of its fields is held to safeyaml.MAX_FIELD_CHARS).
MAX_FRONT_BYTES = 4 * 1024 * 1024


def parse(text: str, path: str) -> Note:
    """Read a note; a file without front-matter gets empty metadata, broken YAML raises.

    A byte-order mark and line ends spelled one way throughout (CRLF, CR) are read through
    and remembered on the note, so `render` writes them back; mixed line ends are read as
    they are (the body keeps every byte either way).
    """
    bom = text.startswith(BOM)
    text = text.removeprefix(BOM)
    newline = line_ends(text)
    if newline != "\n":
        text = text.replace(newline, "\n")
    if not text.startswith(_FENCE + "\n") and not text.startswith(_FENCE + "\r\n"):
        return Note(meta={}, body=text, path=path, newline=newline, bom=bom)
    start = text.index("\n") + 1
    end = _closing_fence(text, start)
    if end < 0:
        raise BrokenNote(f"{path}: front-matter is not closed by a '---' line", line=1)
    raw = text[start:end]
    after = text.index("\n", end) + 1 if "\n" in text[end:] else len(text)
    size = len(raw.encode("utf-8"))
    if size > MAX_FRONT_BYTES:
        raise BrokenNote(f"{path}: front-matter is {size} bytes; the limit is {MAX_FRONT_BYTES}")
    try:
        meta = load_yaml(raw, path) if raw.strip() else {}
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        number = where.line + 2 if where is not None else None  # + the opening fence, from 1
        line = f" (line {number})" if number is not None else ""
        reason = getattr(exc, "problem", None) or "invalid YAML"
        raise BrokenNote(f"{path}: broken front-matter{line}: {reason}", line=number) from None
    if not isinstance(meta, dict):
        raise BrokenNote(f"{path}: front-matter must be a mapping of fields")
    return Note(meta, text[after:], path, raw, newline, bom)


def line_ends(text: str) -> str:
    """How a file ends its lines, when it is one way throughout: `\r\n` (every LF after a CR),
    `\r` (CRs alone, no LF); otherwise `\n`. Turning those into `\n` and back gives the same
    text, byte for byte: a CRLF file holds no lone LF, a CR file no LF at all."""
    lf = text.count("\n")
    if lf:
        return "\r\n" if text.count("\r\n") == lf else "\n"
    return "\r" if "\r" in text else "\n"


def names_id(data: bytes, note_id: str) -> bool:
    """Whether a note file's front-matter, even one that no longer parses, has this `id:`."""
    head = data[:MAX_FRONT_BYTES]
    if not head.startswith(_FENCE.encode()):
        return False
    pattern = rb"^id:[ \t]*['\"]?" + re.escape(note_id.encode()) + rb"['\"]?(?=[\s#]|$)"
    return re.search(pattern, head, re.MULTILINE) is not None


def _closing_fence(text: str, start: int) -> int:
    pos = start
    while pos <= len(text):
        nl = text.find("\n", pos)
        line = text[pos : nl if nl >= 0 else len(text)].rstrip("\r")
        if line == _FENCE:
            return pos
        if nl < 0:
            return -1
        pos = nl + 1
    return -1


def render(note: Note) -> str:
    """Write a note back; the front-matter text is reused as read when no field changed, and
    the line ends and byte-order mark are the ones it was read with."""
    front = note.raw_front
    if front is None:
        front = yaml.dump(
            _Top(note.meta),
            Dumper=_Dumper,
            sort_keys=False,
            allow_unicode=True,
            width=100,
        )
    if front and not front.endswith("\n"):
        front += "\n"
    text = f"{_FENCE}\n{front}{_FENCE}\n{note.body}"
    if note.newline != "\n":
        text = text.replace("\n", note.newline)
    return BOM + text if note.bom else text
