"""`brain --help` reads in order of use, flags show no type, `--version`, shell completion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from brain._cli import _register, app
from brain._cli.app import EXAMPLES, PANELS
from brain._version import version

_register()
ROOT = Path(__file__).resolve().parents[2]
ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT),
    "COLUMNS": "120",
    "NO_COLOR": "1",
    "BRAIN_DAEMON": "off",
}


def help_panels(text: str) -> list[tuple[str, list[str]]]:
    """The command panels of a rich `--help` page: (title, command names) in order."""
    panels: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        title = re.match(r"╭─ (.+?) ─", line)
        if title:
            panels.append((title.group(1), []))
        row = re.match(r"│ ([a-z][a-z-]*) ", line)
        if row and panels and panels[-1][0] not in ("Options", "Arguments"):
            panels[-1][1].append(row.group(1))
    return [(t, names) for t, names in panels if t not in ("Options", "Arguments")]


def brain_help(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "brain", *args, "--help"],
        env=ENV,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return result.stdout


def test_commands_come_in_panels_in_order_of_use() -> None:
    shown = help_panels(brain_help())
    assert shown == [(title, list(names)) for title, names in PANELS]
    titles = [t for t, _ in shown]
    assert titles[:3] == ["Everyday", "Relations", "Assistants"]
    assert shown[0][1] == "init remember recall expand list correct forget".split()
    assert "Commands" not in titles  # no command left without a panel


def test_every_command_is_in_a_panel() -> None:
    import typer

    group = typer.main.get_command(app)
    visible = {n for n, c in group.commands.items() if not c.hidden}  # type: ignore[attr-defined]
    assert visible == {n for _t, names in PANELS for n in names}


def test_each_everyday_command_shows_an_example() -> None:
    page = brain_help()
    for name, example in EXAMPLES.items():
        assert f"e.g. {example}" in page, name
        assert f"Example: {example}" in brain_help(name), name
    assert set(EXAMPLES) == set(PANELS[0][1])


def test_each_everyday_summary_is_a_whole_sentence() -> None:
    rows: dict[str, str] = {}
    name = ""
    for line in brain_help().splitlines():  # a summary wraps onto rows with no command name
        row = re.match(r"│ ([a-z][a-z-]*)? +(.+?) *│$", line)
        if row and not row.group(2).startswith("e.g."):
            name = row.group(1) or name
            rows[name] = f"{rows.get(name, '')} {row.group(2)}".strip()
    for command in EXAMPLES:
        assert rows[command].endswith((".", ")")), (command, rows[command])
    assert rows["recall"].endswith("or say that none is about it.")


def test_a_commands_help_flows_as_paragraphs() -> None:
    """A docstring's line breaks are not kept: kept, they wrapped again into ragged lines."""
    page = brain_help("tier")  # 120 columns: the paragraph fits on one line and a bit
    lines = [line.strip() for line in page.splitlines()]
    start = next(n for n, line in enumerate(lines) if line.startswith("`tier status` counts"))
    assert "`tier move ID hot|cold` moves one note, byte for byte;" in lines[start]
    assert lines[start + 1].endswith("so every cold note stays readable).")


def test_flags_show_no_bool_metavar() -> None:
    for args in ((), ("recall",), ("daemon",), ("daemon", "start"), ("git", "status")):
        page = brain_help(*args)
        assert "<bool>" not in page, args
    assert re.search(r"--debug\s+Show tracebacks", brain_help())


def test_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version as installed

    assert version() == installed("brain-memory")
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0 and res.output == f"brain {installed('brain-memory')}\n"
    result = subprocess.run(
        [sys.executable, "-m", "brain", "--version"],
        env=ENV,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0 and result.stdout.strip() == f"brain {version()}"


def test_shell_completion_through_the_installed_script() -> None:
    script = Path(sys.executable).with_name("brain")
    env = {**ENV, "_BRAIN_COMPLETE": "complete_bash", "COMP_WORDS": "brain rec", "COMP_CWORD": "1"}
    result = subprocess.run([str(script)], env=env, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.split() == ["recall"], result
    env = {**env, "COMP_WORDS": "brain mcp-config --wr", "COMP_CWORD": "2"}
    result = subprocess.run([str(script)], env=env, capture_output=True, text=True, cwd=ROOT)
    assert result.stdout.split() == ["--write"], result
    # The shell named, not detected: detection reads the process tree, which differs between
    # a terminal, CI and a test runner ("Shell  not supported" where it finds none).
    named = {**ENV, "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    shown = subprocess.run(
        [str(script), "--show-completion", "bash"],
        env=named,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert "complete -o default -F _brain_completion brain" in shown.stdout, shown
    assert "--install-completion" in brain_help()
