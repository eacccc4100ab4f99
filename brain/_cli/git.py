"""Commands for the vault under git: git enable/status/commit, log, undo (docs/git.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from brain._cli.app import (
    JsonOpt,
    VaultOpt,
    app,
    command,
    emit_json,
    open_brain,
    out,
    vault_path,
)
from brain._errors import BrainError

if TYPE_CHECKING:
    from brain._git.history import GitStatus

F = TypeVar("F", bound=Callable[..., Any])

git_app = typer.Typer(
    help="The vault under git: history, clean diffs, merges.", no_args_is_help=True
)
app.add_typer(git_app, name="git")


def _git_command(name: str, **kwargs: Any) -> Callable[[F], F]:
    """`brain git NAME`, behind the same error boundary as every other command."""
    return command(name, group=git_app, **kwargs)


@_git_command("enable")
def enable(vault: VaultOpt = None) -> None:
    """Put the vault under git: ignores, merge drivers, autocommit on, a first commit."""
    from brain._git import repo as gitvault

    root, _how = vault_path(vault)
    head = gitvault.enable(root)
    out.print(
        f"The vault at {escape(str(root))} is under git (commit {head[:10]}); "
        "every brain change is now a commit."
    )


@_git_command("status")
def status(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """What brain has not committed yet, what was changed by hand, conflicts."""
    from brain._git import history as githistory
    from brain._settings import load

    root, _how = vault_path(vault)
    report = githistory.status(root, load(root))
    if as_json:
        emit_json(report.to_json())
        return
    if not report.repo:
        out.print("The vault is not under git (`brain git enable` puts it there).")
        return
    auto = "on" if report.autocommit else "off"
    out.print(
        f"On {escape(report.branch or '(no branch)')} at {report.head or '(no commits)'};"
        f" autocommit {auto}."
    )
    if report.busy:
        out.print(
            f"[yellow]git is in the middle of {report.busy}[/yellow]: brain commits after it."
        )
    for path in report.conflicts:
        out.print(f"[red]conflict[/red] {escape(path)}{_why(report, path)}")
    for path in report.in_merge:
        out.print(f"in {report.busy}, staged {escape(path)}")
    for path in report.pending:
        out.print(f"[yellow]brain, not committed yet[/yellow] {escape(path)}")
    if report.pending_error:
        out.print(f"[yellow]last commit failed:[/yellow] {escape(report.pending_error)}")
    for path in report.by_hand:
        out.print(f"changed by hand, left for you {escape(path)}")
    if not (report.conflicts or report.pending or report.by_hand or report.in_merge):
        out.print("[green]Nothing uncommitted.[/green]")


def _why(report: GitStatus, path: str) -> str:
    if path in report.forgotten:
        return (
            ": forgotten on one side (`brain forget`), changed on the other; the next brain "
            "command resolves it the forget's way"
        )
    if path in report.deleted:
        return ": deleted on one side, changed on the other (`git rm` or `git add` it)"
    return ""


@_git_command("commit")
def commit(vault: VaultOpt = None) -> None:
    """Commit brain's pending changes now (an MCP session commits at `close`)."""
    brain = open_brain(vault)
    made = brain.commit()
    from brain._git.autocommit import Pending

    failed = Pending.load(brain.root).error
    if failed:
        raise BrainError(f"could not commit: {failed}")
    out.print(f"Committed {made[:10]}." if made else "Nothing of brain's to commit.")


@_git_command("merge-driver", hidden=True)
def merge_driver(
    kind: Annotated[str, typer.Argument(help="regenerate | dated | note")],
    base: Annotated[Path, typer.Argument(help="%O: the common ancestor's version.")],
    ours: Annotated[Path, typer.Argument(help="%A: our version; the result is written here.")],
    theirs: Annotated[Path, typer.Argument(help="%B: their version.")],
    path: Annotated[str, typer.Argument(help="%P: the file's path in the vault.")],
) -> None:
    """Called by git during a merge (configured by `brain git enable`)."""
    from brain._git.merge import merge_driver as run
    from brain._upkeep.concurrent import merge_note

    if kind == "note":  # corrections on both sides: a merge that needs the notes' rules
        raise typer.Exit(merge_note(base, ours, theirs, path, Path.cwd()))
    raise typer.Exit(run(kind, base, ours, theirs, path, Path.cwd()))


@command("log")
def log(
    note_id: Annotated[
        str | None, typer.Argument(metavar="[ID]", help="One note's history (across renames).")
    ] = None,
    limit: Annotated[int, typer.Option("-n", help="How many changes to show.")] = 20,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recent changes to the vault from git, newest first."""
    brain = open_brain(vault)
    entries = brain.git_log(note_id, limit)
    if as_json:
        emit_json([e.to_json() for e in entries])
        return
    if not entries:
        out.print("No history yet.")
    for entry in entries:
        who = "" if entry.brain else f"  [dim]({escape(entry.author)})[/dim]"
        out.print(f"{entry.commit[:10]}  {entry.date}  {escape(entry.message)}{who}")


@command("undo")
def undo(vault: VaultOpt = None) -> None:
    """Revert brain's last commit (refused when someone committed on top of it)."""
    brain = open_brain(vault)
    reverted, made = brain.git_undo()
    said = brain.git_log(limit=1)[0].message  # brain: undo "<what the undone commit said>"
    what = said.removeprefix('brain: undo "').removesuffix('"')
    out.print(f"Undid {reverted[:10]} ({escape(what)}) with commit {made[:10]}.")
