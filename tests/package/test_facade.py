"""The façade: a Brain exposes the use cases, not the opened vault's parts, and the interfaces
(CLI, daemon, MCP, HTTP) reach nothing behind it."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from brain._brain import Brain

ROOT = Path(__file__).resolve().parents[2] / "brain"
INTERFACES = [
    ROOT / "_cli",
    ROOT / "_daemon",
    ROOT / "_mcp_server.py",
    ROOT / "_hosted" / "serving.py",
    ROOT / "_hosted" / "tenants.py",
]
# What a Context holds that a Brain must not hand out.
INTERNALS = "store caches lock journal node_index changes catch_up flush save delete row".split()


def _sources() -> list[Path]:
    found: list[Path] = []
    for place in INTERFACES:
        found += sorted(place.rglob("*.py")) if place.is_dir() else [place]
    return found


def test_the_interfaces_never_reach_behind_the_brain() -> None:
    reach = re.compile(r"\.(caches|store|_context)\.|\._context\b")
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _sources()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if reach.search(line)
    ]
    assert found == []


def test_a_brain_exposes_no_part_of_the_opened_vault(brain: Brain) -> None:
    assert [name for name in INTERNALS if hasattr(brain, name)] == []
    assert brain.remember("The façade holds the vault", title="Façade").title == "Façade"


def test_a_brain_closes_as_a_context_manager(vault: Path) -> None:
    from brain._brain import open_vault

    with open_vault(vault, embedder=None) as memory:
        memory.remember("Closed at the end of the block", title="Closed")
    with pytest.raises(sqlite3.ProgrammingError):  # closed: its catalog's connection too
        memory._context.caches.catalog.db.execute("select 1")
