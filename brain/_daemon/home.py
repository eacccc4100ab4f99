"""The daemon's home under `.brain/`: the pid file it locks for its life, the socket it
listens on, and how it tells that a file is still the one it made."""

from __future__ import annotations

import contextlib
import fcntl
import os
import resource
import socket
from collections.abc import Iterator
from pathlib import Path

from brain._daemon.wire import bind_unix


def claim(path: Path) -> int | None:
    """Lock the pid file for this process's life and write the pid; None if it is taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        # A client cleaning up after a crash may have unlinked the file between open and lock.
        try:
            same = os.fstat(fd).st_ino == path.stat().st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)


@contextlib.contextmanager
def listening(path: Path) -> Iterator[socket.socket]:
    """The listening socket, mode 0600 from birth; removed on the way out."""
    # We hold the pid lock, so a socket file here is a crashed daemon's.
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        bind_unix(listener, path)
    finally:
        os.umask(old)
    path.chmod(0o600)
    inode = path.stat().st_ino
    listener.listen(64)
    try:
        yield listener
    finally:
        listener.close()
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_ino == inode:
                path.unlink()


def identity(path: Path) -> tuple[int, int] | None:
    """The file a path names now (device, inode); None if it is gone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def fd_identity(fd: int) -> tuple[int, int]:
    """The file an open descriptor holds (device, inode)."""
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def rss() -> int:
    """Resident memory of this process in bytes."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
