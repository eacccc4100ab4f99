"""`brain mcp-config`: the exact settings that connect an assistant host to this vault."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from brain._cli.app import VaultOpt, command, out, vault_path
from brain._errors import InvalidInput, NotConfirmed, NoTerminal

if TYPE_CHECKING:
    from brain._assistants import Host


@command("mcp-config")
def mcp_config(
    host_name: Annotated[
        str,
        typer.Argument(metavar="HOST", help="claude-desktop | claude-code | cursor | generic."),
    ] = "generic",
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Add brain to the host's settings file: shows the change and asks at your "
            "terminal first, keeps a backup and the host's other servers.",
        ),
    ] = False,
    vault: VaultOpt = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="A `brain serve --http` endpoint to connect to instead of "
            "a vault here, e.g. https://brain.example.com/mcp.",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="BRAIN_TOKEN",
            show_envvar=True,
            help="With --url: the user's bearer token (else a placeholder).",
        ),
    ] = None,
) -> None:
    """Print the settings that connect an assistant (Claude Desktop, Claude Code, Cursor…)."""
    from brain import _assistants as assistants
    from brain import _settings as settings_mod

    if url is not None:
        _remote(host_name, assistants.check_url(url), token, write)
        return
    root = vault_path(vault)[0].absolute()
    settings_mod.load(root)  # no vault there: say so (with the `brain init` hint) first
    host = assistants.host(host_name, sys.platform, Path.home(), os.environ)
    exe = assistants.brain_command(sys.argv[0], sys.executable, Path.is_file)
    entry = host.entry(exe, root)
    if write:
        _write(host, entry)
        return
    out.print(f"[bold]{host.label}[/bold]: brain serves the vault at {escape(str(root))}")
    if host.settings is not None:
        state = "exists" if host.settings.exists() else "not there yet"
        out.print(f"Settings file on this machine: {escape(str(host.settings))} ({state})")
        out.print('Add this to it (merged under "mcpServers"; or run again with --write):')
    else:
        out.print("Give your host this server (most read this JSON shape):")
    name = host.name_for(entry)
    out.print(escape(host.snippet(exe, root, name)))
    if host.name == "claude-code":
        out.print("Or, from a shell:")
        out.print(escape(assistants.claude_mcp_add(exe, root, name)))
    elif host.name == "generic":
        out.print("The command it runs (stdio): " + escape(" ".join([*exe, *entry["args"]])))


def _remote(host_name: str, url: str, token: str | None, write: bool) -> None:
    """The settings for a `brain serve --http` server: its URL and the token's header."""
    from brain import _assistants as assistants

    host = assistants.host(host_name, sys.platform, Path.home(), os.environ)
    entry = assistants.http_entry(host, url, token or assistants.TOKEN_PLACEHOLDER)
    if write:
        _write(host, entry)
        return
    out.print(f"[bold]{host.label}[/bold]: brain served at {escape(url)}")
    if url.startswith("http://") and not url.startswith(("http://127.", "http://localhost")):
        out.print(
            "[yellow]The token travels in every request: use https:// off this machine.[/yellow]"
        )
    if host.settings is not None:
        out.print(f"Add this to {escape(str(host.settings))} (or run again with --write):")
    out.print(escape(json.dumps({"mcpServers": {assistants.SERVER_NAME: entry}}, indent=2)))
    if host.name == "claude-code":
        out.print("Or, from a shell:")
        out.print(
            escape(assistants.claude_mcp_add_http(url, token or assistants.TOKEN_PLACEHOLDER))
        )
    if token is None:
        out.print("Put the user's token (`brain hosted user add`) in place of <token>.")


def _write(host: Host, entry: dict[str, Any]) -> None:
    from brain import _assistants as assistants
    from brain._sources.consent import ask_at_terminal
    from brain._vault.files import atomic_write

    where = host.settings
    if where is None:
        raise InvalidInput(
            "the generic host has no settings file to write; nothing was written",
            "copy the snippet `brain mcp-config generic` prints into your host's settings",
        )
    where = assistants.settings_target(where)
    current = assistants.settings_text(where)
    new = assistants.merged(current, where, entry)
    name = assistants.name_in(current, where, entry)
    if current == new:
        out.print(f"{escape(str(where))} already runs brain this way; nothing changed.")
        return
    diff = "".join(
        difflib.unified_diff(
            (current or "").splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile=f"{where} (now)",
            tofile=f"{where} (after)",
        )
    )
    try:
        answer = ask_at_terminal(diff, f"Write this change to {where}? Type yes: ")
    except NoTerminal:
        raise NoTerminal(
            "--write changes another program's settings, so it asks you at a terminal, and "
            "this process has none; nothing was written",
            "run it yourself in a terminal window, or paste the snippet by hand",
        ) from None
    if answer != "yes":
        raise NotConfirmed(f"not confirmed (typed {answer!r}, not 'yes'); nothing was written")
    if current is not None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        backup = assistants.backup_name(where, stamp)
        shutil.copy2(where, backup)
        out.print(f"Kept the old settings in {escape(str(backup))}")
    where.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(where, new)
    out.print(f"Wrote {escape(str(where))}; restart {host.label} to load brain.")
    if name != assistants.SERVER_NAME:
        other = assistants.served_vault(json.loads(new)["mcpServers"][assistants.SERVER_NAME])
        out.print(
            f"This vault's server is named {escape(name)}: {escape(assistants.SERVER_NAME)} "
            f"still serves the vault at {escape(str(other))}."
        )
