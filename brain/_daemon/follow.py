"""How a long-lived daemon follows brain.yaml: its fingerprint checked at each request, and on a
change the settings, git autocommit, models and the daemon's own settings taken afresh."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from brain import _settings as settings_mod
from brain._daemon import DaemonSettings, daemon_settings
from brain._settings import SETTINGS_FILE
from brain._sources.connectors import STATE_FILE
from brain._vault.paths import CACHE_DIR

if TYPE_CHECKING:
    from brain._brain import Brain


@dataclass(frozen=True)
class Fingerprint:
    """What brain.yaml was when last read: its mtime and size, and the hash of its bytes
    (an edit within the clock's granularity that keeps the size still changes the hash)."""

    mtime_ns: int
    size: int
    sha256: str


def fingerprint(brain: Brain) -> Fingerprint | None:
    """brain.yaml's fingerprint now; None if it is gone (the next load says so)."""
    try:
        with (brain.root / SETTINGS_FILE).open("rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except FileNotFoundError:
        return None
    return Fingerprint(st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest())


class Follower:
    """Brings one Brain (and its daemon's settings) in step with brain.yaml, as a fresh process
    would read it. Called on the Brain's thread before each request.

    A changed `embedder:` or `sparse:` swaps the models: the old ones are dropped (their
    memory goes with them) and the new ones load at their first use; the vector and sparse
    indexes built for the old ones are rebuilt at the next search, as in a fresh process.
    """

    def __init__(
        self,
        brain: Brain,
        on_daemon: Callable[[DaemonSettings], None],
        on_connectors: Callable[[], None] = lambda: None,
    ) -> None:
        self.brain = brain
        self.on_daemon = on_daemon
        self.seen = fingerprint(brain)
        # `brain connect` and `disconnect` confirm in .brain/connectors.json, not brain.yaml:
        # its change is told too, for a watcher to follow the folders connected now.
        self.on_connectors = on_connectors
        self.connectors = _stamp(brain.root / CACHE_DIR / STATE_FILE)

    def check(self) -> bool:
        """Take brain.yaml afresh if it changed; True if it did. A broken brain.yaml raises
        InvalidInput (the request fails, as in a new process) and is read again next time."""
        stamp = _stamp(self.brain.root / CACHE_DIR / STATE_FILE)
        if stamp != self.connectors:
            self.connectors = stamp
            self.on_connectors()
        now = fingerprint(self.brain)
        if now == self.seen:
            return False
        fresh = settings_mod.load(self.brain.root)
        config = daemon_settings(fresh)
        self.brain.running().follow_settings(fresh)
        self.on_daemon(config)
        self.seen = now
        return True


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
