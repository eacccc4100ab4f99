"""The `brain` command: every command works, has help, prints JSON, and fails cleanly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.core
from typer.testing import CliRunner

from brain._cli import _register, app
from brain.testing import tree_digest

_register()
ROOT = Path(__file__).resolve().parents[2]


def run(cli: CliRunner, *args: str, input: bytes | str | None = None) -> Any:
    return cli.invoke(app, list(args), input=input)


def test_python_dash_m_brain_and_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "brain", "--help"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0 and "remember" in result.stdout


def test_every_command_and_option_has_help() -> None:
    group = typer.main.get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    assert len(commands) >= 8
    for name, cmd in commands.items():
        assert cmd.help and cmd.help.strip(), f"{name} has no help"
        for param in cmd.params:
            if isinstance(param, typer.core.TyperOption):
                assert param.help, f"{name} {param.opts} has no help"
            else:
                assert getattr(param, "help", None), f"{name} argument {param.name} has no help"


def test_init_remember_recall_expand_list_forget(cli: CliRunner, vault: Path) -> None:
    res = run(cli, "remember", "We moved the launch to March", "--json")
    assert res.exit_code == 0, res.output
    note = json.loads(res.stdout)
    res = run(cli, "recall", "when is the launch")
    assert res.exit_code == 0 and "We moved the launch to March" in res.stdout
    assert note["path"] in res.stdout and "2026-" in res.stdout
    hits = json.loads(run(cli, "recall", "launch", "--json").stdout)["hits"]
    assert set(hits[0]) >= {"id", "title", "snippet", "created", "source", "path", "score"}
    assert hits[0]["id"] == note["id"]
    expanded = json.loads(run(cli, "expand", note["id"], "--json").stdout)
    assert expanded["body"] == "We moved the launch to March\n"
    listed = json.loads(run(cli, "list", "--json", "--node", "Knowledge").stdout)["notes"]
    assert [n["id"] for n in listed] == [note["id"]]
    forgot = run(cli, "forget", note["id"])
    assert forgot.exit_code == 0
    assert "next `brain sleep`" in forgot.stdout  # what is left to do, and how to check it
    assert f"brain doctor --forgotten {note['id']}" in forgot.stdout
    assert json.loads(run(cli, "recall", "launch", "--json").stdout)["hits"] == []


def test_remember_reads_stdin_and_takes_options(cli: CliRunner) -> None:
    res = run(
        cli,
        "remember",
        "-",
        "--title",
        "Cats",
        "--tags",
        "pets,home",
        "--json",
        input="Cats sleep all day.\n",
    )
    note = json.loads(res.stdout)
    assert note["meta"]["title"] == "Cats" and note["meta"]["tags"] == ["pets", "home"]
    assert note["body"] == "Cats sleep all day.\n"


def test_init_on_an_existing_vault_says_so(cli: CliRunner, vault: Path) -> None:
    before = tree_digest(vault)
    res = run(cli, "init", str(vault))
    assert res.exit_code == 0 and "already" in res.stdout
    assert tree_digest(vault) == before


def test_reindex_and_doctor(cli: CliRunner, vault: Path) -> None:
    run(cli, "remember", "Some fact", "--title", "Fact")
    assert run(cli, "reindex").exit_code == 0
    res = run(cli, "doctor", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["ok"] is True
    (vault / "main/Knowledge/Inbox/Bad.md").write_text("---\ntitle: [oops\n---\n")
    res = run(cli, "doctor")
    assert res.exit_code == 1 and "main/Knowledge/Inbox/Bad.md" in res.stdout


@pytest.mark.parametrize(
    ("args", "stdin", "expected"),
    [
        (["remember", ""], None, "text is empty"),
        (["remember", "   \n"], None, "text is empty"),
        (["remember", "x" * 70000], None, "limit is 65536 bytes"),
        (["remember", "-"], b"caf\xe9\n", "stdin is not valid UTF-8"),
        (["remember", "x", "--title", ".."], None, "title"),
        (["remember", "x", "--title", "a\x00b"], None, "title"),
        (["remember", "x", "--node", "../escape"], None, "node"),
        (["remember", "x", "--node", "a\\b"], None, "node"),
        (["remember", "x", "--node", "/abs"], None, "node"),
        (["remember", "x", "--node", "Knowledge/NUL"], None, "reserved"),
        (["remember", "x", "--kind", "poem"], None, "unknown kind 'poem'"),
        (["expand", "01JE2Z3K4M5N6P7Q8R9S0T1V2W"], None, "no note with id"),
        (["forget", "01JE2Z3K4M5N6P7Q8R9S0T1V2W"], None, "no note with id"),
        (["expand", "not-an-id"], None, "not a note id"),
        (["recall", " "], None, "query is empty"),
        (["recall", "x", "-k", "0"], None, "-k must be"),
        (["list", "--status", "sleepy"], None, "unknown status 'sleepy'"),
    ],
)
def test_bad_input_is_one_clear_line_exit_2_and_no_change(
    cli: CliRunner, vault: Path, args: list[str], stdin: bytes | None, expected: str
) -> None:
    before = tree_digest(vault)
    res = run(cli, *args, input=stdin)
    assert res.exit_code == 2, res.output
    assert expected in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert "Traceback" not in res.output
    assert tree_digest(vault) == before


def test_a_missing_vault_is_named(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["recall", "x", "--vault", str(tmp_path / "none")])
    assert res.exit_code == 2
    assert f"no vault at {tmp_path / 'none'}" in res.stderr and "brain init" in res.stderr


def test_debug_shows_the_traceback_and_keeps_exit_code_2(cli: CliRunner) -> None:
    res = run(cli, "--debug", "expand", "01JE2Z3K4M5N6P7Q8R9S0T1V2W")
    assert res.exit_code == 2
    assert "Traceback (most recent call last)" in res.stderr and "NotFound" in res.stderr
    assert res.stderr.rstrip().splitlines()[-1].startswith("error: ")


PROBE = """
import sys
from brain._cli import main
sys.argv = ["brain", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
heavy = sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules)
print("HEAVY:" + ",".join(heavy))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["init", "{vault}"],
        ["remember", "hello", "--vault", "{vault}"],
        ["recall", "hello", "--mode", "text", "--vault", "{vault}"],
    ],
)
def test_start_up_never_imports_torch(tmp_path: Path, args: list[str]) -> None:
    vault = tmp_path / "v"
    if args[0] != "init":
        subprocess.run(
            [sys.executable, "-m", "brain", "init", str(vault)],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
    argv = [a.format(vault=vault) for a in args]
    # An empty model cache: had anything wanted an embedding, it would export the model (torch).
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT, env=env
    )
    assert "HEAVY:\n" in result.stdout or result.stdout.endswith("HEAVY:\n"), result.stdout


@pytest.mark.parametrize("args", [["list"], ["recall", "launch"], ["--help"]])
def test_a_reader_that_went_away_gets_no_traceback(vault: Path, args: list[str]) -> None:
    # `brain list | head -1`: the pipe's reading end is gone before brain writes to it
    read, write = os.pipe()
    os.close(read)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BRAIN_DAEMON": "off", "BRAIN_VAULT": str(vault)}
    subprocess.run([sys.executable, "-m", "brain", "remember", "The launch is in March"], env=env)
    done = subprocess.run(
        [sys.executable, "-m", "brain", *args], stdout=write, stderr=subprocess.PIPE, env=env
    )
    os.close(write)
    assert done.returncode == 1, done.stderr  # as click ends on a broken pipe
    assert b"Traceback" not in done.stderr and b"Error" not in done.stderr
