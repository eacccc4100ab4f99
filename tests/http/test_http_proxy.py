"""Behind a real reverse proxy (nginx) that keeps the public Host name: two servers answer the
Python and the TypeScript SDK's clients through it with `--allowed-host`/`--allowed-origin`;
other names and origins are refused."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.http_servers import add_user, call, free_port, fresh_database, start
from brain._hosted.schema import init as init_schema
from brain._mcp_server import TOOLS
from tests.http.conftest import JSON_HEADERS, PING

NAME, APP = "brain.example.test", "https://app.example.test"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
NODE = shutil.which("node")
# The official TypeScript SDK's client; scripts/test installs its packages with `npm ci`.
TS_CLIENT = Path(__file__).parent / "ts_client"
pytestmark = pytest.mark.skipif(
    not Path(NGINX).exists(), reason="nginx is not installed (apt-get install -y nginx-light)"
)

CONF = """
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 256; }}
http {{
    # what each request came with, and which server took it (the TypeScript client's test)
    log_format seen '$http_x_request_id $http_host $host $http_origin $upstream_addr $status';
    access_log {folder}/access.log seen;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    upstream brain {{ server {first}; server {second}; }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://brain;
            proxy_http_version 1.1;
            proxy_set_header Host $host;  # the public name goes on to the servers
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


@pytest.fixture(scope="module")
def proxied(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    db = fresh_database(pg_dsn)
    init_schema(db)
    token = add_user(db, "alice")
    extra = ("--allowed-host", NAME, "--allowed-origin", APP)
    servers = [start(db, None, *extra), start(db, None, *extra)]
    folder = tmp_path_factory.mktemp("nginx")
    port = free_port()
    hosts = [s.url.removeprefix("http://").removesuffix("/mcp") for s in servers]
    (folder / "nginx.conf").write_text(
        CONF.format(folder=folder, first=hosts[0], second=hosts[1], port=port)
    )
    nginx = subprocess.Popen(
        [NGINX, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(200):  # until nginx listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert nginx.poll() is None, nginx.stderr.read() if nginx.stderr else ""
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", token, servers, folder / "access.log"
    finally:
        nginx.terminate()
        nginx.wait(timeout=30)
        for server in servers:
            server.stop()


@asynccontextmanager
async def through(url: str, token: str) -> Any:
    headers = {"Authorization": f"Bearer {token}", "Host": NAME, "Origin": APP}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def test_the_sdk_client_works_through_nginx_keeping_the_public_name(proxied: Any) -> None:
    url, token, servers, _ = proxied

    async def main() -> None:
        async with through(url, token) as mcp:
            note = await call(mcp, "remember", {"text": "The harbour opens at six."})
            for _ in range(4):  # round robin: both servers answer in turn
                hits = (await call(mcp, "recall", {"query": "harbour opens"}))["hits"]
                assert note["id"] in [h["id"] for h in hits]

    anyio.run(main)
    for server in servers:  # each server's access log saw the proxied calls
        assert any('"tool": "recall"' in line for line in server.said)


def test_the_typescript_sdk_client_works_through_nginx_by_the_public_name(proxied: Any) -> None:
    url, token, servers, log = proxied
    if NODE is None:
        pytest.skip("node is not installed (apt-get install -y nodejs npm)")
    if not (TS_CLIENT / "node_modules").is_dir():
        pytest.skip(f"the TypeScript SDK is not installed: run `npm ci` in {TS_CLIENT}")
    public = url.replace("127.0.0.1", NAME)  # the client resolves the name to loopback itself
    ran = subprocess.run(
        [NODE, "client.mjs", public, token, APP],
        cwd=TS_CLIENT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    seen = json.loads(ran.stdout)
    assert seen["tools"] == list(TOOLS)
    assert all(seen["remembered"] in recall["ids"] for recall in seen["recalls"])
    # every request the client sent came with the public name and the app's origin, and nginx
    # passed the name on to the servers as Host (`proxy_set_header Host $host`)
    lines = {line.split()[0]: line.split()[1:] for line in log.read_text().splitlines()}
    port = url.split(":")[2].split("/")[0]
    for _, request in seen["sent"]:
        assert lines[request][:3] == [f"{NAME}:{port}", NAME, APP], lines[request]
    # round robin: each server answered some recall of this client's, and logged it
    recalls = {r for recall in seen["recalls"] for r in recall["requests"]}
    for server in servers:
        logged = [json.loads(line) for line in server.said if line.startswith("{")]
        assert any(e.get("request_id") in recalls and e.get("tool") == "recall" for e in logged)


def test_other_hosts_and_origins_are_refused(proxied: Any) -> None:
    url, token, servers, _ = proxied
    sent = {**JSON_HEADERS, "authorization": f"Bearer {token}"}
    assert httpx2.post(url, json=PING, headers={**sent, "host": NAME}).status_code == 200
    assert httpx2.post(url, json=PING, headers={**sent, "host": "evil.test"}).status_code == 421
    origin = {**sent, "host": NAME, "origin": "https://evil.test"}
    assert httpx2.post(url, json=PING, headers=origin).status_code == 403
    assert httpx2.post(servers[0].url, json=PING, headers=sent).status_code == 200  # loopback
