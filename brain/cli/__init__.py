"""The `brain` command: parse, call the core, render. The one place errors become exit codes.

Each area of commands lives in its own module here and registers itself on `app`.
"""

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

from brain.errors import BrainError, InvalidInput

if TYPE_CHECKING:
    from brain.brain import Brain
    from brain.indexes.catalog import ObjectRow
    from brain.model import Note

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
            try:
                return fn(*args, **kw)
            except BrainError as exc:
                if _state["debug"]:
                    raise
                err.print(f"[red]error:[/red] {escape(str(exc))}")
                raise typer.Exit(2) from None

        (group or app).command(*names, **kwargs)(guarded)
        return fn

    return wrap


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


def note_json(note: Note) -> dict[str, Any]:
    return {"id": note.id, "path": note.path, "meta": dict(note.meta), "body": note.body}


def row_json(row: ObjectRow) -> dict[str, Any]:
    return {
        "id": row.id, "title": row.title, "kind": row.kind, "status": row.status,
        "created": row.created, "touched": row.touched, "path": row.path, "node": row.node,
        "tags": list(row.tags), "source": row.source, "defining": row.defining,
        "visibility": row.visibility,
    }  # fmt: skip


def main() -> None:
    """Entry point of the `brain` script and `python -m brain`."""
    _register()
    app()


def _register() -> None:
    # Importing a command module registers its commands on `app`.
    import brain.cli.git  # noqa: F401
    from brain.cli import corrections, daemon, ingestion, links, notes, serve, upkeep  # noqa: F401
