"""Upkeep commands: sleep (the cron pass), split (crowded nodes), tier (the cold tier)."""

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
    out,
    prepare_models,
    vault_path,
)
from brain._errors import InvalidInput

if TYPE_CHECKING:
    from brain._brain import Brain
    from brain._upkeep.sleep import SleepReport

NowOpt = Annotated[
    str | None,
    typer.Option(
        "--now",
        help="Act as if it were this moment (ISO 8601, e.g. 2026-12-02T10:31Z).",
        show_default=False,
    ),
]


def _open(vault: Path | None, now: str | None) -> Brain:
    from brain._brain import open_vault
    from brain._clock import SystemClock, fixed_at

    clock = fixed_at(now) if now is not None else SystemClock()
    root = vault_path(vault)[0]
    prepare_models(root)
    return open_vault(root, clock=clock)


@command()
def sleep(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what the pass would do; change nothing.")
    ] = False,
    now: NowOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run one upkeep pass: aging, cold tier, split suggestions, daily log, cache compaction.

    Idempotent and safe beside `brain serve` or `brain watch`; meant for cron, e.g.
    `0 */2 * * * brain sleep --quiet`. Exit 0 when the pass ran, 2 on bad input or failure.
    """
    brain = _open(vault, now)

    def waiting() -> None:
        if not quiet:
            err.print("Another `brain sleep` is running on this vault; waiting for it to finish…")

    report = brain.sleep(dry_run=dry_run, waiting=waiting)
    if quiet:
        return
    if as_json:
        emit_json(report.to_json())
        return
    render_report(report)


def render_report(report: SleepReport) -> None:
    title = f"brain sleep at {report.now}"
    if report.dry_run:
        title += " (dry run: nothing changed)"
    table = Table("step", "result", title=title, title_justify="left")
    for name, result in report.steps:
        table.add_row(name, escape(result))
    out.print(table)
    for aging in report.aged:
        out.print(
            f"  aged   {escape(aging.title)} ({aging.id}): {aging.before} → {aging.after}, "
            f"untouched {aging.untouched_days} days"
        )
    for move in report.moved:
        out.print(f"  cold   {escape(move.title)} ({move.id}) → {escape(move.target)}")
    for suggestion in report.splits:
        out.print(
            f"  split  {escape(suggestion.line())}  "
            f"[dim](brain split {escape(suggestion.node)} --apply)[/dim]"
        )
    for path in report.logs:
        out.print(f"  log    {escape(path)}")


@command()
def split(
    node: Annotated[str, typer.Argument(help="The crowded node, e.g. Knowledge/Inbox.")],
    apply: Annotated[
        bool, typer.Option("--apply", help="Move the notes into the suggested sub-nodes.")
    ] = False,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show (or with --apply, carry out) the suggested split of a node with 50+ memories.

    Applying moves files only: ids and every byte of every note stay the same.
    """
    brain = _open(vault, None)
    suggestion, moves = brain.split(node, apply=apply)
    if as_json:
        emit_json(
            {
                "suggestion": suggestion.to_json(),
                "applied": apply,
                "moved": [m.to_json() for m in moves],
            }
        )
        return
    out.print(escape(suggestion.line()))
    for cluster in suggestion.clusters:
        out.print(
            f"  {escape(cluster.name)}/  {len(cluster.ids)} notes sharing "
            f"'{escape(cluster.keyword)}'"
        )
    if apply:
        out.print(f"Moved {len(moves)} notes.")
    else:
        out.print(f"[dim]brain split {escape(node)} --apply carries it out.[/dim]")


@command()
def tier(
    action: Annotated[str, typer.Argument(help="status | move | retrain")],
    note_id: Annotated[str | None, typer.Argument(metavar="[ID]", help="move: the note.")] = None,
    target: Annotated[str | None, typer.Argument(metavar="[hot|cold]", help="move: where.")] = None,
    now: NowOpt = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The cold tier (experimental; `tiers: {cold: true}` in brain.yaml).

    `tier status` counts notes and bytes in each tier; `tier move ID hot|cold` moves one note,
    byte for byte; `tier retrain` trains a new dictionary on this vault's notes (old ones are
    kept, so every cold note stays readable).
    """
    if action not in ("status", "move", "retrain"):
        raise InvalidInput(f"tier action must be status, move or retrain, not {action!r}")
    if action == "move" and (note_id is None or target is None):
        raise InvalidInput("tier move needs ID and hot|cold, e.g. `brain tier move 01JE… cold`")
    if action != "move" and (note_id is not None or target is not None):
        raise InvalidInput(f"tier {action} takes no ID or tier")
    brain = _open(vault, now)
    if action == "status":
        status = brain.tier_status()
        if as_json:
            emit_json(status.to_json())
            return
        table = Table("tier", "notes", "bytes", box=None)
        table.add_row("hot", str(status.hot_notes), str(status.hot_bytes))
        table.add_row("cold", str(status.cold_notes), str(status.cold_bytes))
        out.print(table)
        out.print(
            f"cold tier {'on' if status.enabled else 'off'} · ratio {status.ratio:.2f}× "
            f"({status.cold_plain_bytes} bytes uncompressed) · "
            f"{len(status.dictionaries)} dictionary(ies)"
        )
        for rel in status.unreadable:
            out.print(f"[red]unreadable[/red] {escape(rel)} (see `brain doctor`)")
        return
    if action == "retrain":
        dict_id = brain.tier_retrain()
        if as_json:
            emit_json({"dictionary": dict_id})
        else:
            out.print(f"Trained dictionary {dict_id}; new cold notes use it, old ones keep theirs.")
        return
    assert note_id is not None and target is not None
    move = brain.tier_move(note_id, target)
    if as_json:
        emit_json({"moved": move.to_json() if move else None})
    elif move is None:
        out.print(f"{note_id} is already {target}.")
    else:
        out.print(f"Moved {escape(move.title)} ({move.id}) to {move.tier}: {escape(move.target)}")
