"""The images and the compose file, built and run for real with podman: PostgreSQL with
pgvector, pgbouncer in transaction mode, two brain servers (models baked in, not root) and
nginx in front; an MCP client works through the proxy. Skipped where no container can run."""

from __future__ import annotations

import os
import resource
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.http_servers import call, free_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PUBLIC = "brain.example.test"
PODMAN = shutil.which("podman")
pytestmark = [
    pytest.mark.containers,
    pytest.mark.skipif(PODMAN is None, reason="podman is not installed (apt-get install podman)"),
]

# The engine's settings for a machine like CI's: a container may not raise a limit above the
# host's (no CAP_SYS_RESOURCE), and runc copes with cgroup v1 where crun refuses the hybrid mode.
CONF = """[containers]
default_ulimits = ["nofile={nofile}:{nofile}", "nproc=4096:4096"]
[engine]
{runtime}
"""


def run(*args: str, env: dict[str, str], timeout: float = 900, check: bool = True) -> str:
    """A command's standard output (with its standard error when `check` is off)."""
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        pytest.fail(f"{' '.join(args[:4])}… exit {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout if check else done.stdout + done.stderr


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("podman")
    nofile = min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 65536)
    runtime = 'runtime = "runc"' if shutil.which("runc") else ""
    (folder / "containers.conf").write_text(CONF.format(nofile=nofile, runtime=runtime))
    env = {**os.environ, "CONTAINERS_CONF": str(folder / "containers.conf")}
    probe = subprocess.run(
        [str(PODMAN), "info"], env=env, capture_output=True, text=True, timeout=120
    )
    if probe.returncode != 0:
        pytest.skip(f"podman cannot run here: {probe.stderr.strip()[-300:]}")
    return env


def build(env: dict[str, str]) -> None:
    """Each image from its Dockerfile, on a Debian base made by scripts/container-base unless
    BRAIN_TEST_BASE names one; pip inside the build trusts this machine's CA bundle."""
    base = (
        os.environ.get("BRAIN_TEST_BASE")
        or run(str(ROOT / "scripts" / "container-base"), env=env).strip().splitlines()[-1]
    )
    bundle = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
    trust = (
        ["--volume", f"{bundle}:/run/host-ca.crt:ro", "--build-arg", "PIP_CA=/run/host-ca.crt"]
        if Path(bundle).is_file()
        else []
    )
    images = {
        "brain-server": (ROOT, trust),
        "brain-postgres": (DEPLOY / "postgres", trust),
        "brain-pgbouncer": (DEPLOY / "pgbouncer", []),
        "brain-proxy": (DEPLOY / "proxy", []),
    }
    for name, (context, extra) in images.items():
        tag = f"localhost/{name}:latest"
        run(
            str(PODMAN),
            "build",
            "-q",
            "-t",
            tag,
            f"--build-arg=BASE={base}",
            *extra,
            str(context),
            env=env,
        )


@pytest.fixture(scope="module")
def stack(engine: dict[str, str]) -> Iterator[dict[str, Any]]:
    build(engine)
    project = f"braintest{secrets.token_hex(3)}"
    port = free_port()
    env = {
        **engine,
        "POSTGRES_PASSWORD": secrets.token_urlsafe(12),
        "BRAIN_SERVER_PASSWORD": secrets.token_urlsafe(12),
        "BRAIN_PUBLIC_HOST": PUBLIC,
        "BRAIN_PORT": str(port),
    }
    compose = [sys.executable, "-m", "podman_compose", "-f", str(DEPLOY / "compose.yaml")]
    compose += ["-p", project]
    leftovers(engine)
    try:
        run(*compose, "up", "-d", "--no-build", env=env)
        url = f"http://127.0.0.1:{port}"
        if not ready(url):
            states = run(str(PODMAN), "ps", "-a", "--format", "{{.Names}} {{.Status}}", env=env)
            logs = run(
                str(PODMAN), "logs", "--tail", "20", f"{project}_brain1_1", env=env, check=False
            )
            pytest.fail(f"the stack never became ready:\n{states}\n{logs[-3000:]}")
        yield {"url": url, "env": env, "project": project, "compose": compose}
    finally:
        run(*compose, "down", "-v", env=env, check=False, timeout=300)
        # The images a rebuild left without a tag: each run of a changed checkout leaves one.
        run(str(PODMAN), "image", "prune", "-f", env=env, check=False, timeout=300)


