"""Commands that change what a memory says: correct, forget; and how history is shown."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from brain.cli.app import JsonOpt, VaultOpt, command, emit_json, out, read_text
from brain.cli.daemon import open_backend
from brain.daemon.backend import note_from_json
from brain.errors import InvalidInput


@command()
def correct(
    note_id: Annotated[str, typer.Argument(metavar="ID", help="The note to correct.")],
    text: Annotated[str, typer.Argument(help="What is true now, or - to read stdin.")],
    title: Annotated[
        str | None, typer.Option(help="A new title (else the note keeps its own).")
    ] = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a new version of a note; the old one is kept as history (expand --history)."""
    body = read_text(text)
    backend = open_backend(vault)
    data = backend.correct(note_id, body, title)
    backend.close()
    if as_json:
        emit_json(data)
    else:
        note = note_from_json(data)
        out.print(
            f"Corrected: [bold]{escape(note.title)}[/bold] is now {note.id}; "
            f"{note.supersedes} is kept as history."
        )


@command()
def forget(
    note_id: Annotated[str, typer.Argument(metavar="ID", help="The note's id.")],
    version: Annotated[
        bool,
        typer.Option("--version", help="Remove only this version and relink the others."),
    ] = False,
    history: Annotated[
        bool, typer.Option("--history", help="Remove every version of this note.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Do not ask before removing more than one note.")
    ] = False,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget a note and its children; on a corrected note, go back to the previous version."""
    if version and history:
        raise InvalidInput("--version and --history exclude each other; choose one")
    mode = "version" if version else "history" if history else "auto"
    backend = open_backend(vault)
    plan = backend.forget_plan(note_id, mode)
    notes = plan.pop("notes")
    if notes > 1 and not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(
                f"forgetting {note_id} removes {notes} notes and there is no terminal to ask on",
                "pass --yes to confirm",
            )
        for row in plan["removed"]:
            out.print(f"  {row['id']}  {escape(row['title'])}  [dim]{escape(row['path'])}[/dim]")
        if not typer.confirm(f"Forget these {notes} notes?", default=False):
            out.print("Nothing forgotten.")
            raise typer.Exit(1)
    removed = backend.forget(note_id, mode)
    backend.close()
    if as_json:
        emit_json({"forgotten": removed, **plan})
        return
    if plan["restored"] is not None:
        out.print(f"Forgot {note_id}; {plan['restored']} is current again.")
    else:
        out.print(f"Forgot {notes} note(s) ({len(removed)} object(s) removed from the caches).")
    for other in plan["relinked"]:
        out.print(f"  {other} now follows the version before {note_id}.")
    if plan["unlinked"]:
        out.print(f"  Relations to it were removed from {len(plan['unlinked'])} note(s).")


def print_history(note_id: str, versions: list[dict[str, Any]], as_json: bool) -> None:
    """Every version, oldest first, with its date and status."""
    if as_json:
        emit_json({"id": note_id, "history": versions})
        return
    for n, version in enumerate(note_from_json(v) for v in versions):
        mark = "current" if version.status != "superseded" else "superseded"
        out.print(
            f"[bold]{n + 1}. {version.created}[/bold]  {version.id}  [yellow]{mark}[/yellow]  "
            f"[dim]{escape(version.path)}[/dim]"
        )
        for line in version.body.rstrip().splitlines():
            out.print(f"   {escape(line)}")


def print_links(data: dict[str, Any]) -> None:
    """Outgoing and incoming relations, as `Backend.links` gives them."""
    for e in data["outgoing"]:
        title = e["title"] if e["title"] is not None else "(missing)"
        out.print(f"[dim]→ {e['type']}[/dim] {e['id']} {escape(title)}{_weight(e)}")
    for e in data["incoming"]:
        title = e["title"] if e["title"] is not None else "(missing)"
        out.print(f"[dim]← {e['type']}[/dim] {e['id']} {escape(title)}{_weight(e)}")


def _weight(edge: dict[str, Any]) -> str:
    return f" [dim](weight {edge['weight']:g})[/dim]" if edge["weight"] is not None else ""
