"""The local daemon as real processes: start/stop/status, auto-start, idle exit, crash recovery,
the peer check, malformed messages, concurrent clients, and the same results both ways."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from brain._brain import open_vault
from brain._daemon import pid_path, socket_path
from brain._daemon.backend import OPERATIONS, DaemonBackend, LocalBackend
from brain._daemon.client import DaemonClient, McpForwarder, running_pid, start
from brain._daemon.wire import (
    MAX_MESSAGE,
    VERSION,
    PeerRefused,
    check_peer,
    connect_unix,
    peer_uid,
    receive,
    send,
)
from brain._errors import BrainError, InvalidInput, NotFound
from brain._mcp_server import TOOLS
from brain.testing import new_vault
from tests.daemon.conftest import ROOT, brain, env, settle, stop_daemon, until

pytestmark = pytest.mark.usefixtures("autostart")


def raw(vault: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connect_unix(sock, socket_path(vault))
    return sock


def ask(sock: socket.socket, message: dict[str, Any]) -> dict[str, Any] | None:
    send(sock, message)
    return receive(sock)


# start, status, stop ---------------------------------------------------------------------


def test_start_status_stop(vault: Path) -> None:
    started = brain(vault, "daemon", "start")
    assert started.returncode == 0, started.stderr
    try:
        pid = running_pid(vault)
        assert pid is not None and f"pid {pid}" in started.stdout
        sock = socket_path(vault)
        assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600
        assert pid_path(vault).read_text().strip() == str(pid)
        brain(vault, "remember", "Status counts requests")
        shown = brain(vault, "daemon", "status", "--json")
        info = json.loads(shown.stdout)
        assert info["running"] and info["pid"] == pid and info["vault"] == str(vault)
        assert info["requests"] >= 1 and info["memory_bytes"] > 0
        assert info["uptime_seconds"] >= 0 and info["embedder"] == "hashing"
        until(
            lambda: json.loads(brain(vault, "daemon", "status", "--json").stdout)["model_loaded"],
            "the model to load",
        )
        text = brain(vault, "daemon", "status").stdout
        for word in ("pid", "uptime", "memory", "requests", "model", str(vault)):
            assert word in text
        again = brain(vault, "daemon", "start")
        assert again.returncode == 0 and f"pid {pid}" in again.stdout  # one daemon per vault
    finally:
        stopped = brain(vault, "daemon", "stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert running_pid(vault) is None
    assert not socket_path(vault).exists() and not pid_path(vault).exists()
    gone = brain(vault, "daemon", "status")
    assert gone.returncode == 1 and "No daemon" in gone.stdout


def test_a_second_daemon_for_the_same_vault_steps_aside(daemon: Path) -> None:
    pid = running_pid(daemon)
    second = brain(daemon, "daemon", "run")
    assert second.returncode == 3 and "already runs" in second.stderr
    assert running_pid(daemon) == pid and DaemonClient.connect(daemon).call("ping")["pid"] == pid


# auto-start, idle exit, fallback ---------------------------------------------------------------


def test_commands_start_the_daemon_on_first_need_and_it_exits_when_idle(vault: Path) -> None:
    settle(vault, "  idle_seconds: 1\n")
    assert running_pid(vault) is None
    made = brain(vault, "remember", "Auto-started daemons keep the model warm", "--json")
    assert made.returncode == 0, made.stderr
    pid = running_pid(vault)
    assert pid is not None  # the command started it
    note = json.loads(made.stdout)
    found = json.loads(brain(vault, "recall", "model warm", "--json").stdout)["hits"]
    assert found[0]["id"] == note["id"]
    until(lambda: running_pid(vault) is None, "the idle daemon to exit")
    assert not socket_path(vault).exists() and not pid_path(vault).exists()
    assert "idle" in (vault / ".brain/daemon.log").read_text()


def test_no_autostart_setting_keeps_commands_in_process(vault: Path) -> None:
    settle(vault, "  autostart: false\n")
    made = brain(vault, "remember", "No daemon for me")
    assert made.returncode == 0 and running_pid(vault) is None


def test_when_the_daemon_cannot_start_commands_fall_back_with_the_same_results(
    vault: Path,
) -> None:
    (vault / ".brain").mkdir(exist_ok=True)
    socket_path(vault).mkdir()  # the daemon cannot bind its socket here, so it cannot run
    made = brain(vault, "remember", "Fallback still remembers", "--title", "Fallback", "--json")
    assert made.returncode == 0, made.stderr
    assert running_pid(vault) is None
    hits = json.loads(brain(vault, "recall", "fallback remembers", "--json").stdout)["hits"]
    assert hits[0]["id"] == json.loads(made.stdout)["id"]


# crashes -------------------------------------------------------------------------------------


def test_a_crashed_daemon_is_cleaned_up_and_replaced(daemon: Path) -> None:
    pid = running_pid(daemon)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    until(lambda: running_pid(daemon) is None, "the daemon to die")
    assert socket_path(daemon).exists() and pid_path(daemon).exists()  # left behind
    with pytest.raises(BrainError):
        DaemonClient.connect(daemon)
    made = brain(daemon, "remember", "After the crash")
    assert made.returncode == 0, made.stderr
    new = running_pid(daemon)
    assert new is not None and new != pid
    assert DaemonClient.connect(daemon).call("ping")["pid"] == new


def test_stop_cleans_up_after_a_crash(daemon: Path) -> None:
    pid = running_pid(daemon)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    until(lambda: running_pid(daemon) is None, "the daemon to die")
    result = brain(daemon, "daemon", "stop")
    assert "cleaned up" in result.stdout
    assert not socket_path(daemon).exists() and not pid_path(daemon).exists()


WRITER = """
import sys
from pathlib import Path
from brain._daemon.client import DaemonClient
client = DaemonClient.connect(Path(sys.argv[1]))
for n in range(int(sys.argv[3])):
    note = client.call("remember", {"text": f"writer {sys.argv[2]} memory {n}",
                                    "title": f"w{sys.argv[2]} n{n}"})
    print(note["id"], flush=True)
