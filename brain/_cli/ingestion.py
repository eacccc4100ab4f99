"""Commands that bring text in: connect, connectors, disconnect, sync, watch, ingest, import."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from brain._cli.app import (
    JsonOpt,
    VaultOpt,
    command,
    emit_json,
    err,
    open_brain,
    out,
    read_stdin,
)
from brain._cli.corrections import print_purged
from brain._errors import InvalidInput

if TYPE_CHECKING:
    from brain._sources.conversations import ImportReport
    from brain._sources.documents import SyncReport


@command()
def connect(
    path: Annotated[Path, typer.Argument(help="The folder to read (outside the vault).")],
    name: Annotated[
        str | None, typer.Option(help="The connector's name (default: the folder's name).")
    ] = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Read a folder's documents, after you confirm at your terminal (never without it)."""
    report = open_brain(vault).connect(path, name)
    if as_json:
        emit_json(report.to_json())
    else:
        render_sync(report)


@command("connectors")
def list_connectors(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """List connectors: connected, pending (confirm with `brain connect`) or missing."""
    found = open_brain(vault).connectors()
    if as_json:
        emit_json({"connectors": [s.to_json() for s in found]})
        return
    if not found:
        out.print("No connectors. Add one with `brain connect PATH`.")
        return
    table = Table("name", "state", "documents", "folder", "note", box=None)
    for s in found:
        colour = {"connected": "green", "pending": "yellow"}.get(s.state, "red")
        note = s.reason + (f"; {s.excluded} forgotten file(s) kept out" if s.excluded else "")
        table.add_row(
            escape(s.name),
            f"[{colour}]{s.state}[/{colour}]",
            str(s.documents),
            escape(s.path),
            escape(note),
        )
    out.print(table)


@command()
def disconnect(
    name: Annotated[str, typer.Argument(help="The connector's name (see `brain connectors`).")],
    forget: Annotated[
        bool, typer.Option("--forget", help="Also forget every document it brought in.")
    ] = False,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="With --forget: also rewrite the vault's git history so no commit holds "
            "them (asked at your terminal).",
        ),
    ] = False,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Stop syncing a connector (its documents stay unless --forget)."""
    if purge and not forget:
        raise InvalidInput("--purge goes with --forget: it purges the documents forgotten")
    if purge:
        brain = open_brain(vault)
        removed, purged = brain.disconnect_purge(name)
        brain.close()
        if as_json:
            emit_json({"disconnected": name, "forgotten": removed, "purge": purged.to_json()})
        else:
            out.print(f"Disconnected {escape(name)}; forgot {removed} document(s).")
            print_purged(purged.to_json(), "ID (a document's)")
        return
    removed = open_brain(vault).disconnect(name, forget=forget)
    if as_json:
        emit_json({"disconnected": name, "forgotten": removed})
    else:
        tail = f"; forgot {removed} document(s)" if forget else "; its documents stay"
        out.print(f"Disconnected {escape(name)}{tail}.")


@command()
def sync(
    names: Annotated[
        list[str] | None, typer.Argument(help="Connectors to sync (default: all confirmed).")
    ] = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-read changed files of connected folders; forget documents whose file is gone."""
    reports = open_brain(vault).sync(names or [])
    if as_json:
        emit_json({"connectors": [r.to_json() for r in reports]})
        return
    if not reports:
        out.print("No connectors. Add one with `brain connect PATH`.")
    for report in reports:
        render_sync(report)


@command(own_signals=True)  # Ctrl-C stops it (below); SIGTERM ends it at once
def watch(
    delay: Annotated[float, typer.Option(help="Seconds of quiet before syncing.")] = 0.5,
    vault: VaultOpt = None,
) -> None:
    """Keep connected folders and hand edits to the vault in step, live (Ctrl-C stops)."""
    import threading

    brain = open_brain(vault)
    told: dict[tuple[str, str], str] = {}  # skips already shown, so each is shown once
    watcher = brain.running().watcher(
        delay=delay,
        on_sync=lambda reports: render_syncs(reports, told),
        on_catch_up=lambda found: out.print(
            f"vault: {len(found.changed)} changed, {len(found.removed)} removed, "
            f"{len(found.broken)} broken"
        ),
        on_error=lambda exc: err.print(f"[red]error:[/red] {escape(str(exc))}"),
    )
    stop = threading.Event()
    err.print("Watching; Ctrl-C stops.")
    try:
        watcher.run(stop)
    except KeyboardInterrupt:
        stop.set()


@command()
def ingest(
    file: Annotated[
        Path,
        typer.Argument(
            help="A transcript: seed recall JSON (.json) or a Markdown chat; - reads stdin."
        ),
    ],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store a conversation transcript as a recall note (verbatim, with a summary)."""
    if str(file) == "-":  # piped in: JSON or a chat, told by its first character
        data = read_stdin()  # before the vault opens, as `remember -` reads it
        report = open_brain(vault).ingest(Path("stdin"), data)
    else:
        report = open_brain(vault).ingest(file)
    render_import(report, as_json)


@command("import")
def import_export(
    platform: Annotated[str, typer.Argument(help="Whose export: chatgpt or claude.")],
    export: Annotated[
        Path, typer.Argument(help="The export's .zip, its folder, or its conversations.json.")
    ],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import a ChatGPT or Claude data export as recall notes (a second import adds nothing)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    brain = open_brain(vault)
    columns = (TextColumn("Importing"), BarColumn(), MofNCompleteColumn())
    bar = Progress(*columns, console=err, transient=True)
    task = bar.add_task("import", total=None)
    shown: list[bool] = []

    def step(done: int, total: int) -> None:
        if not err.is_terminal:  # rich's bar, piped, shows nothing but leaves a blank line
            return
        if not shown:  # the export parsed: only now is there something to show
            bar.start()
            shown.append(True)
        bar.update(task, completed=done, total=total)

    try:
        report = brain.import_export(platform, export, progress=step)
    finally:
        if shown:  # a bar never shown leaves nothing, not a blank line before the error
            bar.stop()
    render_import(report, as_json)


def render_syncs(reports: list[SyncReport], told: dict[tuple[str, str], str]) -> None:
    """Syncs while watching: only those that changed something, and each skipped file once
    for the same reason (a folder of photos would otherwise be listed at every edit)."""
    for report in reports:
        changed = report.added or report.updated or report.removed or report.excluded
        if report.state != "connected" or changed:
            render_sync(report, told)


def render_sync(report: SyncReport, told: dict[tuple[str, str], str] | None = None) -> None:
    name = escape(report.connector)
    if report.state != "connected":
        out.print(f"[yellow]{name}: {report.state}[/yellow] ({escape(report.reason)}); not read")
        return
    out.print(
        f"{name}: {len(report.added)} added, {len(report.updated)} updated, "
        f"{len(report.removed)} removed, {report.unchanged} unchanged, "
        f"{len(report.skipped)} skipped"
    )
    for rel in report.excluded:
        out.print(f"  [dim]kept out (you forgot it): {escape(rel)}[/dim]")
    for rel, reason in report.skipped:
        if told is not None and told.get((report.connector, rel)) == reason:
            continue
        if told is not None:
            told[report.connector, rel] = reason
        out.print(f"  [dim]skipped {escape(rel)}: {escape(reason)}[/dim]")


def render_import(report: ImportReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_json())
        return
    grown = f"{len(report.grown)} grown, " if report.grown else ""  # chat files only
    out.print(
        f"{len(report.added)} recall note(s) added, {len(report.updated)} updated, {grown}"
        f"{len(report.unchanged)} already there"
        + (f", {report.forgotten} you forgot (left out)." if report.forgotten else ".")
    )
