"""Atomic file writes and the one-writer-per-vault lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from brain.errors import VaultBusy


def atomic_write(path: Path, data: bytes | str) -> None:
    """Temp file, fsync, rename, fsync of the folder: a crash leaves the old file or the new."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def remove_file(path: Path) -> None:
    """Delete a file and make the deletion durable."""
    try:
        path.unlink()
    except FileNotFoundError:
        return  # already gone (perhaps with its folder): nothing to make durable
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriterLock:
    """An OS lock on a file under `.brain/`: one writing process per vault at a time.

    Re-entrant within one process, so a use case may call another that also writes.
    """

    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None
        self._depth = 0

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        if self._depth == 0:
            self._acquire()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._release()

    @property
    def held(self) -> bool:
        return self._depth > 0

    def _acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise VaultBusy(
                        f"another brain process has held the vault lock for {self.timeout:.0f} s",
                        f"lock file {self.path}",
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)
        self._fd = fd

    def _release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
