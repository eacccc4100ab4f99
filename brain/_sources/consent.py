"""Asking the person in front of the machine: the controlling terminal, never stdin.

A connector reads someone's files, so its consent must come from a person at this computer.
Standard input can be a pipe from a script or a model's tool call; the controlling terminal
(`/dev/tty`) cannot be faked that way, and a pseudo-terminal driven blind (`script`, `expect`
sending a guess) does not know the random code shown only on the terminal. No flag,
environment variable or setting skips this. What it cannot stop: a program running as you that
reads your terminal's output (docs/security.md).

A confirmation is sealed with an HMAC under a key made on this machine at the first
confirmation (`.brain/consent.key`, 0600): an entry written into `.brain/connectors.json` by
hand, by a script that did not run the question, or copied from elsewhere does not count.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from brain._errors import NoTerminal

TTY = "/dev/tty"
KEY_FILE = "consent.key"
# No 0/O, 1/I/L: a code read off a terminal and typed back, case ignored.
CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 6  # 31**6 ≈ 887 million codes, a new one for every question


def challenge() -> str:
    """A short random code for the person to type back; never derived from anything a script
    could know (not the folder's name)."""
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def answers(code: str, typed: str) -> bool:
    """Whether the typed line is the code (case and surrounding space ignored)."""
    return hmac.compare_digest(typed.strip().upper().encode(), code.encode())


def seal(cache: Path, record: dict[str, Any]) -> str:
    """The HMAC of a confirmation record under this machine's key (made on first use)."""
    key = _key(cache, create=True)
    assert key is not None  # made if missing
    return _mac(key, record)


def sealed(cache: Path, record: dict[str, Any], mac: object) -> bool:
    """Whether a stored confirmation was sealed here (False without a key or a seal)."""
    key = _key(cache, create=False)
    if key is None or not isinstance(mac, str):
        return False
    return hmac.compare_digest(_mac(key, record), mac)


def _mac(key: bytes, record: dict[str, Any]) -> str:
    data = json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def _key(cache: Path, *, create: bool) -> bytes | None:
    path = cache / KEY_FILE
    with contextlib.suppress(FileNotFoundError):
        return path.read_bytes()
    if not create:
        return None
    # Made whole under a temporary name, then linked into place: two confirmations at once
    # agree on one key, and nobody reads half of one.
    cache.mkdir(parents=True, exist_ok=True)
    temp = cache / f".{KEY_FILE}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, secrets.token_bytes(32))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(temp)
    return path.read_bytes()


def ask_at_terminal(summary: str, question: str) -> str:
    """Show summary and question on the controlling terminal and return the typed line."""
    try:
        fd = os.open(TTY, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise NoTerminal(
            "this must be confirmed by you at a terminal, and this process has none "
            "(run from a script, a service or an MCP host); nothing was read",
            "run the same command yourself in a terminal window",
        ) from None
    try:
        os.write(fd, (summary.rstrip("\n") + "\n" + question).encode("utf-8"))
        answer = bytearray()
        while not answer.endswith(b"\n"):
            piece = os.read(fd, 1024)
            if not piece:
                break  # end of input: no answer
            answer += piece
        return answer.decode("utf-8", errors="replace").strip()
    finally:
        os.close(fd)


def confirm_purge(summary: str) -> bool:
    """Ask the person at the terminal to approve a history rewrite with a fresh code; no flag,
    variable or setting answers for them (a rewrite cannot be undone)."""
    code = challenge()
    try:
        typed = ask_at_terminal(summary, f"Type the code {code} to rewrite the history: ")
    except NoTerminal:
        raise NoTerminal(
            "rewriting history must be confirmed by you at a terminal, and this process has "
            "none (a script, a service or an MCP host); nothing was forgotten",
            "run the same command yourself in a terminal window",
        ) from None
    return answers(code, typed)
