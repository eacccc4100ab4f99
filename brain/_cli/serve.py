"""Commands for hosts and for the person: `serve` (MCP over stdio or HTTP), `set`, `partition …`."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from brain._cli.app import (
    JsonOpt,
    VaultOpt,
    app,
    command,
    emit_json,
    err,
    open_brain,
    out,
)
from brain._daemon.backend import note_to_json

F = TypeVar("F", bound=Callable[..., Any])

partition_app = typer.Typer(
    help="Partitions: separate memory trees in one vault.", no_args_is_help=True
)
app.add_typer(partition_app, name="partition")

PartitionOpt = Annotated[
    str | None,
    typer.Option("--partition", help="The partition to work in (default: brain.yaml's)."),
]
NameArg = Annotated[str, typer.Argument(help="The partition's name.")]


@command(own_signals=True)  # hosts end it by closing stdin or SIGTERM; Ctrl-C: below
def serve(
    vault: VaultOpt = None,
    partition: PartitionOpt = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            metavar="HOST:PORT",
            help="Serve MCP's streamable HTTP transport here instead of stdio, one brain per "
            "user, each request with `Authorization: Bearer <token>` (see `brain hosted user`).",
        ),
    ] = None,
    public: Annotated[
        bool, typer.Option("--public", help="With --http: allow a host other than loopback.")
    ] = False,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            envvar="BRAIN_DB",
            help="With --http: the database of users and tokens (postgresql://…); without "
            "--vaults, the users' brains too (`brain hosted init`).",
        ),
    ] = None,
    vaults: Annotated[
        Path | None,
        typer.Option("--vaults", help="With --http: keep one vault per user in this folder."),
    ] = None,
    embedder: Annotated[
        str | None,
        typer.Option(
            "--embedder",
            help="With --http: the embedder of users' new brains, one model shared by all.",
        ),
    ] = None,
    rate: Annotated[
        float, typer.Option("--rate", help="With --http: requests a second per user, on average.")
    ] = 20.0,
    burst: Annotated[
        int, typer.Option("--burst", help="With --http: requests a user may send at once.")
    ] = 100,
    max_open: Annotated[
        int, typer.Option("--max-open", help="With --http: users' brains kept open at once.")
    ] = 64,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="With --http: threads running tool calls at once (a "
            "process uses one core: run one server per core).",
        ),
    ] = 4,
    grace: Annotated[
        int,
        typer.Option(
            "--grace",
            help="With --http: seconds the calls in flight at SIGTERM may "
            "take to finish before the server stops.",
        ),
    ] = 30,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            help="With --http: a Host header to accept beside "
            "loopback's, e.g. the public name a reverse proxy forwards (repeatable).",
        ),
    ] = None,
    header_timeout: Annotated[
        float,
        typer.Option("--header-timeout", help="With --http: seconds for a request's headers."),
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option("--body-timeout", help="With --http: seconds for a request's body.")
    ] = 30.0,
    per_user: Annotated[
        int,
        typer.Option(
            "--max-requests-per-user",
            help="With --http: one user's requests in flight at once at this server.",
        ),
    ] = 32,
    statement_timeout: Annotated[
        float,
        typer.Option(
            "--statement-timeout",
            help="With --http and brains in the database: seconds a PostgreSQL statement may run.",
        ),
    ] = 30.0,
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            help="With --http: connections this server holds to PostgreSQL, shared by all "
            "users (servers x this must fit the pooler's pool or max_connections).",
        ),
    ] = 10,
    prepared_statements: Annotated[
        bool,
        typer.Option(
            "--prepared-statements",
            help="With --http: let PostgreSQL keep the plans of repeated statements (about "
            "half a recall's database CPU). Not behind pgbouncer before 1.21 in transaction mode.",
        ),
    ] = False,
    allowed_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-origin",
            help="With --http: an Origin header to accept, e.g. "
            "https://app.example.com (repeatable).",
        ),
    ] = None,
    db_read: Annotated[
        str | None,
        typer.Option(
            "--db-read",
            envvar="BRAIN_DB_READ",
            help="With --http and brains in the database: a streaming replica of --db "
            "(postgresql://…) where read-only calls read; a user's reads still see their "
            "own writes (docs/hosted.md, Read replicas).",
        ),
    ] = None,
    tenant_key: Annotated[
        Path | None,
        typer.Option(
            "--tenant-key",
            envvar="BRAIN_TENANT_KEY_FILE",
            show_envvar=True,
            help="With --http and brains in the database: the tenants' key file "
            "(`brain hosted init --key-file`), for a server logged in as brain_server.",
        ),
    ] = None,
) -> None:
    """Run the MCP server over stdio, for Claude Desktop, Claude Code, Cursor and other hosts
    (with --http: over HTTP, for many users, each with a token and a brain of their own)."""
    if http is not None:
        from brain._cli.hosted_users import serve_http

        serve_http(
            http,
            public=public,
            db=db,
            db_read=db_read,
            vaults=vaults,
            embedder=embedder,
            rate=rate,
            burst=burst,
            max_open=max_open,
            workers=workers,
            grace=grace,
            hosts=allowed_host or [],
            origins=allowed_origin or [],
            limits=(header_timeout, body_timeout, per_user),
            statement_timeout=statement_timeout,
            tenant_key=tenant_key,
            max_connections=max_connections,
            prepared=prepared_statements,
        )
        return
    from brain import _settings as settings_mod
    from brain._brain import open_vault
    from brain._cli.app import prepare_models, vault_path
    from brain._daemon.client import McpForwarder
    from brain._errors import NotFound
    from brain._mcp_server import TOOLS
    from brain._mcp_server import serve as run
    from brain._model import new_id
    from brain._vault.archive import check_recallable
    from brain._vault.paths import check_segment
    from brain._vault.store import NoteStore

    root, _how = vault_path(vault)
    settings = settings_mod.load(root)
    prepare_models(root)  # an own model's one-time export, on stderr, before the host waits
    chosen = partition or settings.default_partition
    known = NoteStore(root).partitions()
    if chosen not in known:  # said as open_vault says it, before the host is told we run
        check_segment(chosen, "partition")
        raise NotFound(
            f"no partition {chosen!r} in {root}", f"partitions: {', '.join(known) or 'none'}"
        )
    check_recallable(NoteStore(root), chosen)

    # The handshake and tools/list need only the settings: the vault opens (caches, catch-up)
    # on the first call that runs here, and the daemon is reached on the first call it serves.
    brain = open_vault(root, partition=chosen, lazily=True)
    session = new_id(brain.clock.now())
    # The daemon does the work when it runs (or starts); this process checks each call against
    # the tools' schemas and forwards only the allowlisted names.
    forward = McpForwarder(root, os.environ, session, chosen, TOOLS)
    if sys.stdin.isatty():  # a person, not a host: say what this is (stdout is MCP's alone)
        err.print(
            f"brain serve speaks MCP on stdio for {escape(str(root))}; an assistant starts it "
            "itself: connect one with `brain mcp-config HOST` "
            "(claude-desktop, claude-code, cursor). Ctrl-C stops."
        )
        _stop_on_ctrl_c()
    try:
        run(brain, session_id=session, forward=forward)
    finally:
        forward.close()
        brain.close()


def _stop_on_ctrl_c() -> None:
    """At a terminal, Ctrl-C ends `brain serve` at once, with exit code 0 and no traceback.

    The MCP SDK reads stdin on a worker thread that cancellation cannot stop, so the usual
    KeyboardInterrupt leaves the process waiting for a line that never comes. Ending here
    loses nothing: every write is atomic and durable when made, and a git commit still
    pending is made by the vault's next brain operation (git/autocommit.py).
    """

    def stop(_signum: int, _frame: object) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()
        os._exit(0)

    signal.signal(signal.SIGINT, stop)


@command("set")
def set_field(
    note_id: Annotated[str, typer.Argument(metavar="ID", help="The note's id.")],
    field: Annotated[str, typer.Argument(help="visibility | defining | eternal | status.")],
    value: Annotated[
        str,
        typer.Argument(
            help="visibility: normal|private|local-only; defining: decision|milestone|event|none;"
            " eternal: true|false (threads); status: active|dormant|archived|resolved."
        ),
    ],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Set a field only the person may set (never reachable from a model)."""
    note = open_brain(vault).set_field(note_id, field, value)
    if as_json:
        emit_json(note_to_json(note))
    else:
        out.print(
            f"Set {field} of [bold]{escape(note.title)}[/bold] to {escape(value)}"
            f" ({escape(note.path)})"
        )  # one message, broken where it reads


