"""Commands over notes: init, remember, recall, expand, list, reindex, doctor."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from brain._cli.app import (
    JsonOpt,
    PartitionOpt,
    VaultOpt,
    command,
    emit_json,
    err,
    open_brain,
    out,
    read_text,
    vault_path,
)
from brain._cli.corrections import print_traces
from brain._cli.daemon import open_backend
from brain._clock import day_shown, local_zone
from brain._daemon.backend import note_from_json
from brain._errors import BrainError
from brain._hitview import shown
from brain._model import ListOptions


@command()
def init(
    path: Annotated[Path | None, typer.Argument(help="Where to create the vault.")] = None,
    vault: VaultOpt = None,
    git: Annotated[
        bool, typer.Option("--git", help="Also put the vault under git (see `brain git`).")
    ] = False,
) -> None:
    """Create a vault from the template (does nothing if one is already there)."""
    from brain._clock import SystemClock
    from brain._vault.template import init_vault

    root = path.expanduser().absolute() if path else vault_path(vault)[0]
    if git:
        from brain._git.repo import git_binary

        git_binary()  # no git: say so before anything is created
    if init_vault(root, SystemClock().now()):
        out.print(f"Created a vault at [bold]{escape(str(root))}[/bold]")
    else:
        out.print(f"A vault is already at {escape(str(root))}; nothing changed.")
    if git:
        from brain._git.repo import enable

        enable(root)
        out.print("It is under git: every brain change is a commit (docs/git.md).")
    _next_steps(root)


def _next_steps(root: Path) -> None:
    """The two things to do next, with --vault when the vault is not the one found anyway."""
    try:
        found = vault_path(None)[0].absolute() == root
    except BrainError:
        found = False
    where = "" if found else f" --vault {shlex.quote(str(root))}"
    out.print("Next:")
    out.print(f'  brain remember "Something worth keeping"{escape(where)}   [dim]# remember[/dim]')
    out.print(
        f"  brain mcp-config claude-desktop{escape(where)}   [dim]# connect an assistant "
        "(or claude-code, cursor, generic)[/dim]"
    )


@command()
def remember(
    text: Annotated[str, typer.Argument(help="What to remember, or - to read stdin.")],
    title: Annotated[
        str | None, typer.Option(help="Title (same title in a folder = same note).")
    ] = None,
    node: Annotated[
        str | None,
        typer.Option(help="Folder inside the partition, e.g. Knowledge/Domains/Cooking."),
    ] = None,
    tags: Annotated[
        str | None, typer.Option(help="Comma-separated tags (no spaces, not only digits).")
    ] = None,
    kind: Annotated[str | None, typer.Option(help="titled | singleton | dated | thread.")] = None,
    visibility: Annotated[
        str | None,
        typer.Option(
            help="A new note hidden from its first write: private (never shown to a model) or "
            "local-only (nor ever in git)."
        ),
    ] = None,
    partition: PartitionOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a memory in the vault."""
    body = read_text(text)
    backend = open_backend(vault)
    tag_list = [t for t in (tags or "").split(",") if t.strip()]
    hidden = {"visibility": visibility} if visibility is not None else {}
    data = backend.remember(
        body, partition, title=title, node=node, tags=tag_list, kind=kind, **hidden
    )
    backend.close()
    if as_json:
        emit_json(data)
        return
    note = note_from_json(data)
    said = f"[bold]{escape(note.title)}[/bold] ({note.id}) in {escape(note.path)}"
    out.print(_OUTCOMES[data["outcome"]].format(said))


# What a remember did, as the person reads it (`outcome` in --json).
UNREAD = (
    " (outside every partition: brain never reads it; move it into one, e.g. main/Knowledge/Inbox)"
)
_OUTCOMES = {
    "created": "Remembered {} (a new note)",
    "appended": "Added to {}",
    "replaced": "Replaced the text of {}",
    "unchanged": "Already remembered: {} holds this text (nothing added; updated: said again now)",
}


