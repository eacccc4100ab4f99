"""Connecting an assistant: the MCP settings snippet for each host, where the host keeps it,
and the merged settings file (the host's other servers kept)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain._errors import InvalidInput

SERVER_NAME = "brain"
HOST_NAMES = ("claude-desktop", "claude-code", "cursor", "generic")


@dataclass(frozen=True)
class Host:
    """An MCP host: its name, how a person calls it, and the file that lists its servers."""

    name: str
    label: str
    settings: Path | None  # None: this host has no settings file brain knows (generic)
    stdio_type: bool = False  # Claude Code's entries name their transport

    def entry(self, command: Sequence[str], vault: Path) -> dict[str, Any]:
        """The server entry that runs `brain serve` on this vault."""
        found: dict[str, Any] = {"type": "stdio"} if self.stdio_type else {}
        found["command"] = command[0]
        found["args"] = [*command[1:], "serve", "--vault", str(vault)]
        return found

    def snippet(self, command: Sequence[str], vault: Path, name: str = "brain") -> str:
        """The JSON to paste into the host's settings, the server called `name`."""
        return json.dumps({"mcpServers": {name: self.entry(command, vault)}}, indent=2)

    def name_for(self, entry: Mapping[str, Any]) -> str:
        """The name the entry would take in this host's settings as they are now (`--write`
        would use it): a second vault's snippet must not replace the first's when pasted."""
        if self.settings is None:
            return SERVER_NAME
        try:
            return name_in(settings_text(self.settings), self.settings, entry)
        except (InvalidInput, OSError):
            return SERVER_NAME  # unreadable: `--write` says why; the snippet stays of use


def host(name: str, platform: str, home: Path, env: Mapping[str, str]) -> Host:
    """The host called `name` on this platform (sys.platform), its settings under `home`."""
    if name == "claude-desktop":
        if platform == "darwin":
            where = home / "Library" / "Application Support" / "Claude"
        elif platform.startswith("win"):
            where = Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "Claude"
        else:  # no official Linux build; the community builds read this file
            where = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "Claude"
        return Host(name, "Claude Desktop", where / "claude_desktop_config.json")
    if name == "claude-code":  # user scope: every project sees the server
        return Host(name, "Claude Code", home / ".claude.json", stdio_type=True)
    if name == "cursor":  # global settings (a project's own is .cursor/mcp.json)
        return Host(name, "Cursor", home / ".cursor" / "mcp.json")
    if name == "generic":
        return Host(name, "any MCP host", None)
    raise InvalidInput(f"unknown host {name!r}; choose one of: {', '.join(HOST_NAMES)}")


def brain_command(argv0: str, executable: str, is_file: Callable[[Path], bool]) -> list[str]:
    """The absolute command that runs this `brain`: the script that was run, else the one
    installed beside this Python, else this Python with `-P -m brain` (`-P`: a host that starts
    it in a folder holding some other `brain/` package still runs this one)."""
    script = Path(argv0)
    if script.name in ("brain", "brain.exe") and is_file(script):
        return [str(script.absolute())]
    python = Path(executable)
    for name in ("brain", "brain.exe"):
        beside = python.with_name(name)
        if is_file(beside):
            return [str(beside)]
    return [str(python), "-P", "-m", "brain"]


def claude_mcp_add(command: Sequence[str], vault: Path, name: str = "brain") -> str:
    """The `claude mcp add` line that registers the same server from a shell."""
    words = [
        "claude",
        "mcp",
        "add",
        "--scope",
        "user",
        name,
        "--",
        *command,
        "serve",
        "--vault",
        str(vault),
    ]
    return shlex.join(words)


TOKEN_PLACEHOLDER = "<token>"
_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?")


def check_url(url: str) -> str:
    """The URL of a `brain serve --http` endpoint, as http(s)://host[:port]/path."""
    if not _URL.fullmatch(url):
        raise InvalidInput(
            f"--url {url!r} is not an http(s) URL", "e.g. --url https://brain.example.com/mcp"
        )
    return url


