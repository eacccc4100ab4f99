"""`brain mcp-config --url`: the settings that connect a host to a `brain serve --http`
server, used as printed to reach a real server."""

from __future__ import annotations

import json
import shlex

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from bench.http_servers import add_user, call, fresh_database, start
from brain._cli import _register, app
from brain._hosted.schema import init as init_schema

_register()


def snippet(output: str) -> dict[str, object]:
    """The JSON object the command printed."""
    text = output[output.index("{") : output.rindex("}") + 1]
    return json.loads(text)["mcpServers"]["brain"]  # type: ignore[no-any-return]


def test_cursors_url_and_headers_reach_a_real_server(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    init_schema(db)
    token = add_user(db, "alice")
    server = start(db, None)
    try:
        said = CliRunner().invoke(
            app, ["mcp-config", "cursor", "--url", server.url, "--token", token]
        )
        assert said.exit_code == 0, said.output
        entry = snippet(said.stdout)
        assert entry["url"] == server.url

        async def main() -> None:
            async with (
                httpx2.AsyncClient(headers=entry["headers"], timeout=60) as http,  # type: ignore[arg-type]
                Client(streamable_http_client(str(entry["url"]), http_client=http)) as mcp,
            ):
                assert (await call(mcp, "ping"))["ok"]

        anyio.run(main)
    finally:
        server.stop()


def test_claude_codes_entry_and_command_name_the_transport_and_header() -> None:
    url = "https://brain.example.com/mcp"
    said = CliRunner().invoke(app, ["mcp-config", "claude-code", "--url", url], env={})
    assert said.exit_code == 0, said.output
    entry = snippet(said.stdout)
    assert entry == {"type": "http", "url": url, "headers": {"Authorization": "Bearer <token>"}}
    line = next(x for x in said.stdout.splitlines() if x.startswith("claude mcp add"))
    words = shlex.split(line)
    assert words[words.index("--transport") + 1] == "http"
    assert words[words.index("--header") + 1] == "Authorization: Bearer <token>"
    assert "<token>" in said.stdout.splitlines()[-1]  # told to put the token in


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["claude-desktop", "--url", "https://b.example/mcp"], "lists local servers only"),
        (["cursor", "--url", "brain.example.com"], "is not an http(s) URL"),
    ],
)
def test_what_cannot_be_printed_is_one_clear_line(args: list[str], said: str) -> None:
    done = CliRunner().invoke(app, ["mcp-config", *args])
    assert done.exit_code == 2 and said in done.stderr
