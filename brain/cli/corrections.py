"""Commands that change what a memory says: correct, forget; and how history is shown."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from brain.cli import JsonOpt, VaultOpt, command, emit_json, note_json, open_brain, out, read_text
from brain.errors import InvalidInput

if TYPE_CHECKING:
    from brain.brain import Brain


@command()
def correct(
    note_id: Annotated[str, typer.Argument(metavar="ID", help="The note to correct.")],
    text: Annotated[str, typer.Argument(help="What is true now, or - to read stdin.")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a new version of a note; the old one is kept as history (expand --history)."""
    body = read_text(text)
    note = open_brain(vault).correct(note_id, body)
    if as_json:
        emit_json(note_json(note))
    else:
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
    brain = open_brain(vault)
    plan = brain.forget_plan(note_id, mode)
    if plan.notes > 1 and not yes:
        if not sys.stdin.isatty():
            raise InvalidInput(
                f"forgetting {note_id} removes {plan.notes} notes and there is no terminal "
                "to ask on",
                "pass --yes to confirm",
            )
        for row in plan.remove:
            out.print(f"  {row.id}  {escape(row.title)}  [dim]{escape(row.path)}[/dim]")
        if not typer.confirm(f"Forget these {plan.notes} notes?", default=False):
            out.print("Nothing forgotten.")
            raise typer.Exit(1)
    removed = brain.forget(note_id, mode)
    if as_json:
        emit_json({"forgotten": removed, **plan.to_json()})
        return
    if plan.restored is not None:
        out.print(f"Forgot {note_id}; {plan.restored.id} is current again.")
    else:
        out.print(
            f"Forgot {plan.notes} note(s) ({len(removed)} object(s) removed from the caches)."
        )
    for other in plan.relinked:
        out.print(f"  {other} now follows the version before {note_id}.")
    if plan.unlinked:
        out.print(f"  Relations to it were removed from {len(plan.unlinked)} note(s).")


def render_history(brain: Brain, note_id: str, as_json: bool) -> None:
    """Every version, oldest first, with its date and status."""
    versions = brain.history(note_id)
    if as_json:
        emit_json({"id": note_id, "history": [note_json(v) for v in versions]})
        return
    for n, version in enumerate(versions, 1):
        mark = "current" if version.status != "superseded" else "superseded"
        out.print(
            f"[bold]{n}. {version.created}[/bold]  {version.id}  [yellow]{mark}[/yellow]  "
            f"[dim]{escape(version.path)}[/dim]"
        )
        for line in version.body.rstrip().splitlines():
            out.print(f"   {escape(line)}")


def render_links(brain: Brain, note_id: str, as_json: bool) -> dict[str, Any]:
    """Outgoing and incoming relations; printed unless JSON is wanted (then returned)."""
    links = brain.links(note_id)
    ids = [e.target.split("#", 1)[0] for e in links.outgoing] + [e.source for e in links.incoming]
    rows = brain.caches.catalog.get_many(sorted(set(ids)))
    titles = {oid: row.title for oid, row in rows.items()}
    data = links.to_json(titles)
    if as_json:
        return data
    for e in data["outgoing"]:
        title = titles.get(e["id"].split("#", 1)[0], "(missing)")
        out.print(f"[dim]→ {e['type']}[/dim] {e['id']} {escape(title)}{_weight(e)}")
    for e in data["incoming"]:
        title = titles.get(e["id"], "(missing)")
        out.print(f"[dim]← {e['type']}[/dim] {e['id']} {escape(title)}{_weight(e)}")
    return data


def _weight(edge: dict[str, Any]) -> str:
    return f" [dim](weight {edge['weight']:g})[/dim]" if edge["weight"] is not None else ""
