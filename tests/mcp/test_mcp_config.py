"""`brain mcp-config`: the exact snippet for each host, and `--write` only after the person
confirms at a real terminal (a pty), with a backup and the host's other servers kept."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from brain import _assistants as assistants
from brain._cli import _register, app
from brain._errors import InvalidInput
from tests.cli.test_connect_terminal import _read_until

_register()
ROOT = Path(__file__).resolve().parents[2]
OTHER = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]}


def run(cli: CliRunner, *args: str) -> Any:
    return cli.invoke(app, list(args))


def test_each_host_gets_its_snippet_with_absolute_paths(
    cli: CliRunner, vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in assistants.HOST_NAMES:
        res = run(cli, "mcp-config", name)
        assert res.exit_code == 0, res.output
        text = res.output
        start, end = text.index("{"), text.rindex("}") + 1
        entry = json.loads(text[start:end])["mcpServers"]["brain"]
        assert Path(entry["command"]).is_absolute()
        assert entry["args"][-3:] == ["serve", "--vault", str(vault.absolute())]
        if name == "claude-code":
            assert "claude mcp add --scope user brain -- " in text
            assert entry["type"] == "stdio"
        if name != "generic":
            assert "Settings file on this machine:" in text
    assert list(home.iterdir()) == []  # printing writes nothing


def test_settings_files_per_platform() -> None:
    home = Path("/home/ada")
    mac = assistants.host("claude-desktop", "darwin", home, {})
    assert mac.settings == home / "Library/Application Support/Claude/claude_desktop_config.json"
    win = assistants.host("claude-desktop", "win32", home, {"APPDATA": "/appdata"})
    assert win.settings == Path("/appdata/Claude/claude_desktop_config.json")
    linux = assistants.host("claude-desktop", "linux", home, {})
    assert linux.settings == home / ".config/Claude/claude_desktop_config.json"
    assert assistants.host("cursor", "linux", home, {}).settings == home / ".cursor/mcp.json"
    assert assistants.host("claude-code", "linux", home, {}).settings == home / ".claude.json"
    with pytest.raises(InvalidInput, match="unknown host 'vscode'; choose one of: claude-desktop"):
        assistants.host("vscode", "linux", home, {})


def test_the_brain_command_is_the_script_that_runs(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "brain"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    python = tmp_path / "bin" / "python"
    assert assistants.brain_command(str(script), str(python), Path.is_file) == [str(script)]
    assert assistants.brain_command("-m", str(python), Path.is_file) == [str(script)]
    alone = tmp_path / "other" / "python"
    command = assistants.brain_command("-m", str(alone), Path.is_file)
    assert command == [str(alone), "-P", "-m", "brain"]


def test_a_host_starting_brain_beside_another_brain_package_runs_brain(tmp_path: Path) -> None:
    impostor = tmp_path / "project" / "brain"
    impostor.mkdir(parents=True)
    (impostor / "__init__.py").write_text("")
    (impostor / "__main__.py").write_text("print('not brain')\n")
    command = assistants.brain_command("-m", sys.executable, lambda _: False)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ran = subprocess.run(
        [*command, "--version"], cwd=impostor.parent, capture_output=True, text=True, env=env
    )
    assert ran.returncode == 0 and "not brain" not in ran.stdout, ran.stdout + ran.stderr
    assert ran.stdout.strip().startswith("brain ")


def test_merging_keeps_every_other_server_and_key(tmp_path: Path) -> None:
    where = tmp_path / "mcp.json"
    current = json.dumps({"theme": "dark", "mcpServers": {"files": OTHER}})
    entry = {"command": "/x/brain", "args": ["serve", "--vault", "/v"]}
    merged = json.loads(assistants.merged(current, where, entry))
    assert merged == {"theme": "dark", "mcpServers": {"files": OTHER, "brain": entry}}
    assert json.loads(assistants.merged(None, where, entry)) == {"mcpServers": {"brain": entry}}
    with pytest.raises(InvalidInput, match=r"mcp.json is not valid JSON \(line 1"):
        assistants.merged("{oops", where, entry)


def cursor_settings(tmp_path: Path) -> tuple[Path, Path, str]:
    """A home whose Cursor settings already list another server: (home, file, its text)."""
    home = tmp_path / "home"
    settings = home / ".cursor" / "mcp.json"
    settings.parent.mkdir(parents=True)
    original = json.dumps({"mcpServers": {"files": OTHER}}, indent=2)
    settings.write_text(original)
    return home, settings, original


def test_write_without_a_terminal_is_refused_and_writes_nothing(
    vault: Path, tmp_path: Path
) -> None:
    home, settings, _ = cursor_settings(tmp_path)
    before = settings.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(home), "BRAIN_DAEMON": "off"}
    result = subprocess.run(
        [sys.executable, "-m", "brain", "mcp-config", "cursor", "--write", "--vault", str(vault)],
        input="yes\n",
        capture_output=True,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert result.returncode == 2, result.stderr
    assert "asks you at a terminal" in result.stderr and "nothing was written" in result.stderr
    assert settings.read_bytes() == before
    assert sorted(p.name for p in settings.parent.iterdir()) == ["mcp.json"]


def _write_in_pty(vault: Path, home: Path, answer: str) -> tuple[int, str]:
    pid, fd = pty.fork()
    if pid == 0:  # the child: its controlling terminal is the pty
        try:
            os.chdir(ROOT)
            env = {
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "HOME": str(home),
                "BRAIN_DAEMON": "off",
                "NO_COLOR": "1",
                "COLUMNS": "200",
            }
            args = [
                sys.executable,
                "-m",
                "brain",
                "mcp-config",
                "cursor",
                "--write",
                "--vault",
                str(vault),
            ]
            os.execve(sys.executable, args, env)
        finally:
            os._exit(127)
    seen = bytearray()
    _read_until(fd, b"Type yes: ", seen)
    os.write(fd, answer.encode() + b"\n")
    _read_until(fd, b"\0never", seen)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), seen.decode("utf-8", "replace")


def test_write_shows_the_change_asks_keeps_a_backup_and_other_servers(
    vault: Path, tmp_path: Path
) -> None:
    home, settings, original = cursor_settings(tmp_path)

    code, shown = _write_in_pty(vault, home, "no")
    assert code == 2 and "not confirmed" in shown, shown
    assert settings.read_text() == original

    code, shown = _write_in_pty(vault, home, "yes")
    assert code == 0, shown
    assert '+    "brain": {' in shown  # the change, as a diff, before the question
    written = json.loads(settings.read_text())
    assert written["mcpServers"]["files"] == OTHER
    assert written["mcpServers"]["brain"]["args"] == ["serve", "--vault", str(vault.absolute())]
    backups = [p for p in settings.parent.iterdir() if p.name.endswith(".bak")]
    assert len(backups) == 1 and backups[0].read_text() == original


def test_init_ends_with_the_two_next_steps(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["init", str(tmp_path / "v")])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[-3] == "Next:"
    assert lines[-2].lstrip().startswith('brain remember "')
    assert lines[-1].lstrip().startswith("brain mcp-config ")
    assert f"--vault {tmp_path / 'v'}" in lines[-1]
