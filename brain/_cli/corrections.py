"""Commands that change what a memory says: correct, forget; and how history is shown."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from brain._cli.app import JsonOpt, VaultOpt, command, emit_json, open_brain, out, read_text
from brain._cli.daemon import open_backend
from brain._daemon.backend import note_from_json
from brain._errors import InvalidInput
from brain._hitview import shown
from brain._model import Status


@command()
def correct(
    note_id: Annotated[str, typer.Argument(metavar="ID", help="The note to correct.")],
    text: Annotated[str, typer.Argument(help="What is true now, or - to read stdin.")],
    title: Annotated[
        str | None,
        typer.Option(help="A new title (else the note keeps its own, or one made from the text)."),
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
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Also rewrite the vault's git history so no commit holds it (asked at your "
            "terminal; no option skips the question).",
        ),
    ] = False,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Forget a note and its children; on a corrected note, go back to the previous version."""
    if version and history:
        raise InvalidInput("--version and --history exclude each other; choose one")
    mode = "version" if version else "history" if history else "auto"
    if purge:
        # In this process: the question goes to this process's terminal, never a daemon's.
        brain = open_brain(vault)
        plan_json = brain.forget_plan(note_id, mode).to_json()
        gone, purged = brain.forget_purge(note_id, mode)
        brain.close()
        if as_json:
            emit_json({"forgotten": gone, **plan_json, "purge": purged.to_json()})
        else:
            out.print(f"Forgot {len(plan_json['removed'])} note(s).")
            print_purged(purged.to_json(), note_id)
        return
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
    # What forgetting has not done yet, said where it is done (docs/security.md).
    others = [r["id"] for r in plan["removed"] if r["id"] != note_id]
    each = f" (and so for {', '.join(others)})" if others else ""
    out.print(
        "  [dim]Its last bytes leave .brain/ at the next `brain sleep`; "
        f"`brain doctor --forgotten {note_id}` shows any trace left, git history included"
        f"{each}.[/dim]"
    )


def print_purged(purged: dict[str, Any], note_id: str) -> None:
    """What a purge did, and what it could not reach: the remotes, with their command."""
    check = f"then `brain doctor --forgotten {note_id}` looks for any trace left"
    if not purged["purged"]:
        out.print(
            f"The vault is not under git: there is no history to purge. `brain sleep` "
            f"clears the caches; {check}."
        )
        return
    out.print(
        f"Rewrote the history: {purged['rewritten']} commit(s) have new ids, HEAD is "
        f"{purged['head'][:10]}; the old objects are gone from this clone."
    )
    for remote in purged["remotes"]:
        held = {
            True: "still holds the old history",
            None: "may still hold the old history (brain cannot tell what was pushed)",
            False: "did not hold these notes when last fetched",
        }[remote["holds"]]
        out.print(
            f"[yellow]Remote {escape(remote['name'])}[/yellow] ({escape(remote['url'])}) "
            f"{held}. Brain never pushes; this replaces it there:"
        )
        out.print(f"  {escape(remote['command'])}", soft_wrap=True)  # copied whole, never cut
        for branch in remote["unmatched"]:
            out.print(
                f"  its branch {escape(branch)} has no local branch of that name: push one "
                f"onto it, or delete it there (git push {escape(remote['name'])} --delete "
                f"{escape(branch)})"
            )
        out.print("  (fetching from it before that brings the old history back)")
    out.print(f"Run `brain sleep` to clear the caches; {check}.")


def print_traces(report: dict[str, Any], as_json: bool) -> None:
    """Where a forgotten note left a trace, or "no trace"; exit 1 while one is left."""
    if as_json:
        emit_json(report)
    else:
        for trace in report["traces"]:
            found = ", ".join(f"{what} ×{n}" for what, n in trace["found"].items())
            out.print(f"[red]trace[/red] {escape(trace['place'])}: {found}")
        if not report["traces"]:
            out.print(
                f"[green]no trace[/green] of {escape(report['id'])}: {report['files']} "
                f"file(s) and {report['git_objects']} git object(s) read."
            )
    if report["traces"]:
        raise typer.Exit(1)


def print_history(note_id: str, versions: list[dict[str, Any]], as_json: bool) -> None:
    """Every version, oldest first, with its date and status."""
    if as_json:
        emit_json({"id": note_id, "history": versions})
        return
    for n, version in enumerate(note_from_json(v) for v in versions):
        mark = "current" if version.status != Status.SUPERSEDED else "superseded"
        out.print(
            f"[bold]{n + 1}. {version.created}[/bold]  {version.id}  [yellow]{mark}[/yellow]  "
            f"[dim]{escape(version.path)}[/dim]"
        )
        for line in shown(version.body.rstrip()).splitlines():
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
