"""The command line's fast path: with the daemon warm, `brain recall` answers without loading
typer, rich or the core, so a person typing it gets an answer in a blink.

Only a plain `recall` whose every argument is understood here takes this path, and only when the
daemon already runs; anything else (help, an unknown option, no daemon) goes to the full
command line, which gives the same results. The text printed is what the full command prints.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from brain._streams import (
    Stopped,
    ending_as_ctrl_c,
    exit_code,
    fit_streams,
    interrupted,
    not_utf8,
    speaks_unicode,
)

_VALUED = {
    "-k": "k",
    "--node": "node",
    "--mode": "mode",
    "--scope": "scope",
    "--vault": "vault",
    "--partition": "partition",
}
_FLAGS = {"--superseded": "include_superseded", "--defining": "defining_first", "--json": "json"}


def main() -> None:
    """Entry point of the `brain` script and `python -m brain`."""
    fit_streams()
    refuse_bytes(sys.argv[1:])
    try:
        Path.cwd()
    except FileNotFoundError:  # a shell left standing in a folder since deleted or replaced
        sys.stderr.write(
            "error: the folder this command was started in no longer exists (deleted, or "
            'replaced by a new folder of its name) (`cd "$PWD"` enters the folder now there)\n'
        )
        sys.exit(2)
    try:
        with ending_as_ctrl_c():  # the full CLI's long-lived commands keep their own handling
            done = answered(sys.argv[1:])
        if not done:
            from brain._cli import main as full

            full()
    except BrokenPipeError:  # the reader went away (`brain list | head -1`): nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush too
        sys.exit(1)  # as click ends the full command line on a broken pipe
    except KeyboardInterrupt as stop:  # the fast path, or the full CLI still loading
        signum = stop.signum if isinstance(stop, Stopped) else signal.SIGINT
        named = [arg for arg in sys.argv[1:2] if not arg.startswith("-")]
        sys.stderr.write(interrupted(" ".join(named), signum) + "\n")
        sys.exit(exit_code(signum))


def refuse_bytes(argv: list[str]) -> None:
    """One line and exit 2 for an argument that is not UTF-8, before anything is read or written."""
    problem = not_utf8(argv)
    if problem is not None:
        from brain._errors import InvalidInput, boundary

        with boundary(lambda message: print(f"error: {message}", file=sys.stderr)):
            raise InvalidInput(
                problem,
                "brain reads its arguments as UTF-8: convert the text first, e.g. with "
                "iconv -f latin1 -t utf-8, or rename a file or folder so named",
            )


def answered(argv: Sequence[str]) -> bool:
    """Answer `brain recall …` through a running daemon; False: leave it to the full CLI."""
    parsed = _parse(argv)
    if parsed is None:
        return False
    from brain._daemon import daemon_off
    from brain._daemon.client import DaemonClient
    from brain._errors import BrainError, TurnedAway, boundary
    from brain._settings import find_vault, passed_over

    try:
        if daemon_off(os.environ):
            return False
        explicit = parsed.pop("vault", None)
        root, how = find_vault(
            Path(explicit) if explicit else None, os.environ, Path.cwd(), Path.home()
        )
        client = DaemonClient.connect(root)
    except BrainError:
        return False
    if (said := passed_over(root, how, Path.cwd())) is not None:
        sys.stderr.write(f"note: {said}\n")  # as the full command line says it
    as_json = parsed.pop("json", False)
    try:
        with boundary(lambda message: print(f"error: {message}", file=sys.stderr)):
            try:
                hits = client.call("recall", parsed)
            except TurnedAway:  # the daemon is stopping and did not run it: the full CLI does
                return False
    finally:
        client.close()
    if as_json:
        answer = {"query": parsed["query"], "hits": hits, "nothing_relevant": not hits}
        ascii_only = not speaks_unicode(sys.stdout)
        print(json.dumps(answer, ensure_ascii=ascii_only, indent=2))
    else:
        _print_hits(hits, root)
    return True


def _parse(argv: Sequence[str]) -> dict[str, Any] | None:
    if not argv or argv[0] != "recall":
        return None
    found: dict[str, Any] = {}
    rest = list(argv[1:])
    while rest:
        arg = rest.pop(0)
        name, eq, inline = arg.partition("=")
        if name in _VALUED and (eq or rest):
            value = inline if eq else rest.pop(0)
            if name == "-k":
                if not value.isdigit():
                    return None  # the full CLI says what is wrong
                found["k"] = int(value)
            else:
                found[_VALUED[name]] = value
        elif arg in _FLAGS:
            found[_FLAGS[arg]] = True
        elif arg.startswith("-") or "query" in found:
            return None
        else:
            found["query"] = arg
    return found if "query" in found else None


def _print_hits(hits: list[dict[str, Any]], root: Path) -> None:
    from brain._clock import local_zone
    from brain._hitview import hit_lines

    on = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for line in hit_lines(hits, str(root), local_zone()):
        print("".join(_styled(text, style, on) for text, style in line))


# ANSI codes for the styles of brain/_hitview.py, as the full CLI's rich console shows them.
_ANSI = {"bold": "1", "dim": "2", "yellow": "33", "green": "32"}


def _styled(text: str, style: str, on: bool) -> str:
    return f"\x1b[{_ANSI[style]}m{text}\x1b[0m" if on and style else text


if __name__ == "__main__":
    main()
