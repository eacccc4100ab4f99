"""`brain serve --http`: two real servers on loopback over one root, the SDK's HTTP client."""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import psycopg
import pytest
from mcp import Client, StdioServerParameters
from psycopg.conninfo import conninfo_to_dict

from bench.http_servers import ENV, ROOT, Server, add_user, answer, call, connect, fresh_database
from bench.http_servers import start as start_server
from brain._brain import open_vault
from brain._hosted import tokens
from brain._hosted.roles import SERVER_ROLE
from brain._hosted.schema import init as init_schema
from brain._hosted.tenant import open_tenant
from brain._mcp_server import TOOLS, build_server
from tests.http.conftest import JSON_HEADERS, PING


@dataclass
class Setup:
    db: str
    root: Path | None  # None: the users' brains are in the database
    a: Server
    b: Server
    alice: str
    bob: str


def two_servers(pg_dsn: str, root: Path | None) -> Iterator[Setup]:
    """Users alice and bob, and two servers over one root of vaults (None: over brains in
    the database)."""
    db = fresh_database(pg_dsn)
    if root is None:
        init_schema(db)
    alice, bob = add_user(db, "alice"), add_user(db, "bob")
    a = start_server(db, root)
    b = start_server(db, root)
    try:
        yield Setup(db, root, a, b, alice, bob)
    finally:
        a.stop()
        b.stop()


@pytest.fixture(scope="module")
def setup(pg_dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    yield from two_servers(pg_dsn, tmp_path_factory.mktemp("tenants"))


@pytest.fixture(scope="module", params=["files", "postgres"])
def any_setup(request: pytest.FixtureRequest, setup: Setup, pg_dsn: str) -> Iterator[Setup]:
    """The two servers over one root of vaults, then two over brains in one PostgreSQL."""
    if request.param == "files":
        yield setup
    else:
        yield from two_servers(pg_dsn, None)


def opened(setup: Setup, user: str) -> Any:
    """The user's brain opened in this process, where the servers keep it."""
    if setup.root is not None:
        return open_vault(setup.root / user)
    return open_tenant(setup.db, user, embedder=None)


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def post(url: str, token: str | None, body: Any = PING, **headers: str) -> httpx2.Response:
    sent = dict(JSON_HEADERS, **headers)
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx2.post(url, content=data, headers=sent, timeout=60)


def test_the_twenty_tools_with_the_schemas_stdio_serves(setup: Setup, brain: Any) -> None:
    local = build_server(brain)

    async def main() -> None:
        async with connect(setup.a.url, setup.alice) as client:
            listed = (await client.list_tools()).tools
            for admin in ("sleep", "connect", "set", "reindex", "user_add", "settings"):
                refused = await client.call_tool(admin, {})
                assert refused.is_error, admin
        assert [t.name for t in listed] == list(TOOLS)
        here = {t.name: (t.input_schema, t.description) for t in await local.list_tools()}
        assert {t.name: (t.input_schema, t.description) for t in listed} == here

    run(main)


# The same calls, over stdio and over HTTP; the person makes one note private in between.
async def script(client: Client, make_private: Callable[[str], None]) -> list[Any]:
    said: list[Any] = []

    async def ask(name: str, args: dict[str, Any] | None = None) -> Any:
        got = await answer(client, name, args)
        said.append((name, got))
        return got[1]

    await ask("addendum", {"text": "too early"})  # the gate: session is due
    note = await ask("remember", {"text": "The launch moved to March.", "title": "Launch"})
    await ask("remember", {"text": "x", "kind": "weird"})
    await ask("remember", {"text": "x", "visibility": "private"})
    pin = await ask("remember", {"text": "The bank pin is 4321.", "title": "Bank pin"})
    make_private(pin["id"])
    await ask("recall", {"query": "when is the launch", "k": 3})
    await ask("recall", {"query": "bank pin 4321"})
    await ask("expand", {"note_id": pin["id"]})
    await ask("forget", {"note_id": pin["id"]})
    await ask("recall", {"query": "launch", "k": 999})
    await ask("expand", {"note_id": "NOTANID"})
    await ask("expand", {"note_id": note["id"]})
    await ask("list_memories", {"node": "Knowledge", "limit": 5})  # template notes tie
    await ask("session")
    await ask("remarks")
    await ask("addendum", {"text": "Talked about the launch."})
    await ask("forget", {"note_id": "01ZZZZZZZZZZZZZZZZZZZZZZZZ"})
    await ask("partition_list")
    await ask("partition_use", {"name": "../alice"})
    await ask("usage")
    return said


def normalised(said: list[Any]) -> str:
    text = json.dumps(said, sort_keys=True)
    text = re.sub(r"\b[0-9A-HJKMNP-TV-Z]{26}\b", "<id>", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z?", "<time>", text)
    return re.sub(r"\d{4}-\d\d-\d\d", "<day>", text)


def make_private_in(vault: Path) -> Callable[[str], None]:
    def lever(note_id: str) -> None:
        person = open_vault(vault)
        person.set_field(note_id, "visibility", "private")
        person.close()

    return lever


def test_the_same_answers_and_refusals_as_over_stdio(
    pg_dsn: str, vault: Path, tmp_path: Path
) -> None:
    db = fresh_database(pg_dsn)
    token = add_user(db, "dana")
    server = start_server(db, tmp_path / "tenants")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "brain", "serve", "--vault", str(vault)],
        env=ENV,
        cwd=str(ROOT),
    )
    results: dict[str, list[Any]] = {}

    async def main() -> None:
        async with Client(params) as stdio:
            results["stdio"] = await script(stdio, make_private_in(vault))
        async with connect(server.url, token) as http:
            results["http"] = await script(http, make_private_in(tmp_path / "tenants" / "dana"))

    try:
        run(main)
    finally:
        server.stop()
    assert normalised(results["http"]) == normalised(results["stdio"])
    said = results["http"]
    assert said[0][1][0] and "session" in said[0][1][1]  # addendum before session: refused
    assert said[5][1][1]["hits"] and said[6][1][1]["hits"] == []  # the private pin: gone
    assert "4321" not in json.dumps(results["http"][6:])  # the private note, never again