"""


def writers(vault: Path, count: int, each: int) -> list[subprocess.Popen[str]]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(vault), str(w), str(each)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
        )
        for w in range(count)
    ]


def test_four_concurrent_clients_lose_nothing(daemon: Path) -> None:
    each = 500
    procs = writers(daemon, 4, each)
    ids = []
    for proc in procs:
        out, errs = proc.communicate(timeout=1200)
        assert proc.returncode == 0, errs
        ids += out.split()
    assert len(ids) == len(set(ids)) == 4 * each
    backend = DaemonBackend(DaemonClient.connect(daemon))
    titles = {r["title"] for r in backend.list_notes(node="Knowledge/Inbox", limit=10_000)}
    assert titles >= {f"w{w} n{n}" for w in range(4) for n in range(each)}
    backend.close()
    stop_daemon(daemon)
    core = open_vault(daemon)
    assert core.doctor().ok
    assert {core._context.get(i).id for i in ids} == set(ids)
    core.close()


def test_the_daemon_killed_mid_write_leaves_every_note_whole(daemon: Path) -> None:
    procs = writers(daemon, 2, 400)
    acknowledged: list[str] = []
    assert procs[0].stdout is not None
    for _ in range(50):  # let some writes land, then kill it mid-stream
        acknowledged.append(procs[0].stdout.readline().strip())
    pid = running_pid(daemon)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    for proc in procs:
        out, _errs = proc.communicate(timeout=300)
        acknowledged += out.split()
        assert proc.returncode != 0  # the writers saw the daemon go
    core = open_vault(daemon)
    core._context.catch_up(force=True)  # what the next daemon does when it starts
    report = core.doctor()
    assert report.ok, report.to_json()
    for note_id in acknowledged:
        assert core._context.get(note_id).body.startswith("writer ")
    core.close()
    made = brain(daemon, "remember", "After the kill", "--json")
    assert made.returncode == 0, made.stderr
    assert running_pid(daemon) not in (None, pid)


def test_a_client_killed_mid_request_harms_nothing(daemon: Path) -> None:
    half = raw(daemon)
    body = json.dumps({"v": VERSION, "op": "remember", "args": {"text": "half"}}).encode()
    half.sendall(struct.pack(">I", len(body)) + body[:10])
    half.close()  # gone mid-message: nothing is done
    whole = raw(daemon)
    send(
        whole,
        {"v": VERSION, "op": "remember", "args": {"text": "sent, never read", "title": "Orphan"}},
    )
    whole.close()  # gone before the reply: the write is done and whole
    client = DaemonClient.connect(daemon)
    until(
        lambda: any(r["title"] == "Orphan" for r in client.call("list_notes", {})),
        "the orphaned write",
    )
    assert not any(r["title"] == "half" for r in client.call("list_notes", {}))
    assert client.call("ping")["pid"] == running_pid(daemon)


# the transport ------------------------------------------------------------------------------


def test_the_peer_check_on_a_real_socket_pair() -> None:
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert peer_uid(left) == os.getuid() == peer_uid(right)
        check_peer(left)
        with pytest.raises(PeerRefused, match="refused"):
            check_peer(left, uid=os.getuid() + 1)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to become another user")
def test_a_connection_from_another_user_is_refused() -> None:
    # A folder every user can reach (pytest's own tmp folders are private to root).
    top = Path(tempfile.mkdtemp(prefix="brain-peer-", dir="/tmp"))
    top.chmod(0o755)
    vault = new_vault(top / "vault", datetime.now(UTC))
    start(vault).close()
    try:
        (vault / ".brain").chmod(0o755)
        socket_path(vault).chmod(0o666)  # past the file mode: only the peer check is left
        child = os.fork()
        if child == 0:  # pragma: no cover (runs in the forked child)
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(str(socket_path(vault)))
                try:
                    send(sock, {"v": VERSION, "op": "ping", "args": {}})
                    code = 0 if receive(sock) is None else 1
                except (OSError, BrainError):
                    code = 0  # refused: the daemon closed the connection
            except OSError:
                code = 2
            os._exit(code)
        _pid, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        info = DaemonClient.connect(vault).call("status")
        assert info["refused"] == 1  # and the daemon serves its own user still
    finally:
        stop_daemon(vault)
        shutil.rmtree(top, ignore_errors=True)  # outside pytest's tmp folders: ours to remove


MCP_CALL: dict[str, Any] = {"session": "s", "partition": "", "arguments": {}}


def test_malformed_and_oversize_messages_are_refused_without_harm(daemon: Path) -> None:
    def refused(data: bytes) -> str:
        sock = raw(daemon)
        sock.sendall(data)
        reply = receive(sock)
        assert reply is not None and reply["ok"] is False
        assert sock.recv(1) == b""  # that connection is dropped
        sock.close()
        return str(reply["error"]["message"])

    assert "not UTF-8 JSON" in refused(struct.pack(">I", 5) + b"{oops")
    assert "JSON object" in refused(struct.pack(">I", 2) + b"[]")
    assert "over the" in refused(struct.pack(">I", MAX_MESSAGE + 1))
    assert "version" in refused(struct.pack(">I", 17) + b'{"v":99,"op":"x"}')
    sock = raw(daemon)
    bad_calls: list[tuple[dict[str, Any], str]] = [
        ({"op": "sleep"}, "unknown operation"),
        ({"op": "tier_move"}, "unknown operation"),
        ({"op": "set_field"}, "unknown operation"),
        ({"op": 7}, "must be a string"),
        ({"op": "recall", "args": []}, "must be an object"),
        ({"op": "recall", "args": {"query": 5}}, "wrong type"),
        ({"op": "recall", "args": {"query": "x", "evil": 1}}, "unknown argument"),
        ({"op": "recall", "args": {}}, "missing"),
        ({"op": "mcp", "args": {**MCP_CALL, "tool": "connect"}}, "unknown tool"),
    ]
    for message, words in bad_calls:
        reply = ask(sock, {"v": VERSION, "args": {}, **message})
        assert reply is not None and not reply["ok"] and words in reply["error"]["message"]
    assert ask(sock, {"v": VERSION, "op": "ping", "args": {}})["ok"]  # type: ignore[index]
    sock.close()
    assert brain(daemon, "recall", "anything").returncode == 0


def test_the_daemon_serves_only_its_operations() -> None:
    assert set(OPERATIONS) == {
        "remember",
        "recall",
        "expand",
        "links",
        "history",
        "list_notes",
        "count_notes",
        "forget_plan",
        "forget",
        "correct",
    }
    for admin in ("connect", "sync", "sleep", "tier_move", "set_field", "reindex", "settings"):
        assert admin not in OPERATIONS and admin not in TOOLS


# MCP through the daemon -----------------------------------------------------------------------


def test_the_serve_client_forwards_only_allowlisted_tools(daemon: Path) -> None:
    import anyio

    forward = McpForwarder(daemon, env(), "01SESSION0000000000000000A", "main", TOOLS)

    async def local(**_kw: Any) -> dict[str, Any]:
        raise AssertionError("the daemon runs, so nothing runs here")

    async def main() -> None:
        made = await forward("remember", {"text": "Forwarded to the daemon"}, local)
        hits = await forward("recall", {"query": "forwarded daemon", "k": 5, "node": None}, local)
        assert hits["hits"][0]["id"] == made["id"]
        with pytest.raises(BrainError, match="allowlist"):
            await forward("sleep", {}, local)
        with pytest.raises(InvalidInput, match="unknown tool"):
            forward.client.call(
                "mcp",
                {
                    "session": "s",
                    "partition": "main",  # type: ignore[union-attr]
                    "tool": "set_field",
                    "arguments": {},
                },
            )

    anyio.run(main)
    note = open_vault(daemon)._context.get(
        json.loads(brain(daemon, "list", "--json").stdout)["notes"][0]["id"]
    )
    assert note.source == {"via": "mcp", "session": "01SESSION0000000000000000A"}
    forward.close()


def test_brain_serve_talks_to_the_daemon(daemon: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    args = ["-m", "brain", "serve", "--vault", str(daemon)]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT), env=env())
    before = DaemonClient.connect(daemon).call("status")["requests"]

    async def main() -> None:
        async with Client(params) as client:
            made = (await client.call_tool("remember", {"text": "Served warm"})).structured_content
            found = await client.call_tool("recall", {"query": "served warm"})
            assert found.structured_content["hits"][0]["id"] == made["id"]
            bad = await client.call_tool("remember", {"text": "x", "visibility": "private"})
            assert bad.is_error
            missing = await client.call_tool("expand", {"note_id": "01JE2Z3K00000000000000000A"})
            assert missing.is_error and "no note" in missing.content[0].text  # type: ignore[union-attr]

    anyio.run(main)
    assert DaemonClient.connect(daemon).call("status")["requests"] >= before + 3


# the same results both ways --------------------------------------------------------------------


@pytest.fixture(params=["process", "daemon"])
def backend(request: pytest.FixtureRequest, vault: Path) -> Iterator[Any]:
    if request.param == "process":
        found: Any = LocalBackend(open_vault(vault))
        yield found
        found.close()
        return
    start(vault).close()
    found = DaemonBackend(DaemonClient.connect(vault))
    yield found
    found.close()
    stop_daemon(vault)


def test_core_cases_both_ways(backend: Any) -> None:
    first = backend.remember("Miso is a grey cat who likes boxes.", title="Miso", tags=["pets"])
    again = backend.remember("Miso also likes the sun.", title="miso")
    assert again["id"] == first["id"] and "sun" in again["body"]  # the same title, same note
    other = backend.remember("The widget runs on a 12 volt motor.", title="Widget")
    hits = backend.recall("grey cat boxes")
    assert hits[0]["id"] == first["id"] and hits[0]["title"] == "Miso"
    assert backend.recall("volt motor", k=1, mode="text")[0]["id"] == other["id"]
    listed = backend.list_notes(node="Knowledge/Inbox")
    assert [r["title"] for r in listed][:2] in (["Widget", "Miso"], ["Miso", "Widget"])
    whole = backend.expand(first["id"])
    assert whole["meta"]["tags"] == ["pets"] and "boxes" in whole["body"]
    fixed = backend.correct(other["id"], "The widget runs on a 24 volt motor.")
    assert fixed["meta"]["supersedes"] == other["id"]
    versions = backend.history(fixed["id"])
    assert [v["id"] for v in versions] == [other["id"], fixed["id"]]
    assert backend.links(fixed["id"])["outgoing"][0]["type"] == "corrects"
    plan = backend.forget_plan(fixed["id"])
    assert plan["restored"] == other["id"] and plan["notes"] == 1
    assert backend.forget(fixed["id"])
    assert backend.recall("widget volt", k=1)[0]["id"] == other["id"]
    with pytest.raises(InvalidInput, match="not a note id"):
        backend.expand("nope")
    with pytest.raises(NotFound, match="no note"):
        backend.expand("01JE2Z3K00000000000000000A")
    with pytest.raises(InvalidInput, match="query is empty"):
        backend.recall("  ")


def test_daemon_and_process_read_alike(daemon: Path) -> None:
    remote = DaemonBackend(DaemonClient.connect(daemon))
    for n in range(12):
        remote.remember(
            f"Note {n} about gardening, tomatoes and basil number {n}.",
            title=f"Garden {n}",
            tags=["garden"],
        )
    local = LocalBackend(open_vault(daemon))
    for query in ("tomatoes", "basil number 7", "gardening"):
        assert remote.recall(query, k=8) == local.recall(query, k=8)
    assert remote.list_notes(limit=100) == local.list_notes(limit=100)
    remote.close()
    local.close()


# the fast path of `brain recall` ---------------------------------------------------------------

FULL = "import sys\nfrom brain._cli import main\nsys.argv = ['brain', *sys.argv[1:]]\nmain()\n"
PROBE = (
    "import sys\nfrom brain.__main__ import answered\n"
    "done = answered(sys.argv[1:])\n"
    "print('ANSWERED', done, 'typer' in sys.modules, 'brain._brain' in sys.modules)\n"
)


def test_fast_recall_to_a_reader_that_went_away_ends_quietly(daemon: Path) -> None:
    remote = DaemonBackend(DaemonClient.connect(daemon))
    for n in range(30):
        remote.remember(f"Widget {n} runs on a 12 volt motor.", title=f"Widget {n}")
    remote.close()
    read, write = os.pipe()
    os.close(read)  # `brain recall widget | head -1`: the reader gone before brain writes
    args = ["recall", "widget", "-k", "30", "--vault", str(daemon)]  # the fast path's own
    done = subprocess.run(
        [sys.executable, "-m", "brain", *args], stdout=write, stderr=subprocess.PIPE, env=env()
    )
    os.close(write)
    assert done.returncode == 1, done.stderr  # as the full command line ends
    assert b"Traceback" not in done.stderr


def test_fast_recall_prints_what_the_full_command_prints(daemon: Path) -> None:
    remote = DaemonBackend(DaemonClient.connect(daemon))
    old = remote.remember("The widget runs on a 12 volt motor.", title="Widget")
    remote.correct(old["id"], "The widget runs on a 24 volt motor.")
    remote.remember("Widgets ship in blue boxes.", title="Shipping")
    remote.close()
    cases = [
        ["recall", "widget motor"],
        ["recall", "widget", "--json"],
        ["recall", "-k", "1", "widget", "--superseded"],
        ["recall", "--mode=text", "volt", "--superseded", "--json"],
        ["recall", "nothing like this at all"],
        ["recall", "quantum chromodynamics homework", "--json"],
    ]
    for args in cases:
        fast = brain(daemon, *args)
        full = subprocess.run(
            [sys.executable, "-c", FULL, *args, "--vault", str(daemon)],
            capture_output=True,
            text=True,
            env=env(),
            cwd=ROOT,
        )
        assert fast.returncode == full.returncode == 0, fast.stderr + full.stderr
        assert fast.stdout == full.stdout
    # Nothing in the vault is about these: said so both ways (recall/relevance.py).
    assert brain(daemon, *cases[4]).stdout == f"nothing relevant in {daemon}\n"
    answer = json.loads(brain(daemon, *cases[5]).stdout)
    assert answer["hits"] == [] and answer["nothing_relevant"] is True
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, "recall", "widget", "--vault", str(daemon)],
        capture_output=True,
        text=True,
        env=env(),
    )
    assert "ANSWERED True False False" in probe.stdout  # no typer, no core: the daemon answered
    bad = brain(daemon, "recall", "   ")
    assert bad.returncode == 2 and "query is empty" in bad.stderr
    for other in (["recall", "--help"], ["recall", "-k", "x", "q"], ["list"], ["recall"]):
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, *other], capture_output=True, text=True, env=env()
        )
        assert "ANSWERED False" in probe.stdout  # left to the full command line


def test_the_daemon_watches_the_vault_for_hand_edits(daemon: Path) -> None:
    core = open_vault(daemon)  # only reads the shared catalog: it never walks the files here
    rel = "main/Knowledge/Inbox/Dropped by hand.md"
    (daemon / rel).write_text("A note written in an editor, not through brain.\n")
    until(
        lambda: core._context.caches.catalog.file(rel) is not None, "the watcher to index the file"
    )
    assert core._context.caches.catalog.file(rel).note_id  # type: ignore[union-attr]  # adopted: has an id
    core.close()
    info = DaemonClient.connect(daemon).call("status")
    assert info["requests"] == 0  # no client asked: the daemon's watcher did it


def test_the_cli_suites_core_cases_through_the_daemon(
    daemon: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import tests.cli.test_cli as cli_cases
    import tests.notes.test_corrections as correction_cases

    monkeypatch.delenv("BRAIN_DAEMON")
    monkeypatch.setenv("BRAIN_VAULT", str(daemon))
    before = DaemonClient.connect(daemon).call("status")["requests"]
    cli_cases.test_init_remember_recall_expand_list_forget(CliRunner(), daemon)
    cli_cases.test_remember_reads_stdin_and_takes_options(CliRunner())
    correction_cases.test_expand_history_lists_versions_oldest_first_with_dates(CliRunner(), daemon)
    served = DaemonClient.connect(daemon).call("status")["requests"] - before
    assert served >= 12  # every one of those commands was answered by the daemon


def test_the_daemon_follows_brain_yaml(daemon: Path) -> None:
    """`brain partition use` (in the person's own process) moves the daemon's commands too."""
    made = brain(daemon, "partition", "create", "work")
    assert made.returncode == 0, made.stderr
    assert brain(daemon, "partition", "use", "work").returncode == 0
    note = json.loads(brain(daemon, "remember", "Filed under work", "--json").stdout)
    assert note["path"].startswith("work/")
    assert DaemonClient.connect(daemon).call("status")["requests"] >= 1


@pytest.mark.usefixtures("autostart")
def test_a_brain_package_where_the_client_runs_is_never_the_daemons_code(
    vault: Path, tmp_path: Path
) -> None:
    here = tmp_path / "checkout"
    (here / "brain").mkdir(parents=True)
    marker = tmp_path / "ran"
    hostile = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    (here / "brain/__init__.py").write_text(hostile + "raise SystemExit(1)\n")
    try:
        # The `brain` script never looks in the current folder; `-P` keeps this client so.
        done = subprocess.run(
            [sys.executable, "-P", "-m", "brain", "list", "--vault", str(vault)],
            capture_output=True,
            text=True,
            env=env(),
            cwd=here,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert running_pid(vault) is not None  # the daemon answered it
        assert not marker.exists()
    finally:
        stop_daemon(vault)