def leftovers(env: dict[str, str]) -> None:
    """Remove the stacks of earlier runs that were killed before their own clean-up."""
    names = run(
        str(PODMAN), "ps", "-a", "--filter", "name=^braintest", "--format", "{{.Names}}", env=env
    ).split()
    if names:
        run(str(PODMAN), "rm", "-f", "-t", "0", "--depend", *names, env=env, check=False)
    for kind in ("network", "volume"):
        found = run(str(PODMAN), kind, "ls", "-q", "--filter", "name=^braintest", env=env).split()
        if found:
            run(str(PODMAN), kind, "rm", "-f", *found, env=env, check=False)


def ready(url: str) -> bool:
    """Whether the proxy answers /readyz from a server that reaches the database (≤ 3 min)."""
    for _ in range(360):
        try:
            if httpx2.get(f"{url}/readyz", headers={"host": PUBLIC}, timeout=5).status_code == 200:
                return True
        except httpx2.HTTPError:
            pass
        time.sleep(0.5)
    return False


def container(stack: dict[str, Any], service: str) -> str:
    return f"{stack['project']}_{service}_1"


def test_the_stack_serves_mcp_through_the_proxy_pooler_and_two_servers(stack: Any) -> None:
    env = stack["env"]
    # As the operator would: the owner's login, in a one-off container of the migrate service.
    adding = ("run", "--rm", "--no-deps", "migrate", "hosted", "user", "add", "alice")
    said = run(*stack["compose"], *adding, env=env)
    token = next(line.strip() for line in said.splitlines() if line.startswith("brain_"))

    async def main() -> None:
        headers = {"Authorization": f"Bearer {token}", "Host": PUBLIC}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=120) as http,
            Client(streamable_http_client(f"{stack['url']}/mcp", http_client=http)) as mcp,
        ):
            note = await call(mcp, "remember", {"text": "The harbour gate opens at six."})
            for _ in range(4):  # round robin: each server answers in turn
                hits = (
                    await call(mcp, "recall", {"query": "what time does the harbour gate open"})
                )["hits"]
                assert hits and hits[0]["id"] == note["id"]  # MiniLM runs in the image

    anyio.run(main)
    for server in ("brain1", "brain2"):
        log = run(str(PODMAN), "logs", container(stack, server), env=env, check=False)
        assert '"tool": "recall"' in log
    # The servers reached PostgreSQL as brain_server, only through pgbouncer's connections.
    logins = run(
        str(PODMAN),
        "exec",
        container(stack, "db"),
        "/opt/pgbin/psql",
        "-h",
        "/tmp",
        "-U",
        "postgres",
        "-d",
        "brain",
        "-Atc",
        "SELECT DISTINCT usename, host(client_addr) FROM "
        "pg_stat_activity WHERE usename = 'brain_server'",
        env=env,
    ).split()
    bouncer = run(
        str(PODMAN),
        "inspect",
        "-f",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
        container(stack, "pgbouncer"),
        env=env,
    ).strip()
    assert logins and all(line == f"brain_server|{bouncer}" for line in logins), logins


def test_the_proxy_keeps_the_metrics_off_the_public_name(stack: Any) -> None:
    public = {"host": PUBLIC}
    assert httpx2.get(f"{stack['url']}/readyz", headers=public, timeout=30).status_code == 200
    assert httpx2.get(f"{stack['url']}/metrics", headers=public, timeout=30).status_code == 404


def test_the_servers_run_as_a_user_that_is_not_root(stack: Any) -> None:
    for server in ("brain1", "brain2"):
        uid = run(str(PODMAN), "exec", container(stack, server), "id", "-u", env=stack["env"])
        assert uid.strip() not in {"", "0"}