def test_write_through_one_server_recall_through_the_other(setup: Setup) -> None:
    async def main() -> None:
        async with connect(setup.a.url, setup.alice) as a, connect(setup.b.url, setup.alice) as b:
            note = await call(a, "remember", {"text": "Miso the cat likes tuna.", "title": "Miso"})
            hits = (await call(b, "recall", {"query": "what does the cat like"}))["hits"]
            assert hits[0]["id"] == note["id"]
            await call(a, "session")  # the gate lives on the session note: B knows it
            assert (await call(b, "addendum", {"text": "Spoke of Miso."}))["step"] == "addendum"
            refused = await answer(a, "diary", {"text": "too soon"})
            assert refused[0] and "maintain" in refused[1]

    run(main)


def test_concurrent_writers_of_one_tenant_through_two_servers_lose_nothing(
    any_setup: Setup,
) -> None:
    setup = any_setup
    written: list[str] = []

    async def writer(url: str, who: int) -> None:
        async with connect(url, setup.bob) as client:
            for n in range(8):
                text = f"Writer {who} wrote fact number {n}."
                note = await call(client, "remember", {"text": text, "title": f"w{who} n{n}"})
                written.append(note["id"])

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for who in range(6):
                tg.start_soon(writer, setup.a.url if who % 2 else setup.b.url, who)
        async with connect(setup.a.url, setup.bob) as client:
            for note_id in written:
                assert (await call(client, "expand", {"note_id": note_id}))["id"] == note_id

    run(main)
    assert len(set(written)) == 48
    person = opened(setup, "bob")
    inbox = [r for r in person.list(node="Knowledge/Inbox", limit=1000) if r.title[0] == "w"]
    person.close()
    assert len(inbox) == 48


