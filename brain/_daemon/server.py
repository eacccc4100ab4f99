"""The daemon: one warm Brain per vault, served over a peer-checked Unix socket until idle.

It holds a lock on `.brain/daemon.pid` for its whole life (the sign that it is alive, whatever
pid the file names), listens on `.brain/daemon.sock` (mode 0600, every peer checked against
this user), runs requests one at a time on the thread that owns its one Brain (warm embedder,
open caches), follows confirmed connectors and hand edits with a watcher, and exits when idle.
It takes the vault's writer lock per write, like any brain process, so the person's own
administrative commands (sleep, connect, tier, set) still run beside it from the CLI.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._daemon import DaemonSettings, Opening, daemon_settings, pid_path, socket_path
from brain._daemon.home import claim, fd_identity, identity, listening, rss
from brain._daemon.operations import Operations
from brain._daemon.wire import (
    VERSION,
    WireError,
    check_peer,
    receive,
    reply_error,
    reply_ok,
    send,
)
from brain._errors import BrainError, InvalidInput, TurnedAway, machine_fault
from brain._sources.connectors import connected
from brain._version import build, fingerprint

if TYPE_CHECKING:
    from brain._brain import Brain

Log = Callable[[str], None]
# Seconds between walks for hand edits before a read. With the watcher on, each edit is caught
# up by its path at once (Context.catch_up_paths), and the read-time walk (~30 ms at 10k notes,
# ~2 s at 100k) is only a rare safety net against lost events.
CATCH_UP_EVERY = 1.0
CATCH_UP_WATCHED = 600.0
# Seconds the daemon waits for its watcher to queue its first catch-up before it takes calls.
WATCH_START_WAIT = 30.0
_TICK = 0.25  # seconds between idle checks


class Daemon:
    """Serves one Brain; `serve()` blocks until stopped or idle.

    The Brain lives on the thread that calls `serve()` (its SQLite handles belong to that
    thread): connection threads and the watcher hand it work through a queue, one job at a time.
    """

    def __init__(self, brain: Brain, config: DaemonSettings, log: Log) -> None:
        self.brain = brain
        self.config = config
        self.log = log
        self.ops = Operations(brain, self._take_config, self._take_connectors)
        self.stopping = threading.Event()
        self.started = time.time()
        self.requests = 0
        self.refused = 0
        self.model_loaded = brain.running().embedding_model()[0] == "none"
        self.watching: list[str] = []
        self.watcher: Any = None  # the Watcher, for its last catch-up
        self._jobs: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
        self._active = 0
        self._unanswered = 0  # requests received and not yet answered
        self._count = threading.Lock()
        self._last = time.monotonic()
        # The pid file this daemon locked: if it goes (its .brain/ or the whole vault deleted)
        # or another takes its name, a new daemon may start beside this one: two writers.
        self._home = identity(pid_path(brain.root))
        self._home_checked = 0.0
        self._watch_queued = threading.Event()  # the watcher's first catch-up waits its turn
        self._holding = False  # the catalog's briefs held in memory (_hold_briefs)
        self._watch_run: tuple[threading.Event, threading.Thread] | None = None  # stop, thread
        self._followed = 0.0  # when brain.yaml was last looked at while idle
        self.doing = ""  # what the Brain's thread is busy with, for a client kept waiting
        brain.running().tell_steps(self._step)

    def submit(self, job: Callable[[], Any], queued: threading.Event | None = None) -> Any:
        """Run a job on the Brain's thread and wait for its result (or its exception);
        `queued` is set once the job waits its turn."""
        if self.stopping.is_set():
            raise _turned_away()
        done: Future[Any] = Future()
        self._jobs.put((job, done))
        if queued is not None:
            queued.set()
        return done.result()

    # the loops ----------------------------------------------------------------------
    def serve(self, listener: socket.socket) -> None:
        self._jobs.put((self._warm, Future()))
        watcher = self._watch_run = self._watch()
        if watcher is not None:
            # Its first catch-up (once its observer runs) is what makes it the catch-up from
            # then on: calls are taken once it waits its turn, and `_warm` walks no more. In a
            # big vault that job checks the folders only, and the full walk (~15 s at 1M
            # files) runs on the watcher's thread while calls are served (Watcher._start). A
            # watcher that dies or a daemon told to stop meanwhile is not waited for.
            deadline = time.monotonic() + WATCH_START_WAIT
            while not self._watch_queued.wait(_TICK) and watcher[1].is_alive():
                if self.stopping.is_set() or time.monotonic() > deadline:
                    break
        acceptor = threading.Thread(target=self._accept, args=(listener,), daemon=True)
        acceptor.start()
        try:
            while not self.stopping.is_set():
                self._check_home()
                self._hold_briefs()
                try:
                    job, done = self._jobs.get(timeout=_TICK)
                except queue.Empty:
                    self._check_idle()
                    continue
                if self.stopping.is_set():  # its home went: no more writes from this one
                    done.set_exception(_turned_away())
                    continue
                try:
                    done.set_result(job())
                except BaseException as exc:  # handed to the waiting thread, which decides
                    done.set_exception(exc)
        finally:
            self.stopping.set()
            watcher = self._watch_run  # brain.yaml may have started or stopped one since
            if watcher is not None:
                watcher[0].set()
            # Nobody waits forever on a stopping daemon: late jobs are turned away.
            deadline = time.monotonic() + 5
            while acceptor.is_alive() or (watcher is not None and watcher[1].is_alive()):
                self._refuse_jobs(0.05)
                if time.monotonic() > deadline:
                    break
            # Every request turned away is answered before this process ends (its client then
            # runs it elsewhere); a client that got no answer could not know it was not run.
            while self._unanswered and time.monotonic() < deadline:
                self._refuse_jobs(0.05)
            self._refuse_jobs(0)
            with contextlib.suppress(BrainError, OSError):
                self.brain.running().watched(False)  # nothing follows the files once this one ends
            self.ops.close()

    def _refuse_jobs(self, wait: float) -> None:
        try:
            while True:
                _job, done = self._jobs.get(timeout=wait) if wait else self._jobs.get_nowait()
                done.set_exception(_turned_away())
        except queue.Empty:
            return

    def _accept(self, listener: socket.socket) -> None:
        listener.settimeout(_TICK)
        while not self.stopping.is_set():
            try:
                conn, _addr = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                break
            try:
                check_peer(conn)
            except (BrainError, OSError) as exc:
                self.refused += 1
                self.log(f"refused a connection: {exc}")
                conn.close()
                continue
            conn.settimeout(None)
            with self._count:
                self._active += 1
            threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()

    def _hold_briefs(self) -> None:
        """Hold the catalog's briefs in memory (indexes/held.py), read on a thread of their own
        once the watcher's first catch-up is done: read beside the walk aside, their long-lived
        objects and the walk's short-lived ones shared the allocator's arenas, and the daemon
        kept ~0.5 GB more at 1M memories when the walk's were freed. A watcher whose first
        catch-up failed is waited for a minute at most."""
        if self._holding:
            return
        walked = self.watcher is None or bool(self.watcher.first_catch_up)
        if walked or time.time() - self.started > 60:
            self._holding = True
            self.brain.running().hold_briefs()

    def _check_idle(self) -> None:
        now = time.monotonic()
        if now - self._followed > 1.0:  # a new idle_seconds counts even with no request
            self._followed = now
            try:
                self.ops.follower.check()
            except BrainError as exc:  # broken for now: the next request says so
                self.log(f"{exc}")
        with self._count:
            idle = self._active == 0 and time.monotonic() - self._last > self.config.idle_seconds
        if idle:
            self.log(f"idle for {self.config.idle_seconds:g} s; exiting")
            self.stopping.set()

    def _check_home(self) -> None:
        """Stop if this daemon's pid file is gone or is no longer the one it locked."""
        now = time.monotonic()
        if self._home is None or now - self._home_checked < _TICK:
            return
        self._home_checked = now
        found = identity(pid_path(self.brain.root))
        if found != self._home:
            why = "was deleted" if found is None else "belongs to another daemon"
            self.log(f"{pid_path(self.brain.root)} {why}; exiting")
            self.stopping.set()

    def _serve_conn(self, conn: socket.socket) -> None:
        sessions: set[str] = set()  # the MCP sessions of a `brain serve` on this connection
        try:
            while True:  # stopping too: a request still sent is answered (TurnedAway)
                try:
                    message = receive(conn)
                except WireError as exc:  # refused: say why, then drop this connection only
                    with contextlib.suppress(OSError):
                        send(conn, reply_error(exc))
                    break
                except OSError:
                    break
                if message is None:
                    break
                sessions.update(_mcp_session(message))
                with self._count:
                    self._unanswered += 1
                try:
                    self._answer(conn, self.handle(message))
                except OSError:
                    break  # the client went away; what it asked for is done and saved
                finally:
                    with self._count:
                        self._unanswered -= 1
        except OSError:
            pass
        finally:
            conn.close()
            if sessions:  # its server stopped: the session's writes become its commit now
                with contextlib.suppress(BrainError):  # stopping: closing the Brain commits
                    self.submit(lambda: self.ops.end(sessions))
            with self._count:
                self._active -= 1
                self._last = time.monotonic()

    @staticmethod
    def _answer(conn: socket.socket, reply: dict[str, Any]) -> None:
        try:
            send(conn, reply)
        except WireError as exc:
            send(conn, reply_error(exc))

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if not isinstance(op, str):
            return reply_error(InvalidInput("request field 'op' must be a string"))
        if op == "ping":
            root = os.fspath(self.brain.root)
            info = {"pid": os.getpid(), "vault": root, "doing": self.doing, "build": build()}
            info["queued"] = self._jobs.qsize()  # jobs waiting behind the one being done
            return reply_ok({**info, **self._compare(message.get("args"))})
        if op == "status":
            vault = self._vault_status()  # first: it takes brain.yaml afresh
            return reply_ok({**self.status(), **vault})
        if op == "stop":
            self.log("asked to stop")
            self.stopping.set()
            return reply_ok({"stopping": True})
        args = message.get("args", {})
        try:
            return reply_ok(self.submit(lambda: self._run(op, args, message.get("zone"))))
        except BrainError as exc:
            return reply_error(exc)
        except Exception as exc:  # a bug must not take the daemon down with it
            self.log(f"error in {op}: {''.join(traceback.format_exception(exc))}")
            # A full disk or a read-only file is said as the CLI says it; a model is not told
            # which file (it may be a private note's).
            fault = machine_fault(exc, named=op != "mcp")
            return reply_error(fault or BrainError(f"internal error in {op}: {type(exc).__name__}"))

    def _compare(self, args: Any) -> dict[str, Any]:
        """A client that runs other code (client.DaemonClient._agree): if the code installed
        is no longer what this daemon runs, it steps down, and the client starts a fresh one."""
        theirs = args.get("build") if isinstance(args, dict) else None
        if theirs is None or theirs == build() or fingerprint() == build():
            return {}
        self.log(f"brain's code changed since this daemon started ({build()} -> {theirs}); exiting")
        self.stopping.set()
        return {"stepping_down": True}

    def _run(self, op: str, args: Any, zone: Any = None) -> Any:
        self.requests += 1
        self.doing = f"answering {op!r}"
        try:
            return self.ops.run(op, args, zone)
        finally:
            self.doing = ""

    def _step(self, what: str, done: int, total: int) -> None:
        """A long job's progress (model.Steps), for a client that asks why it waits."""
        self.doing = f"{what} {done:,} of {total:,}" if done < total else ""

    def status(self) -> dict[str, Any]:
        embedder, loaded = self.brain.running().embedding_model()
        with self._count:
            active = self._active
        return {
            "pid": os.getpid(),
            "vault": os.fspath(self.brain.root),
            "protocol": VERSION,
            "build": build(),
            "uptime_seconds": round(time.time() - self.started, 3),
            "memory_bytes": rss(),
            "requests": self.requests,
            "refused": self.refused,
            "connections": active,
            "embedder": embedder,
            "model_loaded": self.model_loaded and loaded,
            "watching": list(self.watching),
            "idle_seconds": self.config.idle_seconds,
        }

    def _vault_status(self) -> dict[str, Any]:
        """Memories, the vector index and the last catch-up, read on the Brain's thread."""
        try:
            return dict(self.submit(self._vault_counts))
        except BrainError:
            return {}

    def _vault_counts(self) -> dict[str, Any]:
        self.ops.follower.check()
        counts = self.brain.running().vault_counts()
        watcher = self.watcher
        last = dict(watcher.last_catch_up) if watcher is not None else {}
        first = dict(watcher.first_catch_up) if watcher is not None else {}
        return {**counts, "last_catch_up": last, "first_catch_up": first}

    # warm caches and the watcher ------------------------------------------------------
    def _warm(self) -> None:
        """Catch up with the files and load the model before the first recall needs it. A
        watcher that queued its first catch-up walks the files itself, after this."""
        self.doing = "warming up: catching up with the files and loading the models"
        try:
            self.brain.running().warm(catch_up=not self._watch_queued.is_set())
            self.model_loaded = True
            self.log("warm")
        except BrainError as exc:
            self.log(f"warming failed: {exc}")
        finally:
            self.doing = ""

    def _watch(self) -> tuple[threading.Event, threading.Thread] | None:
        if not self.config.watch:
            return None
        stop = threading.Event()
        watcher = self.brain.running().watcher(
            via=self._via,
            on_sync=lambda reports: self.log(f"synced {len(reports)} connector(s)"),
            on_error=lambda exc: self.log(f"watch: {exc}"),
        )
        self.watching = watcher.watched
        self.watcher = watcher
        thread = threading.Thread(target=watcher.run, args=(stop,), name="watch", daemon=True)
        thread.start()
        return stop, thread

    def _take_config(self, config: DaemonSettings) -> None:
        """brain.yaml's `daemon:` section changed: idle time and catch-up at once; a watcher
        started or stopped. A new model is loaded by its first use (Follower)."""
        old, self.config = self.config, config
        self.brain.running().look_every(CATCH_UP_WATCHED if config.watch else CATCH_UP_EVERY)
        if config.watch == old.watch:
            return
        self.log(f"brain.yaml: watch {'on' if config.watch else 'off'}")
        if self._watch_run is not None:  # not joined: it may be waiting for this thread
            self._watch_run[0].set()
            self._watch_run, self.watcher, self.watching = None, None, []
        if config.watch:
            self._watch_run = self._watch()

    def _take_connectors(self) -> None:
        """A folder connected or disconnected since the watcher started: it starts again."""
        try:
            names = [d.name for d in connected(self.brain.root)]
        except BrainError as exc:  # (brain.yaml broken: its own check says so)
            self.log(f"connectors: {exc}")
            return
        if self._watch_run is not None and sorted(names) != sorted(self.watching):
            self.log(f"connectors now: {', '.join(names) or 'none'}; watching them")
            self._watch_run[0].set()
            self._watch_run = self._watch()

    def _via(self, job: Callable[[], None]) -> None:
        with contextlib.suppress(BrainError):  # only "stopping": the watcher is ending too
            self.submit(job, queued=self._watch_queued)


