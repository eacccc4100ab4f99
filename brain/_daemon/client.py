"""The thin client: find the vault's daemon, start it on need, clean up after a crash, call it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from brain._clock import zone_name
from brain._daemon import daemon_off, log_path, opening_said, pid_path, socket_path
from brain._daemon.wire import (
    VERSION,
    TooBig,
    WireError,
    check_peer,
    connect_unix,
    peer_pid,
    raise_error,
    receive,
    send,
)
from brain._errors import BrainError, TurnedAway
from brain._processes import stopped
from brain._vault.files import keep_private
from brain._version import build

START_WAIT = 30.0  # seconds a client waits for a daemon it started to answer
SLOW = 1.0  # seconds a client waits in silence before it says why (no wait unsaid past 2 s)
# How a person is told of a wait that outlasts SLOW: entered with what is waited for, left
# when the wait ends (the CLI shows a status line; None: nobody is told).
Waiting = Callable[[str], AbstractContextManager[None]]


class DaemonUnavailable(BrainError):
    """No daemon answers for this vault (none running, or it cannot start)."""


class DaemonInTheWay(DaemonUnavailable):
    """A daemon holds this vault but will not serve this process, and a new one would not
    start beside it: this process does the work itself."""


class DaemonStopped(DaemonInTheWay):
    """The daemon's process is stopped (SIGSTOP): it would answer nothing until continued."""


class DaemonLost(BrainError):
    """The daemon went away after a request was sent: it may or may not have been done."""


