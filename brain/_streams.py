"""What the terminal hands brain and takes from it. Streams that cannot hold every character
(a non-UTF-8 locale, a Windows pipe): text that does not fit is replaced rather than ending the
command in a traceback after its work is done, and JSON is written in ASCII so that it stays
exact. Arguments that are not UTF-8 (bytes of a Latin-1 file through `$(cat …)`, a folder's
name): refused at once, before anything is written. A one-shot command asked to end (Ctrl-C,
SIGTERM, SIGHUP) unwinds, so that each write in flight ends whole or not at all, and says so."""

from __future__ import annotations

import codecs
import contextlib
import io
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, TextIO

# What a person reads for each signal that ends a command; the exit code is 128 + its number.
SIGNALS: dict[int, str] = {signal.SIGINT: "Ctrl-C", signal.SIGTERM: "SIGTERM"}
if hasattr(signal, "SIGHUP"):  # not on Windows
    SIGNALS[signal.SIGHUP] = "SIGHUP: its terminal closed"
# Commands that a second run finishes, doing only what the first left undone.
RESUMABLE = ("import", "sync", "reindex", "sleep")


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised in the main thread wherever it is, to unwind as Ctrl-C does."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


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


@contextlib.contextmanager
def ending_as_ctrl_c() -> Iterator[None]:
    """Inside: SIGTERM and SIGHUP raise Stopped, as Ctrl-C raises KeyboardInterrupt, so a
    command killed by `timeout`, `kill` or a closed terminal runs its `finally` blocks (temp
    files renamed into place or removed, transactions rolled back) instead of dying mid-write.
    A signal ignored already (`nohup`) stays ignored; outside the main thread nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    taken: dict[int, Any] = {}

    def stop(signum: int, _frame: FrameType | None) -> None:
        # Once is enough: a second SIGTERM (or the SIGHUP of a closing terminal after it) must
        # not cut the unwinding short. Ctrl-C still interrupts it, as a person may insist.
        for each in taken:
            if each != signal.SIGINT:
                signal.signal(each, signal.SIG_IGN)
        if _held.depth:  # in the few steps of a write that must end together: at their end
            _held.waiting = signum
            return
        raise Stopped(signum) if signum != signal.SIGINT else KeyboardInterrupt()

    for signum in SIGNALS:
        default = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        if signal.getsignal(signum) is default:
            taken[signum] = signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum, before in taken.items():
            signal.signal(signum, before)


class _Held(threading.local):
    depth = 0
    waiting: int | None = None


_held = _Held()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A few steps that must end together, such as a temp file made and recorded where its
    cleanup will find it: a stop arriving inside (Ctrl-C, SIGTERM, SIGHUP, while
    `ending_as_ctrl_c` is on) is raised at their end, not between two of them. Signals reach
    the main thread only, so only its steps wait."""
    _held.depth += 1
    try:
        yield
    finally:
        _held.depth -= 1
        if not _held.depth and _held.waiting is not None:
            signum, _held.waiting = _held.waiting, None
            raise Stopped(signum) if signum != signal.SIGINT else KeyboardInterrupt()


def interrupted(command: str, signum: int) -> str:
    """The one line a command ended by a signal says on stderr."""
    who = f"brain {command}" if command else "brain"
    said = f"{who}: interrupted ({SIGNALS.get(signum, f'signal {signum}')}); "
    said += "the vault is whole (each file is written whole or not at all)"
    if command in RESUMABLE:
        return f"{said}; run it again to finish: it does only what is left"
    return f"{said}; `brain doctor` checks it"


def exit_code(signum: int) -> int:
    """The shell's code for a command ended by this signal: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + signum