def test_killing_a_server_mid_write_loses_no_acknowledged_write(any_setup: Setup) -> None:
    setup = any_setup
    doomed = start_server(setup.db, setup.root)
    acked: list[str] = []
    ended: list[BaseException | None] = []  # each writer's end: None, or what stopped it

    async def writer(who: int) -> None:
        try:
            async with connect(doomed.url, setup.alice) as client:
                for n in range(1000):
                    text = f"Kill test {who}: memory {n} " + "words " * 50
                    note = await call(client, "remember", {"text": text, "title": f"k{who} {n}"})
                    acked.append(note["id"])
        except Exception as exc:  # the server died under this client: expected
            ended.append(exc)
            return
        ended.append(None)

    async def killer() -> None:
        # Until 15 writes are acknowledged, or every writer stopped before that (then the
        # test fails below with why, instead of waiting for ever).
        while len(acked) < 15 and len(ended) < 4:
            await anyio.sleep(0.01)
        doomed.process.send_signal(signal.SIGKILL)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for who in range(4):
                tg.start_soon(writer, who)
            tg.start_soon(killer)
        async with connect(setup.b.url, setup.alice) as client:
            for note_id in acked:
                assert (await call(client, "expand", {"note_id": note_id}))["id"] == note_id

    try:
        run(main)
    finally:
        doomed.stop()
    assert len(acked) >= 15, ended
    assert doomed.process.returncode == -signal.SIGKILL


def test_one_tenant_cannot_reach_anothers_notes(setup: Setup) -> None:
    hostile_nodes = [
        "../alice/main/Knowledge",
        "../../alice",
        "/etc",
        "main/../../alice",
        "Knowledge/../../../alice/main",
    ]

    async def main() -> None:
        async with (
            connect(setup.a.url, setup.alice) as alice,
            connect(setup.b.url, setup.bob) as bob,
        ):
            secret = await call(
                alice, "remember", {"text": "The vault code is swordfish.", "title": "Vault code"}
            )
            counted = await call(bob, "usage")
            found = await call(bob, "recall", {"query": "vault code swordfish", "k": 20})
            assert secret["id"] not in json.dumps(found) and "swordfish" not in json.dumps(found)
            for tool in ("expand", "forget"):
                theirs = await answer(bob, tool, {"note_id": secret["id"]})
                nobodys = await answer(bob, tool, {"note_id": "01ZZZZZZZZZZZZZZZZZZZZZZZZ"})
                assert theirs[0] and nobodys[0]  # refused alike: nothing learned
                assert theirs[1].replace(secret["id"], "X") == nobodys[1].replace(
                    "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "X"
                )
            for node in hostile_nodes:
                listed = await answer(bob, "list_memories", {"node": node})
                assert listed[0] or listed[1]["notes"] == []
                got = await answer(bob, "recall", {"query": "swordfish", "node": node})
                assert got[0] or "swordfish" not in json.dumps(got[1])
                put = await answer(bob, "remember", {"text": "planted", "node": node})
                assert put[0], node
            for name in ("../alice", "..", "alice/../main", "/tmp"):
                assert (await answer(bob, "partition_use", {"name": name}))[0]
                assert (await answer(bob, "partition_create", {"name": name}))[0]
            for n in range(3):
                await call(alice, "remember", {"text": f"alice fact {n}", "title": f"af{n}"})
            assert await call(bob, "usage") == counted  # alice's writes do not show in bob's counts
            assert (await call(alice, "expand", {"note_id": secret["id"]}))["body"].startswith(
                "The vault code is swordfish."
            )

    run(main)
    assert "planted" not in "".join(p.read_text() for p in (setup.root / "alice").rglob("*.md"))


def test_no_token_wrong_token_revoked_token_get_one_401_that_names_no_one(setup: Setup) -> None:
    carol = add_user(setup.db, "carol")
    assert post(setup.a.url, carol).status_code == 200
    with tokens.connect(setup.db) as conn:
        tokens.revoke_user(conn, "carol")
    answers = [
        post(setup.a.url, None),
        post(setup.a.url, "brain_" + "x" * 43),
        post(setup.a.url, setup.alice + "x"),
        post(setup.a.url, carol),  # revoked: refused at once, by both servers
        post(setup.b.url, carol),
        post(setup.a.url, None, authorization=f"Basic {setup.alice}"),
        post(setup.a.url.replace("/mcp", "/elsewhere"), None),
    ]
    assert {r.status_code for r in answers} == {401}
    assert {r.content for r in answers} == {b'{"error": "unauthorized"}'}
    assert {r.headers.get("www-authenticate") for r in answers} == {"Bearer"}
    assert all("server" not in r.headers for r in answers)
    assert sorted(p.name for p in setup.root.iterdir() if not p.name.startswith(".")) <= [
        "alice",
        "bob",
        "carol",
    ]
    assert post(setup.a.url, setup.alice).status_code == 200  # others are not affected


