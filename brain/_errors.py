"""The BrainError family: every error a person can cause, with a message and a hint."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import traceback
from collections.abc import Callable, Iterator


class BrainError(Exception):
    """A mistake the person can fix; the CLI prints it as one line and exits 2."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message} ({self.hint})"


class InvalidInput(BrainError):
    """An argument, option or field has a value brain cannot accept."""


class VaultMissing(BrainError):
    """No vault where one was expected."""


class NotFound(BrainError):
    """An id or name that names nothing in the vault."""


class BrokenNote(BrainError):
    """A note file on disk that cannot be parsed (usually after a hand edit)."""

    def __init__(self, message: str, hint: str | None = None, *, line: int | None = None) -> None:
        super().__init__(message, hint)
        self.line = line  # the file's line where its front-matter breaks, when known


def broken_in_the_way(path: str, cause: BrokenNote) -> BrokenNote:
    """A broken note named where it stops a command (expand of its id, a write to its title)."""
    where = f"line {cause.line}" if cause.line else cause.message.removeprefix(f"{path}: ")
    return BrokenNote(f"{path} has broken front-matter ({where}): fix it or run `brain doctor`")


class ColdFileError(BrokenNote):
    """A cold-tier file that cannot be read back (damaged, or its dictionary is missing)."""


class VaultBusy(BrainError):
    """Another process holds the vault's writer lock for too long."""


class NoTerminal(BrainError):
    """Something that only the person at a terminal may approve, asked where there is none."""


class NotConfirmed(BrainError):
    """The person did not confirm at the terminal."""


class TurnedAway(BrainError):
    """A request the daemon refused without running it (it is stopping): safe to run again,
    in the caller's own process or by a fresh daemon."""


class MachineFault(BrainError):
    """The machine refused a write or a read: a full disk, a read-only file, an I/O error."""


_FULL = (errno.ENOSPC, errno.EDQUOT)
_REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)
_SQLITE_FULL = 13  # SQLITE_FULL, the primary result code of "database or disk is full"
_FULL_HINT = (
    "free some space and run it again: what was written before is kept and brain catches up "
    "its caches by itself; a note this command was writing may be saved already (`brain list`)"
)


def machine_fault(exc: BaseException, *, named: bool = True) -> MachineFault | None:
    """What the machine refused, said in one line: an OSError, SQLite's errors of its files, or
    tantivy's I/O error; None for anything else (a bug, which keeps its traceback). `named`:
    the file is named (not to a model, which must not learn a private note's file name)."""
    if isinstance(exc, BrokenPipeError):  # the reader went away: the entry point's to say
        return None
    if isinstance(exc, OSError) and exc.errno is not None:
        path = exc.filename2 or exc.filename  # a rename's target, not its hidden temp file
        where = f" {path}" if named and path else ""
        if exc.errno in _FULL:
            return MachineFault(f"the disk is full: no room to write{where}", _FULL_HINT)
        hint = "check the vault's permissions" if exc.errno in _REFUSED else None
        return MachineFault(f"{exc.strerror or os.strerror(exc.errno)}{where and ':'}{where}", hint)
    if isinstance(exc, sqlite3.OperationalError):
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        if code == _SQLITE_FULL:
            return MachineFault(
                "the disk is full: no room for brain's caches (.brain/)", _FULL_HINT
            )
        return MachineFault(
            f"brain's caches (.brain/) cannot be used: {exc}",
            "is the disk full or read-only? once it is not, brain mends them by itself",
        )
    # tantivy (the full-text index) reports the file system's refusals as a ValueError.
    if isinstance(exc, ValueError) and str(exc).startswith("An IO error occurred"):
        if "(os error 28)" in str(exc):
            return MachineFault("the disk is full: no room for brain's full-text index", _FULL_HINT)
        return MachineFault(
            f"brain's full-text index (.brain/fulltext): {exc if named else 'I/O error'}"
        )
    return None


@contextlib.contextmanager
def boundary(
    say: Callable[[str], None], *, debug: Callable[[str], None] | None = None
) -> Iterator[None]:
    """The one error boundary of every interface path (CLI commands, daemon sub-commands, the
    fast path): a BrainError, or what the machine refused (machine_fault: a full disk, a
    read-only file), becomes one line, said by `say` on stderr, and exit code 2.
    `debug` (for `--debug`) is handed its traceback first; the exit code stays 2."""
    try:
        yield
    except Exception as exc:
        said = exc if isinstance(exc, BrainError) else machine_fault(exc)
        if said is None:
            raise
        if debug is not None:
            debug("".join(traceback.format_exception(exc)).rstrip())
        say(str(said))
        raise SystemExit(2) from None
