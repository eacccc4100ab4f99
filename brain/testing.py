"""What tests and bench/ build on: a fixed clock, a fresh vault on the hashing embedder."""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

from brain._clock import FixedClock
from brain._vault.template import init_vault

T0 = datetime(2026, 12, 2, 10, 31, 0, tzinfo=UTC)
NO_AUTOSTART = "autostart: false"  # no daemon unless a test starts one, even from a subprocess


def fixed_clock(moment: datetime = T0) -> FixedClock:
    """A clock stopped at `moment` (T0 unless told)."""
    return FixedClock(moment)


def use_embedder(root: Path, name: str) -> None:
    """Name the vault's embedder in its brain.yaml: `hashing` is fast and deterministic."""
    settings = root / "brain.yaml"
    text = re.sub(r"^embedder: \S+", f"embedder: {name}", settings.read_text(), flags=re.M)
    settings.write_text(text)


def new_vault(
    root: Path, now: datetime = T0, *, embedder: str = "hashing", daemon: str = ""
) -> Path:
    """A vault made from vault-template/ at `root`, on `embedder`, with `daemon`'s settings
    (one YAML line under `daemon:`, such as NO_AUTOSTART) added to its brain.yaml."""
    init_vault(root, now)
    use_embedder(root, embedder)
    if daemon:
        with (root / "brain.yaml").open("a") as settings:
            settings.write(f"daemon:\n  {daemon}\n")
    return root


def tree_digest(root: Path) -> str:
    """A fingerprint of every file outside .brain/: proves a failed command changed nothing."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".brain") or not path.is_file():
            continue
        digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
