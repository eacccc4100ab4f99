"""A broken brain.yaml is said in one line naming the file, the line and the field, without
PyYAML's multi-line report; exit code 2 (with `--debug` too), nothing changed."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._cli import _register, app
from brain._daemon import daemon_settings
from brain._errors import InvalidInput
from brain._settings import load
from brain.testing import tree_digest

_register()


def broken(vault: Path, cli: CliRunner, tail: str, *args: str) -> str:
    settings = vault / "brain.yaml"
    settings.write_text(settings.read_text() + tail)
    line = len(settings.read_text().splitlines())  # the line just added
    before = tree_digest(vault)
    res = cli.invoke(app, [*args, "recall", "anything"])
    assert res.exit_code == 2, res.output
    assert tree_digest(vault) == before
    assert "Traceback" not in res.stderr or "--debug" in args
    said = res.stderr.strip().splitlines()[-1]
    assert said.startswith("error: ") and f"{vault / 'brain.yaml'} line {line}" in said
    return said


def test_invalid_yaml_is_one_line_with_its_place(vault: Path, cli: CliRunner) -> None:
    said = broken(vault, cli, "recall: k: 3\n")
    assert said.endswith(
        "column 10: not valid YAML (mapping values are not allowed in this context)"
    )
    res = cli.invoke(app, ["list"])
    assert len(res.stderr.strip().splitlines()) == 1  # no "in <unicode string>" block


@pytest.mark.parametrize(
    ("tail", "field", "problem"),
    [
        ("recall:\n  k: many\n", "recall.k", "must be a positive whole number, not 'many'"),
        ("tiers: cold\n", "tiers", "must be a mapping"),
    ],
)
def test_a_bad_field_names_file_line_and_field(
    vault: Path, cli: CliRunner, tail: str, field: str, problem: str
) -> None:
    said = broken(vault, cli, tail)
    assert f"field '{field}' {problem}" in said


def test_the_daemon_section_names_its_line_too(vault: Path) -> None:
    settings = vault / "brain.yaml"
    text = settings.read_text().replace("autostart: false", "autostart: sometimes")
    settings.write_text(text)
    line = text.splitlines().index("  autostart: sometimes") + 1
    with pytest.raises(InvalidInput) as caught:
        daemon_settings(load(vault))
    assert str(caught.value) == (
        f"{settings} line {line}: field 'daemon.autostart' must be true or false, not 'sometimes'"
    )


def test_debug_shows_the_traceback_of_a_broken_brain_yaml_and_still_exits_2(
    vault: Path, cli: CliRunner
) -> None:
    broken(vault, cli, "recall:\n  k: 0\n", "--debug")
