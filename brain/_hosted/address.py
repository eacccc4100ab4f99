"""Where `brain serve --http` listens and whom it answers: its address, its listening socket,
the Host and Origin headers it accepts, and its per-request limits."""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass, field

from brain._errors import BrainError, InvalidInput
from brain._hosted.limits import BODY_TIMEOUT, HEADER_TIMEOUT, PER_USER

BACKLOG = 2048


@dataclass(frozen=True)
class Address:
    host: str
    port: int


def parse_address(text: str, *, public: bool) -> Address:
    """HOST:PORT (or [v6]:PORT); a host off this machine only when `public` says so."""
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InvalidInput(f"--http {text!r} is not HOST:PORT", "e.g. --http 127.0.0.1:8765")
    if not public and not _loopback(host):
        raise InvalidInput(
            f"--http {host} is not a loopback address: the server would be reachable from "
            "other machines",
            "bind 127.0.0.1 behind a TLS reverse proxy, or pass --public to mean it",
        )
    return Address(host, int(port))


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen(address: Address) -> socket.socket:
    """A listening TCP socket at the address (port 0: any free one)."""
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit this: without it a reply written in two parts (headers,
    # body) waits for the client's delayed ACK on a kept-alive connection, ~40 ms a request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((address.host, address.port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise BrainError(
            f"cannot listen on {address.host}:{address.port}: {exc.strerror}",
            "choose another port, or stop what listens there",
        ) from None
    return sock


@dataclass(frozen=True)
class Limits:
    """Seconds for a request's headers and body, requests of one user in flight at once."""

    header: float = HEADER_TIMEOUT
    body: float = BODY_TIMEOUT
    per_user: int = PER_USER


@dataclass(frozen=True)
class Allowed:
    """Host and Origin headers accepted beside loopback's (`--allowed-host`,
    `--allowed-origin`); `hosts=None`: no check at all (`--public` alone)."""

    hosts: list[str] | None = field(default_factory=list)
    origins: list[str] = field(default_factory=list)


def allowed(hosts: list[str], origins: list[str], *, public: bool) -> Allowed:
    """The options checked: a host name (with a port or `:*`, else any port), an origin
    `scheme://host[:port]`; one bad value is one clear error."""
    for host in hosts:
        if not _HOST.fullmatch(host):
            raise InvalidInput(
                f"--allowed-host {host!r} is not a host name",
                "e.g. --allowed-host brain.example.com",
            )
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            raise InvalidInput(
                f"--allowed-origin {origin!r} is not an origin",
                "e.g. --allowed-origin https://app.example.com",
            )
    return Allowed(None if public and not hosts else hosts, origins)


_HOST = re.compile(r"(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}|\*))?")
_ORIGIN = re.compile(r"https?://(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}|\*))?")