def _turned_away() -> TurnedAway:
    """What a job the daemon will not run is told: its client runs it elsewhere."""
    return TurnedAway("the daemon is stopping", "run it again: a new brain process does it")


def _mcp_session(message: dict[str, Any]) -> list[str]:
    """The MCP session a request is a tool call of, if it is one."""
    args = message.get("args")
    session = args.get("session") if isinstance(args, dict) else None
    return [session] if message.get("op") == "mcp" and isinstance(session, str) else []


def run(root: Path, log: Log) -> int:
    """Be the daemon of this vault until stopped or idle; 3 if another one already runs."""
    from brain._brain import open_vault

    build()  # the code as it is now, the code this process loaded (a later upgrade: _compare)
    claimed = claim(pid_path(root))
    if claimed is None:
        log("another daemon already runs for this vault")
        return 3
    try:
        brain = open_vault(root, steps=Opening(log))  # a rebuild after an upgrade: logged
        config = daemon_settings(brain.settings)
        brain.running().look_every(CATCH_UP_WATCHED if config.watch else CATCH_UP_EVERY)
        daemon = Daemon(brain, config, log)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda _s, _f: daemon.stopping.set())
        with listening(socket_path(root)) as listener:
            log(f"daemon {os.getpid()} serving {root}")
            try:
                daemon.serve(listener)
            finally:
                brain.close()
        return 0
    finally:
        # Only our own pid file: after our home was deleted, the name may be a new daemon's.
        if identity(pid_path(root)) == fd_identity(claimed):
            with contextlib.suppress(FileNotFoundError):
                pid_path(root).unlink()
        os.close(claimed)
