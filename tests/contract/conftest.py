"""The contract suite's one fixture: a vault seeded on files, opened on either storage."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from tests.conftest import pushed

Opener = Callable[[], Brain]


@pytest.fixture(params=["files", "postgres"])
def storage(request: pytest.FixtureRequest, vault: Path, clock: FixedClock) -> Iterator[Opener]:
    """Opens the vault as it is now on one storage: its own files, or a new tenant of a real
    PostgreSQL it was pushed to. Seed the vault first (files written, a folder connected),
    then open: each test body runs the same on both."""
    opened: list[Brain] = []

    def open_it() -> Brain:
        if request.param == "files":
            brain = open_vault(vault, clock=clock)
        else:
            brain = pushed(request.getfixturevalue("hosted_dsn"), vault, clock)
        opened.append(brain)
        return brain

    yield open_it
    for brain in opened:
        brain.close()


@pytest.fixture
def both(storage: Opener) -> Brain:
    """A Brain of the fresh vault, on the storage of this run."""
    return storage()