def _partition_command(name: str) -> Callable[[F], F]:
    """`brain partition NAME`, behind the same error boundary as every other command."""
    return command(name, group=partition_app)


def _say(verb: str, partition: Any, as_json: bool) -> None:
    if as_json:
        emit_json(partition.to_json())
    else:
        out.print(f"{verb} partition [bold]{escape(partition.name)}[/bold]")


@_partition_command("list")
def partition_list(vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """List the partitions; * marks the default one."""
    found = open_brain(vault).partitions()
    if as_json:
        emit_json({"partitions": [p.to_json() for p in found]})
        return
    table = Table("", "partition", "state", box=None)
    for p in found:
        table.add_row("*" if p.current else "", escape(p.name), "archived" if p.archived else "")
    out.print(table)


@_partition_command("create")
def partition_create(name: NameArg, vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Create a partition from the template."""
    _say("Created", open_brain(vault).partition_create(name), as_json)


@_partition_command("use")
def partition_use(name: NameArg, vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Make a partition the default for commands (default_partition in brain.yaml)."""
    _say("Now using", open_brain(vault).partition_use(name, default=True), as_json)


@_partition_command("rename")
def partition_rename(
    name: NameArg,
    new_name: Annotated[str, typer.Argument(help="The new name.")],
    vault: VaultOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rename a partition (note ids do not change)."""
    _say("Renamed to", open_brain(vault).partition_rename(name, new_name), as_json)


@_partition_command("archive")
def partition_archive(name: NameArg, vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Archive a partition: read-only and out of recall (nothing is deleted)."""
    archived = open_brain(vault).partition_archive(name)
    _say("Archived", archived, as_json)
    if archived.current:  # the default one: say so now, not at the next command's refusal
        err.print(
            f"[yellow]{escape(name)} is the default partition:[/yellow] commands without "
            "--partition refuse until `brain partition use OTHER` (or `brain partition "
            f"restore {escape(name)}`)"
        )


@_partition_command("restore")
def partition_restore(name: NameArg, vault: VaultOpt = None, as_json: JsonOpt = False) -> None:
    """Bring an archived partition back."""
    _say("Restored", open_brain(vault).partition_restore(name), as_json)
