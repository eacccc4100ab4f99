"""What Linux's /proc says about another process: who it is, and whether it can run."""

from __future__ import annotations

import os
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


def lock_holders(fd: int) -> list[int]:
    """The processes holding an flock on the file open at `fd` (Linux's /proc/locks; none
    where it cannot be read)."""
    st = os.fstat(fd)
    mine = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    pids = []
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[1] != "FLOCK":
            continue  # (a waiter's line reads "N: -> FLOCK …")
        try:
            major, minor, inode = fields[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == mine:
                pids.append(int(fields[4]))
        except ValueError:
            continue
    return sorted(set(pids))


def described(pid: int) -> str:
    """A process as a person can find it: its pid, its command line, and whether it is stopped."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        parts = [" ".join(w.decode(errors="replace").split()) for w in words if w]
        # The interpreter and the script by name: `python brain import …`, not two long paths.
        command = " ".join([*(Path(w).name for w in parts[:2]), *parts[2:]])
    except OSError:
        command = ""
    shown = command if len(command) <= 80 else command[:79] + "…"
    said = f"pid {pid}" + (f", `{shown}`" if shown else "")
    return said + (", stopped" if stopped(pid) else "")