def http_entry(host: Host, url: str, token: str) -> dict[str, Any]:
    """The entry that connects a host to a `brain serve --http` server with a bearer token.
    Claude Desktop's settings file runs local servers only: a remote one is added in the app."""
    if host.name == "claude-desktop":
        raise InvalidInput(
            "Claude Desktop's settings file lists local servers only; nothing is printed",
            "add the URL as a custom connector in Claude Desktop's settings, or choose "
            "claude-code, cursor or generic",
        )
    found: dict[str, Any] = {"type": "http"} if host.stdio_type else {}
    found["url"] = url
    found["headers"] = {"Authorization": f"Bearer {token}"}
    return found


def claude_mcp_add_http(url: str, token: str) -> str:
    """The `claude mcp add` line that registers a `brain serve --http` server."""
    words = [
        "claude",
        "mcp",
        "add",
        "--scope",
        "user",
        "--transport",
        "http",
        SERVER_NAME,
        url,
        "--header",
        f"Authorization: Bearer {token}",
    ]
    return shlex.join(words)


def merged(current: str | None, where: Path, entry: Mapping[str, Any]) -> str:
    """The settings file's text with brain's entry set under mcpServers (named by
    `server_name`); every other key and server kept as it was. `current` None: the file does
    not exist yet."""
    data = _settings_data(current, where)
    servers = data.get("mcpServers", {})
    data = {**data, "mcpServers": {**servers, server_name(servers, entry): dict(entry)}}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def name_in(current: str | None, where: Path, entry: Mapping[str, Any]) -> str:
    """The name brain's entry takes in this settings file (`server_name`)."""
    return server_name(_settings_data(current, where).get("mcpServers", {}), entry)


def server_name(servers: Mapping[str, Any], entry: Mapping[str, Any]) -> str:
    """The name of brain's entry among a host's servers: the one that serves this vault
    already, else `brain`, unless `brain` serves another vault still there (a person with a
    work and a personal vault in one host): then `brain-<folder>`, so both stay."""
    vault = served_vault(entry)
    if vault is None:
        return SERVER_NAME
    for name, other in servers.items():
        if name.startswith(SERVER_NAME) and served_vault(other) == vault:
            return name
    taken = served_vault(servers.get(SERVER_NAME))
    if taken is None or not (Path(taken) / "brain.yaml").is_file():
        return SERVER_NAME  # free, or its vault moved or is gone: this one takes its place
    folder = re.sub(r"[^a-z0-9]+", "-", Path(vault).name.lower()).strip("-") or "vault"
    name, n = f"{SERVER_NAME}-{folder}", 2
    while name in servers:
        name, n = f"{SERVER_NAME}-{folder}-{n}", n + 1
    return name


def served_vault(entry: Any) -> str | None:
    """The vault a server entry runs `brain serve --vault PATH` on, if it is one."""
    args = entry.get("args") if isinstance(entry, Mapping) else None
    if not isinstance(args, list) or "serve" not in args or "--vault" not in args[:-1]:
        return None
    found = args[args.index("--vault") + 1]
    return found if isinstance(found, str) else None


def _settings_data(current: str | None, where: Path) -> dict[str, Any]:
    """The settings file's JSON object, its mcpServers checked."""
    data: Any = {}
    if current is not None and current.strip():
        try:
            data = json.loads(current)
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"{where} is not valid JSON (line {exc.lineno}, column {exc.colno}); "
                "nothing was written",
                "fix it by hand, or paste the snippet yourself",
            ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{where} does not hold a JSON object; nothing was written")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise InvalidInput(f"{where}: mcpServers is not an object; nothing was written")
    return data


def settings_text(where: Path) -> str | None:
    """The settings file's text; None when it does not exist yet. A byte-order mark (Windows
    Notepad writes one) is read past; the file is written back without it."""
    if not where.exists():
        return None
    try:
        return where.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{where} is not UTF-8 text; nothing was written",
            "save it as UTF-8, or paste the snippet yourself",
        ) from None


def settings_target(where: Path) -> Path:
    """The file to write: a settings file that is a link (as a dotfiles folder keeps it) is
    written where it points, so the link stays."""
    return where.resolve() if where.is_symlink() else where


def backup_name(where: Path, stamp: str) -> Path:
    """Where the old settings file is kept: beside it, named by the moment of the change."""
    return where.with_name(f"{where.name}.{stamp}.bak")
