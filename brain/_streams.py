"""What the terminal hands brain and takes from it. Streams that cannot hold every character
(a non-UTF-8 locale, a Windows pipe): text that does not fit is replaced rather than ending the
command in a traceback after its work is done, and JSON is written in ASCII so that it stays
exact. Arguments that are not UTF-8 (bytes of a Latin-1 file through `$(cat …)`, a folder's
name): refused at once, before anything is written."""

from __future__ import annotations

import codecs
import io
import sys
from typing import TextIO


def speaks_unicode(stream: TextIO) -> bool:
    """Whether the stream's encoding can hold any character (UTF-8, UTF-16 or UTF-32)."""
    try:
        name = codecs.lookup(stream.encoding or "utf-8").name
    except LookupError:
        return False
    return name.startswith("utf")


def fit_streams() -> None:
    """Make stdout and stderr replace what their encoding cannot hold."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and not speaks_unicode(stream):
            stream.reconfigure(errors="replace")


def not_utf8(argv: list[str]) -> str | None:
    """What is wrong with the first argument that is not UTF-8 text, or None when all are.

    Python hands such bytes over as lone surrogates, which no note, index or path of the vault
    can hold: every later step would fail on them with a traceback.
    """
    for number, arg in enumerate(argv, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError as exc:
            offset = len(arg[: exc.start].encode("utf-8", "surrogateescape"))
            raw = arg.encode("utf-8", "surrogateescape")
            near = raw if len(raw) <= 48 else raw[max(0, offset - 24) : offset + 24]
            byte = f"byte 0x{raw[offset]:02x} at offset {offset}"
            return f"argument {number} is not UTF-8: {byte} ({near!r})"
    return None
