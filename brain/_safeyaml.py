"""The one checked YAML loader: every YAML brain reads from a file (a note's front-matter, a
field holding YAML, brain.yaml) is read here, safely and within bounds."""

from __future__ import annotations

from typing import Any

import yaml

from brain._errors import BrokenNote

# A document's `sections` (written by the connector, one record per chunk, tables included)
# may take most of a front-matter; every other field is held to MAX_FIELD_CHARS.
MAX_FIELD_CHARS = 64 * 1024
LARGE_FIELDS = frozenset({"sections"})

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[misc]  # the base is Any: C or Python loader
    """Safe YAML that keeps timestamps as the strings a person wrote."""


def drop_timestamp_resolver(cls: Any) -> None:
    """Timestamps stay strings (a loader reads them as written; a dumper writes them back)."""
    cls.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in cls.yaml_implicit_resolvers.items()
    }


drop_timestamp_resolver(_Loader)


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
        try:
            return loader.construct_document(node)
        except (ValueError, OverflowError, RecursionError) as exc:
            # A value Python itself refuses to build (an integer of 5,000 digits).
            reason = str(exc).split(":", 1)[0][:120]
            raise BrokenNote(f"{path}: {what} holds a value too large to read ({reason})") from None
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
