"""The typer app, the error boundary its commands register behind, and what they all share."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from brain.errors import InvalidInput, boundary

if TYPE_CHECKING:
    from brain.brain import Brain

app = typer.Typer(
    help="brain: a local-first long-term memory in a folder of Markdown files.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)
_state = {"debug": False}

F = TypeVar("F", bound=Callable[..., Any])

VaultOpt = Annotated[
    Path | None,
    typer.Option(
        "--vault",
        help="The vault folder (else $BRAIN_VAULT, else the nearest folder upward with "
        "brain.yaml, else ~/brain).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


def command(*names: str, group: typer.Typer | None = None, **kwargs: Any) -> Callable[[F], F]:
    """Register a command (on `app`, or a sub-command group) behind the error boundary:
    BrainError → one red line on stderr, exit 2."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: Any, **kw: Any) -> Any:
            with boundary(say_error, debug=_state["debug"]):
                return fn(*args, **kw)

        (group or app).command(*names, **kwargs)(guarded)
        return fn

    return wrap


def say_error(message: str) -> None:
    """How the command line shows a BrainError: one red line on stderr."""
    err.print(f"[red]error:[/red] {escape(message)}")


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    _state["debug"] = debug


def vault_path(explicit: Path | None) -> tuple[Path, str]:
    from brain.settings import find_vault

    return find_vault(explicit, os.environ, Path.cwd(), Path.home())


def open_brain(explicit: Path | None) -> Brain:
    from brain.brain import open_vault

    root, _how = vault_path(explicit)
    return open_vault(root)


def read_text(text: str) -> str:
    """TEXT, or stdin when TEXT is `-` (strict UTF-8)."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"stdin is not valid UTF-8 (byte {exc.start})") from None


def emit_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))