class DaemonClient:
    """One connection to the daemon; requests go one at a time."""

    def __init__(self, sock: socket.socket, root: Path, waiting: Waiting | None = None) -> None:
        self.sock = sock
        self.root = root
        self.waiting = waiting
        self.pid = peer_pid(sock)

    @classmethod
    def connect(
        cls, root: Path, waiting: Waiting | None = None, *, agree: bool = True
    ) -> DaemonClient:
        """Connect to the running daemon (checking it is this user's), else DaemonUnavailable.
        With `agree`, only to one that runs the same code as this process (`_agree`)."""
        path = socket_path(root)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connect_unix(sock, path)
            check_peer(sock)
        except OSError as exc:
            sock.close()
            raise DaemonUnavailable(f"no daemon answers at {path}: {exc.strerror}") from None
        except BrainError:
            sock.close()
            raise
        client = cls(sock, root, waiting)
        if stopped(client.pid):  # connected by the kernel, but it would never answer
            sock.close()
            raise DaemonStopped(
                f"brain's daemon (pid {client.pid}) is stopped",
                f"`kill -CONT {client.pid}` resumes it",
            )
        if agree:
            try:
                client._agree()
            except BaseException:
                sock.close()
                raise
        return client

    def _agree(self) -> None:
        """Make sure the daemon runs the same code as this process: an upgrade (or an edit of
        a checkout) since it started would have it refuse what a newer command sends, or
        answer as the older code did. A daemon whose code is no longer what is installed
        steps down, and DaemonUnavailable, once it is gone, has a fresh one started; one
        that runs what is installed leaves this older process to do its work itself."""
        mine = build()
        info = self.call("ping", {"build": mine})
        theirs = info.get("build")
        if theirs == mine:
            return
        if theirs is None:  # a daemon from before builds were compared: older code
            self.call("stop")
        elif not info.get("stepping_down"):
            raise DaemonInTheWay(
                f"brain's daemon (pid {self.pid}) runs the brain installed now, and this "
                "process other code (older, or another copy of brain)",
                "a command started now uses the daemon; this one works in its own process",
            )
        self.sock.close()
        _gone(self.root, self.pid, self.waiting)
        raise DaemonUnavailable(f"brain's daemon (pid {self.pid}) ran other code; it stepped down")

    def call(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """Send one request and wait for its reply; a BrainError reply is raised here."""
        if _hung_up(self.sock):  # it ended since the last reply (moved vault, step down, stop)
            raise DaemonUnavailable("the daemon closed the connection before this request")
        try:
            # The zone this command runs in rides along: the daemon's clock tells the time
            # there for this call (a dated note, "yesterday"), whatever zone it started in.
            send(self.sock, {"v": VERSION, "op": op, "args": args or {}, "zone": zone_name()})
        except OSError as exc:
            raise DaemonUnavailable(f"the daemon closed the connection: {exc}") from None
        try:
            with contextlib.ExitStack() as told:
                said = False
                while not _answers(self.sock, SLOW):
                    if stopped(self.pid):
                        raise DaemonLost(
                            f"brain's daemon (pid {self.pid}) was stopped while doing {op!r}; "
                            "it does it when it continues",
                            f"`kill -CONT {self.pid}` resumes it; then check with `brain list` "
                            "whether it was done",
                        )
                    if self.waiting is not None and op != "ping" and not said:
                        said = True
                        told.enter_context(self.waiting(self._busy(op)))
                reply = receive(self.sock)
        except (OSError, WireError) as exc:
            raise DaemonLost(
                f"the daemon stopped while doing {op!r}: {exc}",
                "check with `brain list` whether it was done",
            ) from None
        if reply is None:
            raise DaemonLost(
                f"the daemon stopped while doing {op!r}",
                "check with `brain list` whether it was done",
            )
        if not reply.get("ok"):
            raise_error(reply.get("error") or {})
        return reply.get("result")

    def _busy(self, op: str) -> str:
        """What the daemon is busy with, asked on a connection of its own (a ping is answered
        beside the work)."""
        try:
            other = DaemonClient.connect(self.root, agree=False)
            try:
                info = other.call("ping")
            finally:
                other.close()
        except BrainError:
            return f"waiting for brain's daemon to answer {op!r}"
        doing = info.get("doing") or f"answering {op!r}"
        return f"waiting for brain's daemon (pid {info.get('pid')}): {doing}"

    def close(self) -> None:
        self.sock.close()


def _hung_up(sock: socket.socket) -> bool:
    """Whether the daemon closed this connection while it was idle: nothing sent now would
    be read, so the request may go to a fresh daemon instead, never done twice."""
    if not _answers(sock, 0):
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset by a daemon that ended


def _answers(sock: socket.socket, seconds: float) -> bool:
    """Whether a reply begins to arrive within `seconds`."""
    ready, _, _ = select.select([sock], [], [], seconds)
    return bool(ready)


def _gone(root: Path, pid: int | None, waiting: Waiting | None) -> None:
    """Wait for a daemon stepping down to let go of the vault (it ends the job it is doing
    first); DaemonInTheWay if it still holds it after START_WAIT."""
    deadline = time.monotonic() + START_WAIT
    slow: float | None = time.monotonic() + SLOW
    with contextlib.ExitStack() as told:
        while running_pid(root) is not None:
            if time.monotonic() > deadline:
                raise DaemonInTheWay(f"brain's daemon (pid {pid}) did not step down in time")
            if waiting is not None and slow is not None and time.monotonic() > slow:
                slow = None
                told.enter_context(waiting(f"waiting for brain's old daemon (pid {pid}) to exit"))
            time.sleep(0.02)


def clean_stale(root: Path) -> bool:
    """Remove the socket and pid file a crashed daemon left; True if there were any.

    A live daemon holds a lock on its pid file for its whole life, so a pid file that can be
    locked belongs to no one, whatever pid it names (pids are reused).
    """
    pid_file = pid_path(root)
    try:
        fd = os.open(pid_file, os.O_RDWR)
    except FileNotFoundError:
        fd = None
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # alive (perhaps still starting)
        found = False
        for path in (socket_path(root), pid_file):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                found = True
        return found
    finally:
        if fd is not None:
            os.close(fd)


def running_pid(root: Path) -> int | None:
    """The pid of the live daemon of this vault, or None."""
    pid_file = pid_path(root)
    try:
        fd = os.open(pid_file, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            # Read through the descriptor already open: a daemon that is just exiting may
            # remove the file between the lock test and a second open by name.
            text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else None
        return None
    finally:
        os.close(fd)


def spawn(root: Path) -> subprocess.Popen[bytes]:
    """Start the daemon detached from this process and its terminal."""
    log = log_path(root)
    keep_private(log.parent)
    # One query at a time: faiss's OpenMP threads only fight each other over a small machine's
    # cores (a 10k-note search takes 12 ms with one thread, 29 ms with two, here).
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with os.fdopen(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab") as out:
        return subprocess.Popen(
            # `-P`: a `brain/` package in the folder the client was run from is never imported.
            [sys.executable, "-P", "-m", "brain", "daemon", "run", "--vault", os.fspath(root)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            close_fds=True,
            env=env,
        )


def start(root: Path, wait: float = START_WAIT, waiting: Waiting | None = None) -> DaemonClient:
    """Start the daemon (unless one runs) and connect to it, else DaemonUnavailable. A start
    that outlasts SLOW is told to `waiting`."""
    try:
        return DaemonClient.connect(root, waiting)
    except DaemonInTheWay:
        raise  # it holds its lock: a new one would not start
    except DaemonUnavailable:
        pass
    clean_stale(root)
    try:
        since = log_path(root).stat().st_size  # what the new daemon logs comes after
    except FileNotFoundError:
        since = 0
    process = spawn(root)
    with contextlib.ExitStack() as told:
        return _started(root, process, wait, told, waiting, since)


def _started(
    root: Path,
    process: subprocess.Popen[bytes],
    wait: float,
    told: contextlib.ExitStack,
    waiting: Waiting | None,
    since: int = 0,
) -> DaemonClient:
    """Connect once the daemon just spawned listens; `told` holds the wait said, if any, and
    then what the daemon does before it listens (its log after byte `since`), if it says."""
    deadline = time.monotonic() + wait
    slow: float | None = time.monotonic() + SLOW
    delay = 0.01
    doing: str | None = None
    read_log = time.monotonic() + SLOW  # a start of a moment says nothing
    while True:
        try:
            return DaemonClient.connect(root, waiting)
        except DaemonInTheWay:
            raise
        except DaemonUnavailable:
            pass
        if waiting is not None and slow is not None and time.monotonic() > slow:
            slow = None
            said = f"starting brain's daemon for {root} (its log: {log_path(root)})"
            told.enter_context(waiting(said))
        late = time.monotonic() > min(read_log, deadline)  # looked at before giving up too
        if late and (now := opening_said(root, since)) != doing:
            doing = now
            if now is not None and waiting is not None:  # one status line at a time
                told.close()
                told.enter_context(
                    waiting(f"brain's daemon is bringing its caches up to date first: {now}")
                )
        if doing is not None:  # alive and at work: this process would only wait for its lock
            deadline = max(deadline, time.monotonic() + SLOW)
        code = process.poll()
        if code is not None and running_pid(root) is None:
            # It exited without a daemon running: another one may have just won the race.
            with contextlib.suppress(DaemonUnavailable):
                return DaemonClient.connect(root, waiting)
            raise DaemonUnavailable(
                f"the daemon could not start (exit code {code})", f"see {log_path(root)}"
            )
        if time.monotonic() > deadline:
            raise DaemonUnavailable(
                f"the daemon did not answer within {wait:.0f} s", f"see {log_path(root)}"
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def connect_or_start(
    root: Path, env: Mapping[str, str], waiting: Waiting | None = None
) -> DaemonClient | None:
    """A client of the running daemon, else one started now if brain.yaml allows; else None.

    None means: use the core in this process (BRAIN_DAEMON=off, no daemon and it may not
    start, or it cannot).
    """
    if daemon_off(env):
        return None
    try:
        return DaemonClient.connect(root, waiting)
    except DaemonInTheWay:
        return None  # stopped, or running newer code: this process does the work
    except DaemonUnavailable:
        pass
    except BrainError:
        return None  # a socket that is not this user's: never talk to it
    from brain import _settings as settings_mod
    from brain._daemon import daemon_settings

    wanted = daemon_settings(settings_mod.load(root))
    if not wanted.autostart:
        return None
    try:
        return start(root, waiting=waiting)
    except (BrainError, OSError):
        return None  # the caller falls back to the core in its own process


class McpForwarder:
    """Sends the tool calls of one `brain serve` to the daemon, under its own MCP session.

    Only the names in `allowed` (the MCP allowlist) ever go; the daemon checks them again.
    When the daemon cannot be reached (nor restarted) before a call is sent, turns it away unrun
    (it is stopping), or the call is too big for its socket (a text the vault's limits allow),
    it runs on a fresh daemon or in this process instead, with the same tool.
    """

    def __init__(
        self,
        root: Path,
        env: Mapping[str, str],
        session: str,
        partition: str,
        allowed: tuple[str, ...],
    ) -> None:
        self.root = root
        self.env = env
        # Reached (or started) on the first call, not before: the host's handshake never waits.
        self.client: DaemonClient | None = None
        self.session = session
        self.partition = partition
        self.allowed = allowed

    async def __call__(
        self, tool: str, arguments: dict[str, Any], local: Callable[..., Awaitable[Any]]
    ) -> Any:
        if tool not in self.allowed:
            raise BrainError(f"tool {tool!r} is not on the allowlist")
        request = {
            "session": self.session,
            "partition": self.partition,
            "tool": tool,
            "arguments": arguments,
        }
        for _attempt in range(2):
            if self.client is None:
                self.client = connect_or_start(self.root, self.env)
                if self.client is None:
                    break
            try:
                result = self.client.call("mcp", request)
            except (DaemonUnavailable, TurnedAway):  # not run: safe to try again, or here
                self.client.close()
                self.client = None
                continue
            except TooBig:  # nothing was sent either: a text the vault allows runs here
                break
            if tool == "partition_use":  # a daemon started afresh resumes in the same partition
                self.partition = str(result.get("name", self.partition))
            return result
        return await local(**arguments)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
