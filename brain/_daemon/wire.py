"""The daemon's wire format and the peer check.

A message is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON: an object
carrying `v` (the protocol version). Requests are `{"v", "op", "args", "zone"}` (`zone`: the
client's time zone, clock.zone_name; a client of an older brain sends none); replies are
`{"v", "ok": true, "result"}` or `{"v", "ok": false, "error": {"type", "message", "hint"}}`.
A length over MAX_MESSAGE, bytes that are not JSON, or another version are refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from brain import _errors as errors
from brain._errors import BrainError

VERSION = 1
MAX_MESSAGE = 8 * 1024 * 1024  # bytes; a note is at most 64 KiB, an expanded document more
_HEADER = struct.Struct(">I")


class WireError(BrainError):
    """A message that breaks the format: too big, not JSON, another version, cut short."""


class TooBig(WireError):
    """A message over MAX_MESSAGE, refused before a byte of it was sent."""


class PeerRefused(BrainError):
    """The other end of the socket belongs to another user (or cannot be identified)."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_MESSAGE:
        raise TooBig(f"message of {len(data)} bytes is over the {MAX_MESSAGE}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def receive(sock: socket.socket) -> dict[str, Any] | None:
    """The next message, or None when the other end closed cleanly between messages."""
    header = _read(sock, _HEADER.size, allow_eof=True)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > MAX_MESSAGE:
        raise WireError(f"message of {size} bytes is over the {MAX_MESSAGE}-byte limit")
    data = _read(sock, size, allow_eof=False)
    assert data is not None
    try:
        message = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"message is not UTF-8 JSON: {exc}") from None
    if not isinstance(message, dict):
        raise WireError("message must be a JSON object")
    if message.get("v") != VERSION:
        raise WireError(
            f"protocol version {message.get('v')!r} is not {VERSION}",
            "restart the daemon (`brain daemon stop`) after upgrading brain",
        )
    return message


def _read(sock: socket.socket, size: int, *, allow_eof: bool) -> bytes | None:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 20))
        if not chunk:
            if allow_eof and got == 0:
                return None
            raise WireError(f"message cut short after {got} of {size} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def reply_ok(result: Any) -> dict[str, Any]:
    return {"v": VERSION, "ok": True, "result": result}


def reply_error(exc: BrainError) -> dict[str, Any]:
    error = {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}
    return {"v": VERSION, "ok": False, "error": error}


def raise_error(error: dict[str, Any]) -> None:
    """Raise the BrainError a reply carries, as the same class when brain knows it."""
    kind = getattr(errors, str(error.get("type")), None)
    if not (isinstance(kind, type) and issubclass(kind, BrainError)):
        kind = {"WireError": WireError, "PeerRefused": PeerRefused}.get(
            str(error.get("type")), BrainError
        )
    raise kind(str(error.get("message", "")), error.get("hint") or None)


def peer_uid(sock: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket, from the kernel."""
    if sys.platform.startswith("linux"):
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        return int(uid)
    if hasattr(socket, "LOCAL_PEERCRED"):  # BSD, macOS: struct xucred {u_int version; uid_t uid}
        creds = sock.getsockopt(0, socket.LOCAL_PEERCRED, struct.calcsize("2I"))
        return int(struct.unpack("2I", creds)[1])
    raise PeerRefused(f"cannot check the peer of a socket on {sys.platform}")


def peer_pid(sock: socket.socket) -> int | None:
    """The process id at the other end of a Unix socket (Linux only; None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[0])


def check_peer(sock: socket.socket, uid: int | None = None) -> None:
    """Refuse a peer that is not this user (the daemon's and the client's own check)."""
    want = os.getuid() if uid is None else uid
    got = peer_uid(sock)
    if got != want:
        raise PeerRefused(f"socket peer is user {got}, not {want}; refused")


def bind_unix(sock: socket.socket, path: Path) -> None:
    """bind() to a path, even one longer than a socket address holds (via /proc on Linux)."""
    with _short(path) as address:
        sock.bind(address)


def connect_unix(sock: socket.socket, path: Path) -> None:
    with _short(path) as address:
        sock.connect(address)


@contextlib.contextmanager
def _short(path: Path) -> Iterator[str]:
    name = os.fspath(path)
    if len(os.fsencode(name)) < 100 or not Path("/proc/self/fd").is_dir():
        yield name
        return
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{folder}/{path.name}"
    finally:
        os.close(folder)