def test_a_body_too_large_is_413_after_the_token_is_checked(setup: Setup) -> None:
    huge = json.dumps({**PING, "params": {"pad": "x" * (2 << 20)}}).encode()
    assert post(setup.a.url, setup.alice, huge).status_code == 413
    assert post(setup.a.url, None, huge).status_code == 401
    assert post(setup.a.url, setup.alice).status_code == 200


def test_arguments_that_are_not_an_object_are_named_in_the_answer(setup: Setup) -> None:
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    for arguments, kind in ((["a note"], "a list"), ("kites", "text")):
        body = {**call, "params": {"name": "remember", "arguments": arguments}}
        answer = post(setup.a.url, setup.alice, body).json()
        said = f"arguments must be an object of named arguments, not {kind}"
        assert answer["error"]["message"] == said, answer


def test_each_tenant_has_its_own_rate_429_beyond_it(setup: Setup) -> None:
    slow = start_server(setup.db, setup.root, "--rate", "0.001", "--burst", "3")
    try:
        assert [post(slow.url, setup.alice).status_code for _ in range(3)] == [200] * 3
        refused = post(slow.url, setup.alice)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
        assert refused.content == b'{"error": "too many requests"}'
        assert post(slow.url, setup.bob).status_code == 200
    finally:
        slow.stop()


def test_health_answers_without_a_token_and_says_nothing(setup: Setup) -> None:
    got = httpx2.get(setup.a.url.replace("/mcp", "/healthz"))
    assert (got.status_code, got.json()) == (200, {"ok": True})


def test_without_its_users_database_the_server_refuses_with_503(
    pg_dsn: str, tmp_path: Path
) -> None:
    db = fresh_database(pg_dsn)
    token = add_user(db, "erin")
    server = start_server(db, tmp_path / "tenants")
    try:
        assert post(server.url, token).status_code == 200
        name = conninfo_to_dict(db)["dbname"]
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f'drop database "{name}" with (force)')
        for who in (token, "brain_" + "x" * 43):  # a token that cannot be checked: no guess
            gone = post(server.url, who)
            assert (gone.status_code, gone.content) == (503, b'{"error": "unavailable"}')
        assert post(server.url, None).status_code == 401  # no token needs no database
    finally:
        server.stop()


def test_two_servers_over_brains_in_postgresql(pg_dsn: str) -> None:
    db = fresh_database(pg_dsn)
    init_schema(db)
    alice, bob = add_user(db, "alice"), add_user(db, "bob")
    a = start_server(db, None)
    b = start_server(db, None)

    async def main() -> None:
        async with (
            connect(a.url, alice) as alice_a,
            connect(b.url, alice) as alice_b,
            connect(b.url, bob) as bob_b,
        ):
            listed = (await alice_a.list_tools()).tools
            assert [t.name for t in listed] == list(TOOLS)
            note = await call(alice_a, "remember", {"text": "Miso the cat likes tuna."})
            hits = (await call(alice_b, "recall", {"query": "what does the cat like"}))["hits"]
            assert hits[0]["id"] == note["id"]
            theirs = await answer(bob_b, "expand", {"note_id": note["id"]})
            assert theirs[0] and "tuna" not in theirs[1]
            found = await call(bob_b, "recall", {"query": "cat tuna Miso"})
            assert note["id"] not in json.dumps(found)
        # Every connection the servers hold logs in as the server's role, not as the owner.
        with psycopg.connect(db, autocommit=True) as conn:
            logins = conn.execute(
                "SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = "
                "current_database() AND pid <> pg_backend_pid() AND backend_type = "
                "'client backend'"
            ).fetchall()
        assert logins == [(SERVER_ROLE,)]

    try:
        run(main)
    finally:
        a.stop()
        b.stop()