@command()
def recall(
    query: Annotated[str, typer.Argument(help="What to look for, in plain words.")],
    k: Annotated[int | None, typer.Option("-k", help="How many results (default 5).")] = None,
    node: Annotated[str | None, typer.Option(help="Search only this node and below.")] = None,
    superseded: Annotated[
        bool, typer.Option("--superseded", help="Include superseded versions.")
    ] = False,
    mode: Annotated[
        str,
        typer.Option(
            help="hybrid (full text + vectors + SPLADE terms, fused) | text | vector | sparse."
        ),
    ] = "hybrid",
    defining: Annotated[
        bool, typer.Option("--defining", help="Defining memories (decisions, milestones…) first.")
    ] = False,
    scope: Annotated[
        str | None,
        typer.Option(
            help="auto (the nodes whose index.json match the query), all, or a node to search."
        ),
    ] = None,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Say why each hit came back: ranks, scores, context."),
    ] = False,
    partition: PartitionOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find the memories that best answer a query, or say that none is about it.

    "Nothing relevant" when no memory holds enough of the query (docs/cli.md)."""
    root, _how = vault_path(vault)
    backend = open_backend(root)
    found = backend.recall(
        query,
        partition,
        k=k,
        node=node,
        include_superseded=superseded,
        mode=mode,
        defining_first=defining,
        scope=scope,
        explain=explain,
    )
    backend.close()
    if as_json:
        emit_json({"query": query, "hits": found, "nothing_relevant": not found})
        return
    render_hits(found, root)


def render_hits(hits: list[dict[str, Any]], root: Path) -> None:
    """Recall's text output (the fast path prints the same lines, brain/_hitview.py)."""
    from brain._hitview import hit_lines

    for line in hit_lines(hits, str(root), local_zone()):
        out.print("".join(f"[{s}]{escape(t)}[/{s}]" if s else escape(t) for t, s in line))


