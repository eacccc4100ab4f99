"""`brain serve --http`'s options, refused before anything listens; the rate limit's bucket."""

from __future__ import annotations

import socket

import pytest
from typer.testing import CliRunner

from brain._cli import _register as register_commands
from brain._cli import app
from brain._errors import BrainError, InvalidInput
from brain._hosted.address import Address, listen, parse_address
from brain._hosted.guard import RateLimit


@pytest.mark.parametrize(
    ("text", "public", "expected"),
    [
        ("127.0.0.1:8765", False, Address("127.0.0.1", 8765)),
        ("localhost:0", False, Address("localhost", 0)),
        ("[::1]:9000", False, Address("::1", 9000)),
        ("0.0.0.0:8765", True, Address("0.0.0.0", 8765)),
    ],
)
def test_addresses(text: str, public: bool, expected: Address) -> None:
    assert parse_address(text, public=public) == expected


@pytest.mark.parametrize("text", ["0.0.0.0:8765", "192.168.1.4:80", "example.com:80", "[::]:1"])
def test_a_host_off_this_machine_needs_public(text: str) -> None:
    with pytest.raises(InvalidInput, match="not a loopback address"):
        parse_address(text, public=False)


@pytest.mark.parametrize("text", ["8765", "127.0.0.1", "127.0.0.1:http", ":80", "h:99999"])
def test_a_malformed_address_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput, match="is not HOST:PORT"):
        parse_address(text, public=True)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--http", "0.0.0.0:8765", "--db", "x", "--vaults", "v"], "not a loopback address"),
        (["--http", "127.0.0.1:8765", "--vaults", "v"], "--http needs --db"),
        (["--http", "127.0.0.1:8765", "--db", "x"], "cannot connect to the database"),
        (["--http", "127.0.0.1:1", "--db", "x", "--vaults", "v", "--rate", "0"], "--rate"),
        (
            ["--http", "127.0.0.1:1", "--db", "x", "--vaults", "v", "--embedder", "big"],
            "unknown embedder",
        ),
        (["--http", "127.0.0.1:1", "--db", "x", "--allowed-host", "a b"], "--allowed-host 'a b'"),
        (
            ["--http", "127.0.0.1:1", "--db", "x", "--allowed-origin", "app.example.com"],
            "--allowed-origin 'app.example.com' is not an origin",
        ),
        (["--http", "127.0.0.1:1", "--db", "x", "--workers", "0"], "--workers"),
    ],
)
def test_serve_http_refuses_in_one_line(
    args: list[str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BRAIN_DB", raising=False)
    register_commands()
    result = CliRunner().invoke(app, ["serve", *args])
    assert result.exit_code == 2 and said in result.stderr
    assert "Traceback" not in result.output


def test_the_bucket_allows_a_burst_then_the_rate() -> None:
    now = [0.0]
    limit = RateLimit(rate=2.0, burst=3, clock=lambda: now[0])
    assert [limit.wait("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limit.wait("a") == pytest.approx(0.5)
    assert limit.wait("b") == 0.0  # each tenant has its own
    now[0] += 0.5
    assert limit.wait("a") == 0.0 and limit.wait("a") > 0
    now[0] += 100
    assert [limit.wait("a") for _ in range(4)][:3] == [0.0, 0.0, 0.0]  # refills to the burst


def test_accepted_connections_send_without_waiting_for_acks() -> None:
    sock = listen(Address("127.0.0.1", 0))
    client = socket.create_connection(sock.getsockname()[:2])
    accepted, _peer = sock.accept()
    try:
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        for s in (accepted, client, sock):
            s.close()


def test_a_port_in_use_is_one_clear_error() -> None:
    taken = listen(Address("127.0.0.1", 0))
    try:
        with pytest.raises(BrainError, match=r"cannot listen on 127\.0\.0\.1"):
            listen(Address("127.0.0.1", taken.getsockname()[1]))
    finally:
        taken.close()
