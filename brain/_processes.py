"""What Linux's /proc says about another process: who it is, and whether it can run."""

from __future__ import annotations

from pathlib import Path


def _fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name; None where it cannot be read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def process_mark(pid: int) -> str | None:
    """A process named so that a later process of the same pid is not taken for it: pid
    and start time; None where that cannot be read."""
    fields = _fields(pid)
    return f"{pid} {fields[19]}" if fields is not None and len(fields) > 19 else None


def stopped(pid: int | None, *, or_dead: bool = False) -> bool:
    """Whether a process is stopped (SIGSTOP, Ctrl-Z, a debugger): it does nothing until it is
    continued. `or_dead`: or dead and not yet reaped. False where /proc cannot say."""
    fields = None if pid is None else _fields(pid)
    states = ("T", "t", "Z", "X") if or_dead else ("T", "t")
    return fields is not None and bool(fields) and fields[0] in states
