"""Markdown with YAML front-matter: parse and render so an unchanged note round-trips exactly."""

from __future__ import annotations

from typing import Any

import yaml

from brain.errors import BrokenNote
from brain.model import Note

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Safe YAML that keeps timestamps as the strings a person wrote."""


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Safe YAML that writes timestamps back unquoted, as they were read."""


def _drop_timestamp_resolver(cls: Any) -> None:
    cls.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in cls.yaml_implicit_resolvers.items()
    }


_drop_timestamp_resolver(_Loader)
_drop_timestamp_resolver(_Dumper)


class _Top(dict):  # type: ignore[type-arg]
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
# Front-matter is metadata: bounded, so a hand-made note cannot cost minutes or gigabytes.
# A document's `sections` (written by the connector, one record per chunk, tables included)
# may take most of the front-matter; every other field is held to MAX_FIELD_CHARS.
MAX_FRONT_BYTES = 4 * 1024 * 1024
MAX_FIELD_CHARS = 64 * 1024
LARGE_FIELDS = frozenset({"sections"})


def parse(text: str, path: str) -> Note:
    """Read a note; a file without front-matter gets empty metadata, broken YAML raises."""
    if not text.startswith(_FENCE + "\n") and not text.startswith(_FENCE + "\r\n"):
        return Note(meta={}, body=text, path=path, raw_front=None)
    start = text.index("\n") + 1
    end = _closing_fence(text, start)
    if end < 0:
        raise BrokenNote(f"{path}: front-matter is not closed by a '---' line")
    raw = text[start:end]
    after = text.index("\n", end) + 1 if "\n" in text[end:] else len(text)
    size = len(raw.encode("utf-8"))
    if size > MAX_FRONT_BYTES:
        raise BrokenNote(f"{path}: front-matter is {size} bytes; the limit is {MAX_FRONT_BYTES}")
    try:
        meta = load_yaml(raw, path) if raw.strip() else {}
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 2})" if where is not None else ""
        reason = getattr(exc, "problem", None) or "invalid YAML"
        raise BrokenNote(f"{path}: broken front-matter{line}: {reason}") from None
    if not isinstance(meta, dict):
        raise BrokenNote(f"{path}: front-matter must be a mapping of fields")
    return Note(meta=meta, body=text[after:], path=path, raw_front=raw)


def load_yaml(raw: str, path: str, what: str = "front-matter") -> Any:
    """YAML as brain reads it from any file (front-matter, a field holding YAML, brain.yaml):
    safe, composed first and checked before anything is built. Raises BrokenNote (an alias,
    a field too large) or yaml.YAMLError.

    An alias makes one node stand for many: nested a few deep they expand to millions of
    values (451 bytes took 24 s and 2 GB), so a node met twice is refused, and each field
    is held to a size. Composing does not expand aliases, so the check costs what the text is.
    """
    loader = _Loader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}
        _check_nodes(node, path, what)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                size = value.end_mark.index - value.start_mark.index
                if size > MAX_FIELD_CHARS and key.value not in LARGE_FIELDS:
                    raise BrokenNote(
                        f"{path}: {what} field {str(key.value)[:60]!r} is {size} "
                        f"characters; the limit is {MAX_FIELD_CHARS}"
                    )
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _check_nodes(top: yaml.Node, path: str, what: str) -> None:
    seen: set[int] = set()
    todo = [top]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            line = node.start_mark.line + (2 if what == "front-matter" else 1)  # after the fence
            raise BrokenNote(
                f"{path}: {what} uses a YAML alias (line {line}); aliases are not allowed",
                "write the value out in full",
            )
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                todo.extend((key, value))


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
    """Write a note back; the front-matter text is reused as read when no field changed."""
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
    return f"{_FENCE}\n{front}{_FENCE}\n{note.body}"
