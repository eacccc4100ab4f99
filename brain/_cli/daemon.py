"""`brain daemon start|stop|status|run`, and how the note commands reach their backend."""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from brain._cli.app import (
    JsonOpt,
    VaultOpt,
    app,
    command,
    emit_json,
    err,
    out,
    prepare_models,
    vault_path,
)
from brain._errors import BrainError

if TYPE_CHECKING:
    from brain._daemon.backend import Backend

daemon_app = typer.Typer(
    help="The vault's daemon: one warm process that the other commands talk to.",
    no_args_is_help=True,
)
app.add_typer(daemon_app, name="daemon")

STOP_WAIT = 10.0  # seconds `stop` waits for a daemon to go before sending SIGTERM


def open_backend(explicit: Path | None) -> Backend:
    """The vault's daemon when it runs (or starts: `daemon.autostart` in brain.yaml), else the
    core in this process; both give the same results."""
    from brain._cli.progress import Shown, waiting
    from brain._daemon.backend import DaemonBackend, LocalBackend
    from brain._daemon.client import connect_or_start

    root, _how = vault_path(explicit)
    prepare_models(root)
    # A daemon start or a request that keeps this command waiting more than a moment is said.
    client = connect_or_start(root, os.environ, functools.partial(waiting, err))

    def here() -> Backend:
        from brain._brain import open_vault

        return LocalBackend(open_vault(root, steps=Shown(root, err)))

    # A call the daemon turns away unrun (it is stopping) is done here instead.
    return here() if client is None else DaemonBackend(client, fallback=here)


@command("start", group=daemon_app)
def start(vault: VaultOpt = None) -> None:
    """Start the daemon of this vault (it exits by itself after daemon.idle_seconds idle)."""
    from brain import _settings as settings
    from brain._cli.progress import waiting
    from brain._daemon.client import start as start_daemon

    root, _how = vault_path(vault)
    settings.load(root)  # a missing vault says so, rather than a daemon failing to start
    client = start_daemon(root, waiting=functools.partial(waiting, err))
    info = client.call("ping")
    client.close()
    out.print(f"Daemon running (pid {info['pid']}) for {escape(str(root))}")


@command("stop", group=daemon_app)
def stop(vault: VaultOpt = None) -> None:
    """Stop the daemon of this vault (clients fall back to working in their own process)."""
    from brain._daemon.client import DaemonClient, DaemonStopped, clean_stale, running_pid

    root, _how = vault_path(vault)
    pid = running_pid(root)
    try:
        client = DaemonClient.connect(root, agree=False)
        client.call("stop")
        client.close()
    except DaemonStopped:
        # A stopped process acts on no signal but SIGKILL until continued: asked to end, it
        # is continued to do so (and ends the job it was stopped in first).
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            os.kill(pid, signal.SIGCONT)
    except BrainError:
        if pid is None:
            cleaned = clean_stale(root)
            out.print("No daemon running" + (" (cleaned up after a crash)." if cleaned else "."))
            return
    deadline = time.monotonic() + STOP_WAIT
    while running_pid(root) is not None:
        if time.monotonic() > deadline and pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_WAIT
            pid = None
        time.sleep(0.05)
    out.print("Daemon stopped.")


@command("status", group=daemon_app)
def status(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Whether the daemon runs: pid, uptime, vault, memory, requests served, model loaded."""
    from brain._daemon.client import DaemonClient, DaemonStopped, running_pid

    root, _how = vault_path(vault)
    try:
        client = DaemonClient.connect(root, agree=False)
        info = client.call("status")
        client.close()
    except DaemonStopped:
        _stopped(root, running_pid(root), as_json)
        raise typer.Exit(1) from None
    except BrainError:
        if as_json:
            emit_json({"running": False, "vault": str(root)})
        else:
            out.print(f"No daemon running for {escape(str(root))}.")
        raise typer.Exit(1) from None
    if as_json:
        emit_json({"running": True, **info})
        return
    hours, rest = divmod(int(info["uptime_seconds"]), 3600)
    model = "loaded" if info["model_loaded"] else "loading"
    out.print(f"Daemon running for [bold]{escape(info['vault'])}[/bold]")
    out.print(f"  pid       {info['pid']}")
    out.print(f"  uptime    {hours}:{rest // 60:02d}:{rest % 60:02d}")
    out.print(f"  memory    {info['memory_bytes'] / 2**20:.0f} MiB")
    out.print(f"  requests  {info['requests']} served, {info['refused']} refused")
    out.print(f"  model     {escape(info['embedder'])} ({model})")
    watching = ", ".join(info["watching"]) or "no connectors"
    out.print(f"  watching  {escape(watching)}; exits after {info['idle_seconds']:g} s idle")
    if "memories" in info:
        out.print(f"  memories  {info['memories']}")
        vectors = info["vectors"]
        kind = f"{vectors['kind']}, {vectors['size']} vectors" if vectors else "none"
        out.print(f"  vectors   {escape(kind)}")
        last = info["last_catch_up"]
        how = f"{last['how']}: {last['ms']} ms, {last['changed']} changed" if last else "none yet"
        out.print(f"  catch-up  {escape(how)}")
        held = info.get("briefs_held")
        briefs = "read from the catalog" if held is None else f"{held} in memory"
        out.print(f"  briefs    {briefs}")


def _stopped(root: Path, pid: int | None, as_json: bool) -> None:
    """Say that the daemon is there but stopped (SIGSTOP, Ctrl-Z, a debugger)."""
    if as_json:
        emit_json({"running": True, "stopped": True, "pid": pid, "vault": str(root)})
        return
    out.print(
        f"Daemon (pid {pid}) for {escape(str(root))} is stopped: it answers nothing until "
        "continued, and commands work in their own process meanwhile."
    )
    out.print(f"  `kill -CONT {pid}` resumes it; `brain daemon stop` ends it.")


@command("run", group=daemon_app, hidden=True, own_signals=True)  # daemon/server.py
def run(vault: VaultOpt = None) -> None:
    """Be the daemon in the foreground (what `start` runs, detached)."""
    from brain._clock import SystemClock
    from brain._daemon.server import run as run_daemon

    root, _how = vault_path(vault)

    def log(line: str) -> None:
        stamp = SystemClock().now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        print(f"{stamp} {line}", file=sys.stderr, flush=True)

    raise typer.Exit(run_daemon(root, log))
