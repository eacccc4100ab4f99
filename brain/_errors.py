"""The BrainError family: every error a person can cause, with a message and a hint."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def boundary(
    say: Callable[[str], None], *, debug: Callable[[str], None] | None = None
) -> Iterator[None]:
    """The one error boundary of every interface path (CLI commands, daemon sub-commands, the
    fast path): a BrainError becomes one line, said by `say` on stderr, and exit code 2.
    `debug` (for `--debug`) is handed its traceback first; the exit code stays 2."""
    try:
        yield
    except BrainError as exc:
        if debug is not None:
            debug("".join(traceback.format_exception(exc)).rstrip())
        say(str(exc))
        raise SystemExit(2) from None
