"""The local daemon: one warm process per vault; the CLI and `brain serve` are its thin clients.

Where its files live under `.brain/`, and its settings (the `daemon:` section of brain.yaml).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain._errors import InvalidInput
from brain._settings import Settings
from brain._vault.paths import CACHE_DIR

DAEMON_ENV = "BRAIN_DAEMON"  # `off`: never use or start a daemon; work in this process
SOCKET = "daemon.sock"
PID_FILE = "daemon.pid"
LOG_FILE = "daemon.log"


@dataclass(frozen=True)
class DaemonSettings:
    """`daemon:` in brain.yaml: idle exit, auto-start by clients, watching connectors."""

    idle_seconds: float = 900.0
    autostart: bool = True
    watch: bool = True


def daemon_settings(settings: Settings) -> DaemonSettings:
    """The `daemon:` section of brain.yaml, validated; every problem names the field."""
    data: Any = settings.raw.get("daemon") or {}
    if not isinstance(data, dict):
        raise settings.bad_field("daemon", "must be a mapping")
    idle = data.get("idle_seconds", DaemonSettings.idle_seconds)
    if isinstance(idle, bool) or not isinstance(idle, int | float) or idle <= 0:
        raise settings.bad_field("daemon.idle_seconds", f"must be a positive number, not {idle!r}")
    flags = {}
    for name in ("autostart", "watch"):
        value = data.get(name, getattr(DaemonSettings, name))
        if not isinstance(value, bool):
            raise settings.bad_field(f"daemon.{name}", f"must be true or false, not {value!r}")
        flags[name] = value
    return DaemonSettings(idle_seconds=float(idle), **flags)


def daemon_off(env: Mapping[str, str]) -> bool:
    """Whether BRAIN_DAEMON=off asks clients to work in their own process."""
    value = env.get(DAEMON_ENV, "auto").strip().lower() or "auto"
    if value not in ("auto", "off"):
        raise InvalidInput(f"{DAEMON_ENV}={value!r} is not understood; use `auto` or `off`")
    return value == "off"


def socket_path(root: Path) -> Path:
    return root / CACHE_DIR / SOCKET


def pid_path(root: Path) -> Path:
    return root / CACHE_DIR / PID_FILE


def log_path(root: Path) -> Path:
    return root / CACHE_DIR / LOG_FILE


# The daemon's log line of a long job of its opening (the caches rebuilt from the files after
# an upgrade: ~20 s at 10k notes), which a client waiting for it to start shows (client._started).
OPENING = "before answering: "
_UNITS = {"indexing": "files", "embedding": "memories"}


class Opening:
    """The opening's long jobs (model.Steps), each said in the daemon's log as it begins and
    ends: the socket listens only after them, and its client is left to wait."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.begun: set[str] = set()

    def __call__(self, what: str, done: int, total: int) -> None:
        if what == "waiting":
            return  # for the writer lock: not this daemon's work
        if what not in self.begun and done < total:
            self.begun.add(what)
            self.log(f"{OPENING}{what} {total:,} {_UNITS.get(what, 'items')}")
        elif what in self.begun and done >= total:
            self.begun.discard(what)
            self.log(f"{OPENING}{what} done")


def opening_said(root: Path, since: int) -> str | None:
    """The long job a starting daemon is doing before it answers, as its log says after byte
    `since` (its size when the daemon was started), or None (none, or it ended)."""
    try:
        with log_path(root).open("rb") as log:
            log.seek(since)
            text = log.read().decode("utf-8", "replace")
    except OSError:
        return None
    said = [line.partition(OPENING)[2] for line in text.splitlines() if OPENING in line]
    return None if not said or said[-1].endswith(" done") else said[-1]
