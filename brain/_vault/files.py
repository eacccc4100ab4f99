"""Atomic file writes and the one-writer-per-vault lock."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import fcntl
import functools
import os
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import cast

from brain._errors import VaultBusy
from brain._model import Steps
from brain._processes import described, lock_holders
from brain._streams import held


def atomic_write(path: Path, data: bytes | str) -> None:
    """Temp file, fsync, rename, fsync of the folder: a crash leaves the old file or the new,
    and a Ctrl-C or SIGTERM waits for the rename (streams.held), leaving no temp file."""
    with held():
        tmp = write_temp(path, data, durable=True)
        try:
            os.replace(tmp, path)
        except BaseException:
            discard(tmp)
            raise
    fsync_dir(path.parent)


def write_temp(path: Path, data: bytes | str, *, durable: bool) -> Path:
    """`data` in a new temp file beside `path` (hidden: every walk skips a dot file), fsynced
    if `durable`; the caller renames it over `path` once it is on disk."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
    except BaseException:
        discard(Path(tmp))
        raise
    return Path(tmp)


def discard(tmp: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def make_durable(files: Sequence[Path]) -> None:
    """Every one of these files' data on disk. Where the system has it (Linux), one syncfs of
    each file system that holds them: one journal commit for the lot, where an fsync each
    waits for one each (~0.03 against 0.3 ms a file idle here, and 1.3-4 ms a file beside
    the models during an ingest; docs/lab/ingest.md). Else an fsync each."""
    syncfs = _syncfs()
    if syncfs is None:
        for path in files:
            _fsync(path, os.fsync)
        return
    folders: dict[int, Path] = {}  # a folder on each file system the files are on
    for folder in dict.fromkeys(path.parent for path in files):
        folders.setdefault(folder.stat().st_dev, folder)
    for folder in folders.values():
        _fsync(folder, syncfs)


def _fsync(path: Path, sync: Callable[[int], int | None]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        if sync(fd) not in (0, None):  # syncfs says -1 and sets errno
            code = ctypes.get_errno()
            raise OSError(code, f"syncfs: {os.strerror(code)}", str(path))
    finally:
        os.close(fd)


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """libc's syncfs(2), if this system's C library has it (glibc, musl); else None."""
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return cast("Callable[[int], int]", function)


def remove_file(path: Path) -> None:
    """Delete a file and make the deletion durable."""
    try:
        path.unlink()
    except FileNotFoundError:
        return  # already gone (perhaps with its folder): nothing to make durable
    fsync_dir(path.parent)


# Folders whose fsync a bulk write postponed (None: not in a bulk write; this thread's own).
_deferred: contextvars.ContextVar[set[Path] | None] = contextvars.ContextVar(
    "deferred_dir_sync", default=None
)


@contextlib.contextmanager
def deferred_dir_sync() -> Iterator[None]:
    """Inside: each folder is fsynced once, at the end, not after every rename in it.

    Every file is still written whole (temp, fsync, rename), so a crash never leaves a torn
    file; it may lose the renames made since the block began, which a catch-up then notices.
    """
    if _deferred.get() is not None:  # nested: the outer block syncs
        yield
        return
    token = _deferred.set(set())
    try:
        yield
    finally:
        folders = _deferred.get() or set()
        _deferred.reset(token)
        for folder in sorted(folders):
            with contextlib.suppress(FileNotFoundError):
                fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    pending = _deferred.get()
    if pending is not None:
        pending.add(folder)
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# The owner alone may read what brain keeps under `.brain/`: files 0600, folders 0700.
_OTHERS = 0o077
_umask_lock = threading.Lock()
_umask_depth = 0
_umask_saved = 0


@contextlib.contextmanager
def owner_only() -> Iterator[None]:
    """Inside: every file or folder this process creates is its owner's alone, whatever the
    umask. Wraps the places caches are born (SQLite files, tantivy segments, faiss files):
    their libraries create files with the process umask, so the umask is the one lever.

    The umask belongs to the whole process: nested and concurrent uses (the daemon's threads)
    share one tightening, undone when the last of them leaves. Meanwhile other threads create
    private files too, which errs the safe way.
    """
    global _umask_depth, _umask_saved
    with _umask_lock:
        if _umask_depth == 0:
            _umask_saved = os.umask(_OTHERS)
            os.umask(_umask_saved | _OTHERS)
        _umask_depth += 1
    try:
        yield
    finally:
        with _umask_lock:
            _umask_depth -= 1
            if _umask_depth == 0:
                os.umask(_umask_saved)


def keep_private(folder: Path) -> None:
    """Make `folder` (`.brain/`) 0700 and tighten anything in it that others could read: a
    vault made by an older brain, or a file some other tool left, is private from this open on.
    """
    with owner_only():
        folder.mkdir(parents=True, exist_ok=True)
    for here, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            _tighten(Path(here) / name)
    _tighten(folder)


def _tighten(path: Path) -> None:
    try:
        st = path.lstat()
        if st.st_mode & _OTHERS and not stat.S_ISLNK(st.st_mode):
            path.chmod(stat.S_IMODE(st.st_mode) & ~_OTHERS)
    except (FileNotFoundError, PermissionError):
        pass  # gone meanwhile (a merged segment), or not ours to change: nothing to do


def _busy_hint(path: Path, holders: list[str]) -> str:
    if any(h.endswith(", stopped") for h in holders):
        return "a stopped process holds it: `kill -CONT PID` lets it finish, or end it"
    return f"try again when it is done (lock file {path})"


class WriterLock:
    """An OS lock on a file under `.brain/`: one writing process per vault at a time.

    Re-entrant within one process, so a use case may call another that also writes.
    """

    SLOW = 1.0  # seconds of waiting for another process before `steps` is told

    def __init__(self, path: Path, timeout: float = 60.0) -> None:
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None
        self._depth = 0
        # Told ("waiting", 0, 1) when another process keeps this one waiting, then
        # ("waiting", 1, 1) when the wait ends (model.Steps).
        self.steps: Steps | None = None

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

    @contextlib.contextmanager
    def turn(self, name: str, waiting: Callable[[], None] | None = None) -> Iterator[None]:
        """One process at a time for a long job (`sleep`), beside the writer lock: a second
        one calls `waiting`, then waits its turn."""
        path = self.path.parent / f"{name}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting is not None:
                    waiting()
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        began = time.monotonic()
        delay = 0.001
        said = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = time.monotonic() - began
                    if waited > self.timeout:
                        holders = [described(pid) for pid in lock_holders(fd)]
                        os.close(fd)
                        who = f" ({'; '.join(holders)})" if holders else ""
                        raise VaultBusy(
                            f"another brain process{who} has held the vault lock for "
                            f"{self.timeout:g} s",
                            _busy_hint(self.path, holders),
                        ) from None
                    if not said and waited > self.SLOW and self.steps is not None:
                        said = True
                        self.steps("waiting", 0, 1)
                    time.sleep(delay)
                    delay = min(delay * 2, 0.02)
        finally:
            if said and self.steps is not None:
                self.steps("waiting", 1, 1)
        self._fd = fd

    def _release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