@command()
def expand(
    note_id: Annotated[str, typer.Argument(metavar="ID", help="The note's id.")],
    history: Annotated[
        bool, typer.Option("--history", help="Every version of the note, oldest first.")
    ] = False,
    partition: PartitionOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a whole note and its relations (reading it for use keeps it active)."""
    from brain._cli.corrections import print_history, print_links

    backend = open_backend(vault)
    if history:
        versions = backend.history(note_id)
        backend.close()
        print_history(note_id, versions, as_json)
        return
    data = backend.expand(note_id, partition)
    links = backend.links(data["id"])
    backend.close()
    # An id a merge of two machines' notes did not keep: the note that took it in, said so.
    merged = {"merged_from": note_id} if note_id.split("#", 1)[0] != data["id"] else {}
    if as_json:
        emit_json({**data, **merged, "relations": links})
        return
    if merged:
        said = f"{note_id} was merged into {data['id']} (made on two machines)"
        out.print(f"[dim]{escape(said)}[/dim]")
    note = note_from_json(data)
    title, path = escape(shown(note.title)), escape(shown(note.path))
    out.print(f"[bold]{title}[/bold]  [dim]{note.id} · {path}[/dim]")
    out.print(
        f"[dim]{note.kind} · {note.status} · created {note.created} · updated {note.updated} · "
        f"touched {note.touched}[/dim]"
    )
    out.print(escape(shown(note.body.rstrip())))  # a note's escape codes are not played
    print_links(links)


@command("list")
def list_notes(
    node: Annotated[str | None, typer.Option(help="Only this node and below.")] = None,
    status: Annotated[
        str | None, typer.Option(help="active | dormant | archived | resolved | superseded.")
    ] = None,
    kind: Annotated[str | None, typer.Option(help="Only notes of this kind.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.", min=1)] = 50,
    defining: Annotated[
        bool,
        typer.Option("--defining", help="Only defining memories (decision, milestone, event)."),
    ] = False,
    partition: PartitionOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List notes, newest first: id, date, kind, status and title, the path below."""
    backend = open_backend(vault)
    options: ListOptions = {
        "node": node,
        "status": status,
        "kind": kind,
        "limit": limit,
        "defining_only": defining,
    }
    rows = backend.list_notes(partition, **options)
    # Counted only when the limit was reached: otherwise the rows are all there is.
    total = backend.count_notes(partition, **options) if len(rows) == limit else len(rows)
    backend.close()
    if as_json:
        emit_json({"notes": rows, "total": total, "limit": limit})
        return
    # Two plain lines a note, never a table: a table fits the terminal's width by cutting
    # ids and paths, and piped output has no width to fit. The date is the person's day where
    # they are (`created` in --json stays the stored UTC time).
    zone = local_zone()
    for r in rows:
        out.print(
            f"{r['id']}  {day_shown(r['created'], zone)}  {r['kind']} · {r['status']}  "
            f"[bold]{escape(shown(r['title']))}[/bold]"
        )
        out.print(f"    [dim]{escape(shown(r['path']))}[/dim]")
    out.file.flush()  # the rows first, then the footer, where both streams meet
    if total > len(rows):
        err.print(f"[dim]showing {len(rows)} of {total}; `--limit {total}` for all[/dim]")
    elif not rows and node:
        # Listing a filter may find nothing, but a node named wrong should not look like one.
        what = "a node is a folder of the partition, such as Knowledge/Inbox, not its path"
        err.print(f"[dim]no notes under node {escape(repr(node))} ({what})[/dim]")
    elif not rows:
        err.print("[dim]no notes[/dim]")


@command()
def reindex(vault: VaultOpt = None) -> None:
    """Rebuild every cache under .brain/ from the files."""
    brain = open_brain(vault)  # its steps show the walk's and the embedding's progress
    count = brain.reindex(show_steps=True)
    out.print(f"Reindexed {count} notes.")


@command()
def doctor(
    forgotten: Annotated[
        str | None,
        typer.Option(
            "--forgotten",
            metavar="ID",
            help="Instead: look for any trace of a note forgotten here, in every file of the "
            "vault, .brain/, the cold tier and .git (exit 1 if one is left).",
        ),
    ] = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the vault: broken notes, files the caches don't know, stale caches (exit 1 if any)."""
    if forgotten is not None:
        print_traces(open_brain(vault).forgotten_check(forgotten).to_json(), as_json)
        return
    report = open_brain(vault).doctor()
    if as_json:
        emit_json(report.to_json())
    else:
        findings = [
            ("[red]broken[/red] ", [reason for _path, reason in report.broken], ""),
            ("[yellow]unknown[/yellow]", report.unknown, " (not in the caches yet)"),
            ("[yellow]changed[/yellow]", report.changed, " (edited since the caches saw it)"),
            ("[yellow]missing[/yellow]", report.missing, " (cached but gone from disk)"),
            ("[yellow]stale[/yellow]  ", report.stale, ""),
            ("[red]cycle[/red]  ", report.cycles, ""),
            ("[yellow]dangling[/yellow]", report.dangling, ""),
            ("[red]conflict[/red]", report.conflicts, " (git conflict markers: resolve them)"),
            ("[yellow]link[/yellow]    ", report.links, ""),
            ("[yellow]copy[/yellow]    ", report.copies, ""),
            ("copied  ", report.renewed, ""),
            ("[yellow]leftover[/yellow]", report.leftovers, " (a killed write's; `brain sleep`)"),
            ("unread  ", report.unread, UNREAD),
            ("[yellow]field[/yellow]   ", report.fields, ""),
            ("[red]not file[/red]", report.not_files, ""),
            ("[yellow]cold[/yellow]    ", report.cold_text, ""),
            ("[red]conflict[/red]", report.unmerged, ""),
            ("[yellow]synced[/yellow]  ", report.synced, ""),
            ("[red]conflict[/red]", report.sync_copies, ""),
            ("[yellow]name[/yellow]    ", report.unportable, ""),
            ("[red]vault[/red]   ", report.nested, ""),
            ("daily   ", report.daily, ""),
        ]
        for label, items, why in findings:
            for item in items:
                out.print(f"{label} {escape(item)}{why}")
        if report.rebuilt:
            out.print(f"[dim]caches rebuilt by themselves at {escape(report.rebuilt)}[/dim]")
        if report.ok:
            out.print("[green]All well.[/green]")
    if not report.ok:
        raise typer.Exit(1)
