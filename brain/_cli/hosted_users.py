"""`brain hosted user add|revoke|delete|list`: the people a hosted brain serves, and their
tokens."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from brain._cli.app import JsonOpt, command, emit_json, err, out
from brain._cli.hosted import hosted_app

user_app = typer.Typer(
    help="Users of a hosted brain and their bearer tokens.", no_args_is_help=True
)
hosted_app.add_typer(user_app, name="user")  # `brain hosted user …`, beside init, push, pull

DbOpt = Annotated[
    str,
    typer.Option(
        "--db",
        envvar="BRAIN_DB",
        help="The users database: a postgresql:// URI (else $BRAIN_DB).",
        show_default=False,
    ),
]
NameArg = Annotated[str, typer.Argument(help="The user's name (also the tenant's name).")]


@command("add", group=user_app)
def user_add(name: NameArg, db: DbOpt, as_json: JsonOpt = False) -> None:
    """Add a user and print its bearer token, once: only a hash of it is kept."""
    from brain._hosted import tokens
    from brain._hosted.schema import database_errors

    with database_errors(), tokens.connect(db) as conn:
        tokens.ensure_schema(conn)
        token = tokens.add_user(conn, name)
    if as_json:
        emit_json({"user": name, "token": token})
        return
    out.print(token)
    err.print(
        f"Added user [bold]{escape(name)}[/bold]. The token above is shown only now: "
        "give it to the MCP host as `Authorization: Bearer <token>`."
    )


@command("revoke", group=user_app)
def user_revoke(name: NameArg, db: DbOpt, as_json: JsonOpt = False) -> None:
    """Revoke a user's tokens: their next request gets 401. Their notes stay."""
    from brain._hosted import tokens
    from brain._hosted.schema import database_errors

    with database_errors(), tokens.connect(db) as conn:
        tokens.ensure_schema(conn)
        count = tokens.revoke_user(conn, name)
    if as_json:
        emit_json({"user": name, "revoked": count})
    else:
        out.print(f"Revoked {count} token(s) of [bold]{escape(name)}[/bold]")


@command("delete", group=user_app)
def user_delete(
    name: NameArg,
    db: DbOpt,
    yes: Annotated[
        bool, typer.Option("--yes", help="Mean it: every note of the user goes, for good.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Erase a user's brain: every row of theirs in the database, and their tokens."""
    from brain._errors import NotConfirmed
    from brain._hosted.admin import delete_user
    from brain._hosted.schema import database_errors

    if not yes:
        raise NotConfirmed(
            f"deleting {name!r} erases every note of theirs for good; nothing was deleted",
            f"`brain hosted pull` first to keep a copy, then `brain hosted user delete {name} "
            "--yes`",
        )
    with database_errors():
        done = delete_user(db, name)
    if as_json:
        emit_json({"user": done.user, "rows": done.rows})
    else:
        out.print(f"Deleted [bold]{escape(name)}[/bold]: {done.rows} rows erased")


@command("list", group=user_app)
def user_list(db: DbOpt, as_json: JsonOpt = False) -> None:
    """The users, with how many live and revoked tokens each has (never a token)."""
    from brain._hosted import tokens
    from brain._hosted.schema import database_errors

    with database_errors(), tokens.connect(db) as conn:
        tokens.ensure_schema(conn)
        users = tokens.list_users(conn)
    if as_json:
        emit_json(
            {
                "users": [
                    {
                        "name": u.name,
                        "created": u.created.isoformat(),
                        "active_tokens": u.active_tokens,
                        "revoked_tokens": u.revoked_tokens,
                    }
                    for u in users
                ]
            }
        )
        return
    table = Table("user", "since", "live tokens", "revoked", box=None)
    for u in users:
        table.add_row(
            escape(u.name),
            u.created.strftime("%Y-%m-%d"),
            str(u.active_tokens),
            str(u.revoked_tokens),
        )
    out.print(table)


def serve_http(
    http: str,
    *,
    public: bool,
    db: str | None,
    vaults: Path | None,
    db_read: str | None = None,
    embedder: str | None,
    rate: float,
    burst: int,
    max_open: int = 64,
    workers: int = 8,
    grace: int = 30,
    hosts: list[str] | None = None,
    origins: list[str] | None = None,
    limits: tuple[float, float, int] = (10.0, 30.0, 32),
    statement_timeout: float = 30.0,
    tenant_key: Path | None = None,
    max_connections: int = 10,
    prepared: bool = False,
) -> None:
    """`brain serve --http`: check the options, then serve until stopped."""
    from brain._errors import InvalidInput
    from brain._hosted import address as where
    from brain._hosted import serving
    from brain._hosted.pool import Pool
    from brain._hosted.tenants import FilesTenants, PgTenants, Tenants

    address = where.parse_address(http, public=public)
    allow = where.allowed(hosts or [], origins or [], public=public)
    if db is None:
        raise InvalidInput(
            "--http needs --db: the users database that holds the tokens",
            "e.g. --db postgresql://localhost/brain (or set BRAIN_DB)",
        )
    header, body, per_user = limits
    if min(header, body, statement_timeout) <= 0 or per_user < 1:
        raise InvalidInput(
            "--header-timeout, --body-timeout and --statement-timeout must be "
            "above 0, --max-requests-per-user at least 1"
        )
    if rate <= 0 or burst < 1 or min(max_open, workers, max_connections) < 1 or grace < 0:
        raise InvalidInput(
            "--rate must be above 0; --burst, --max-open, --workers, --max-connections at "
            "least 1; --grace not below 0"
        )
    if db_read is not None and vaults is not None:
        raise InvalidInput(
            "--db-read reads users' brains from a replica of --db: not with --vaults",
            "drop --db-read, or keep the brains in the database (`brain hosted init`)",
        )
    if embedder is not None:
        from brain._indexes.embedder import EMBEDDERS

        if embedder not in EMBEDDERS:
            raise InvalidInput(f"unknown embedder {embedder!r}; allowed: {', '.join(EMBEDDERS)}")
    # Every connection the server makes to PostgreSQL, lent a transaction at a time.
    pool = Pool(db, max_connections, statement_timeout=statement_timeout, prepared=prepared)
    if db_read is not None:  # its own bound: a PostgreSQL of its own
        from brain._hosted.pool import Replica

        pool.replica = Replica(
            db_read, max_connections, statement_timeout=statement_timeout, prepared=prepared
        )
    tenants: Tenants
    if vaults is None:  # every user's brain in the database itself (`brain hosted init`)
        from brain._hosted.roles import read_key

        key = read_key(tenant_key.expanduser()) if tenant_key is not None else None
        tenants = PgTenants(pool, embedder=embedder, key=key)
    else:
        tenants = FilesTenants(vaults.expanduser().resolve(), embedder=embedder)

    def announce(url: str) -> None:  # on stderr: stdout is for nothing here, as over stdio
        err.print(f"brain: serving MCP on {escape(url)}")

    serving.serve_http(
        address,
        tenants,
        pool,
        rate=rate,
        burst=burst,
        max_open=max_open,
        workers=workers,
        grace=grace,
        allow=allow,
        limits=where.Limits(header, body, per_user),
        announce=announce,
    )
