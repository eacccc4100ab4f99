"""The terminal's streams when they cannot hold every character (a non-UTF-8 locale, a
Windows pipe): text that does not fit is replaced rather than ending the command in a traceback
after its work is done, and JSON is written in ASCII so that it stays exact."""

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
