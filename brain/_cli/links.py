"""Commands over relations: relate, unrelate, graph."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from brain._cli.app import JsonOpt, VaultOpt, command, emit_json, open_brain, out
from brain._daemon.backend import note_to_json

TypeArg = Annotated[
    str,
    typer.Argument(
        metavar="TYPE", help="extends, supports, references, partOf, … (relatesTo last)."
    ),
]


@command()
def relate(
    src: Annotated[str, typer.Argument(metavar="SRC", help="The note the relation starts from.")],
    kind: TypeArg,
    dst: Annotated[str, typer.Argument(metavar="DST", help="The note it points to.")],
    weight: Annotated[
        float | None, typer.Option("--weight", help="How strong, from 0 to 1.")
    ] = None,
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Add a typed relation SRC → DST (stored by id in SRC's front-matter)."""
    note = open_brain(vault).relate(src, kind, dst, weight)
    if as_json:
        emit_json(note_to_json(note))
    else:
        out.print(f"Related {src} —{kind}→ {dst} ({escape(note.path)}).")


@command()
def unrelate(
    src: Annotated[str, typer.Argument(metavar="SRC", help="The note the relation starts from.")],
    kind: TypeArg,
    dst: Annotated[str, typer.Argument(metavar="DST", help="The note it points to.")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Remove a typed relation SRC → DST."""
    note = open_brain(vault).unrelate(src, kind, dst)
    if as_json:
        emit_json(note_to_json(note))
    else:
        out.print(f"Removed {src} —{kind}→ {dst}.")


@command()
def graph(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Write Insights/Graph.md: the relation graph as a Mermaid diagram."""
    note = open_brain(vault).write_graph()
    if as_json:
        emit_json(note_to_json(note))
    else:
        out.print(f"Wrote {escape(note.path)}.")
