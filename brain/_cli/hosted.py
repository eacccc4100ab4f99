"""`brain hosted`: a PostgreSQL database of many users' brains (init, push, pull, sleep, status)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from brain._cli.app import JsonOpt, app, command, emit_json, out

hosted_app = typer.Typer(
    help="A hosted brain: many users' vaults in one PostgreSQL with pgvector.",
    no_args_is_help=True,
)
app.add_typer(hosted_app, name="hosted")

DbOpt = Annotated[
    str,
    typer.Option(
        "--db",
        envvar="BRAIN_DB",
        show_default=False,
        show_envvar=True,
        help="The database: postgresql://user@host:port/name.",
    ),
]
UserOpt = Annotated[str, typer.Option("--user", help="Whose brain (a name, as in `push`).")]


@command("init", group=hosted_app)
def init(
    dsn: Annotated[
        str,
        typer.Argument(
            envvar="BRAIN_DB",
            show_default=False,
            help="postgresql://… to set up, as its owner (a role that may create roles).",
        ),
    ],
    key_file: Annotated[
        Path | None,
        typer.Option(
            "--key-file",
            help="Write the tenants' key here (mode 600) for the servers' --tenant-key; "
            "an existing file must hold the database's key.",
        ),
    ] = None,
    server_password: Annotated[
        str | None,
        typer.Option(
            "--server-password",
            envvar="BRAIN_SERVER_PASSWORD",
            show_default=False,
            help="Give the servers' login (brain_server) this password; better from "
            "$BRAIN_SERVER_PASSWORD than on the command line.",
        ),
    ] = None,
) -> None:
    """Create or update the roles (brain_tenant, and brain_server for the servers' login),
    the schema, row-level security and the tenants' key; idempotent."""
    from brain._hosted.roles import SERVER_ROLE
    from brain._hosted.schema import database_errors, export_key, set_server_password
    from brain._hosted.schema import init as run

    with database_errors():
        version = run(dsn)
        if key_file is not None:
            export_key(dsn, key_file.expanduser())
        if server_password:
            set_server_password(dsn, server_password)
    out.print(f"Database ready (schema version {version}).")
    if key_file is not None and not server_password:
        out.print(
            f"Servers log in as {SERVER_ROLE} with --tenant-key {escape(str(key_file))}; "
            f"give the role a password first (ALTER ROLE {SERVER_ROLE} PASSWORD '…')."
        )


@command("push", group=hosted_app)
def push(
    vault: Annotated[Path, typer.Argument(help="The files vault to load, e.g. ~/brain.")],
    user: UserOpt,
    db: DbOpt,
    as_json: JsonOpt = False,
) -> None:
    """Load a files vault for a user, byte for byte, replacing what the user had.

    Notes with their history, documents and their chunks, index.json files and brain.yaml
    go; local-only notes, `.brain/` and `.git/` stay on this machine.
    """
    from brain._clock import SystemClock
    from brain._hosted.schema import database_errors
    from brain._hosted.transfer import push as run

    with database_errors():
        done = run(db, vault.expanduser(), user, SystemClock())
    if as_json:
        emit_json(done.__dict__)
        return
    out.print(
        f"Pushed {done.files} files ({done.notes} notes, {done.bytes} bytes) for {escape(user)}."
    )


@command("pull", group=hosted_app)
def pull(
    dest: Annotated[Path, typer.Argument(help="A new or empty folder to write the vault into.")],
    user: UserOpt,
    db: DbOpt,
    as_json: JsonOpt = False,
) -> None:
    """Write a user's vault out of the database, byte for byte."""
    from brain._hosted.schema import database_errors
    from brain._hosted.transfer import pull as run

    with database_errors():
        done = run(db, dest.expanduser(), user)
    if as_json:
        emit_json(done.__dict__)
        return
    out.print(f"Pulled {done.files} files ({done.bytes} bytes) of {escape(user)} into {dest}.")


@command("sleep", group=hosted_app)
def sleep(
    db: DbOpt,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what it would do.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """One sleep pass for every user; idempotent and safe beside running servers (cron)."""
    from brain._clock import SystemClock
    from brain._hosted.schema import database_errors
    from brain._hosted.upkeep import TenantSleep, sleep_all

    def said(one: TenantSleep) -> None:
        if not quiet and not as_json:
            out.print(f"{escape(one.user)}: {escape(one.summary)}")

    with database_errors():
        passes = sleep_all(db, SystemClock(), dry_run=dry_run, done=said)
    if as_json and not quiet:
        emit_json([p.__dict__ for p in passes])


@command("status", group=hosted_app)
def status(db: DbOpt, as_json: JsonOpt = False) -> None:
    """The database at a glance: schema version, users, tenants, rows by table, size."""
    from brain._hosted.admin import status as run
    from brain._hosted.schema import database_errors

    with database_errors():
        found = run(db)
    if as_json:
        emit_json(found.to_json())
        return
    schema = "none (run init)"
    if found.schema is not None:
        schema = f"{found.schema} (servers of schema version {found.serves_from} or later)"
    out.print(
        f"schema version {schema}, {found.tenants} brains, "
        f"{found.users_with_tokens} users with a live token, "
        f"{found.database_bytes / 1e6:.1f} MB"
    )
    for table, count in found.rows.items():
        out.print(f"  {table}: {count} rows")
