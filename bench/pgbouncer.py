"""A real pgbouncer in transaction mode in front of a PostgreSQL (for the tests and benches)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from bench.http_servers import free_port
from brain._hosted.roles import SERVER_ROLE

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
RUN_AS = "embedded_postgres"  # as root, pgbouncer runs as the user the test database runs as

CONF = """[databases]
* = {server}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {folder}/users.txt
pool_mode = transaction
default_pool_size = {pool}
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
server_reset_query =
log_connections = 0
log_disconnections = 0
admin_users = {user}
stats_users = {user}
"""


def installed() -> bool:
    return Path(PGBOUNCER).is_file()


@contextlib.contextmanager
def pgbouncer(dsn: str, pool: int) -> Iterator[str]:
    """pgbouncer in transaction mode before the PostgreSQL of `dsn`, with at most `pool`
    server connections for each database and user; yields `dsn` as it reaches it through
    pgbouncer (any database of the server, by name, the same way)."""
    given = conninfo_to_dict(dsn)
    user = str(given.get("user") or "postgres")
    # No user here: each client's own login goes on to PostgreSQL (the owner's for admin work,
    # `brain_server` for the servers), so the database still tells them apart.
    server = " ".join(f"{key}={given[key]}" for key in ("host", "port") if given.get(key))
    folder = Path(tempfile.mkdtemp(prefix="brain-pgbouncer-"))
    folder.chmod(0o755)  # read by the user it runs as
    port = free_port()
    (folder / "users.txt").write_text(f'"{user}" ""\n"{SERVER_ROLE}" ""\n')
    conf = folder / "pgbouncer.ini"
    conf.write_text(CONF.format(server=server, port=port, folder=folder, pool=pool, user=user))
    for path in (conf, folder / "users.txt"):
        path.chmod(0o644)
    as_user = ["-u", RUN_AS] if os.geteuid() == 0 else []
    log = folder / "pgbouncer.log"  # a file, never a pipe nobody reads (it would fill and stop it)
    with log.open("wb") as said:
        proc = subprocess.Popen([PGBOUNCER, *as_user, str(conf)], stderr=said, stdout=said)
    try:
        _wait_listening(port, proc, log)
        yield make_conninfo(dsn, host="127.0.0.1", port=str(port))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_listening(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            said = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pgbouncer stopped at once: {said}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError("pgbouncer did not listen within 20 s")
