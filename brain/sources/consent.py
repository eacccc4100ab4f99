"""Asking the person in front of the machine: the controlling terminal, never stdin.

A connector reads someone's files, so its consent must come from a person at this computer.
Standard input can be a pipe from a script or a model's tool call; the controlling terminal
(`/dev/tty`) cannot be faked that way. No flag, environment variable or setting skips this.
"""

from __future__ import annotations

import os

from brain.errors import NoTerminal

TTY = "/dev/tty"


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
