"""The layout holds: layers without circles, partition views as values, one error boundary,
recall's options defined once."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain import _partitions as partitions
from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._daemon.backend import Backend, DaemonBackend, LocalBackend
from brain._daemon.operations import Operations
from brain._errors import InvalidInput
from brain._git import repo
from brain._mcp_server import build_server
from brain._model import RecallOptions

ROOT = Path(__file__).resolve().parents[2]
_register()


def test_the_import_layers_and_no_circles_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_sql_lives_in_the_indexes_and_the_hosted_storage_only() -> None:
    sql = re.compile(
        r"(?<!\w)id=note_id|SELECT |\.db\.execute|catalog\.(select|count|relations)\((?!\))"
    )
    for path in (ROOT / "brain").rglob("*.py"):
        if path.parent.name in ("_indexes", "_hosted"):  # SQLite's caches; PostgreSQL's storage
            continue
        found = sql.search(path.read_text(encoding="utf-8"))
        assert found is None, f"{path}: {found.group(0) if found else ''}"


def test_a_partition_view_is_a_value_the_brain_keeps_its_own(brain: Brain) -> None:
    partitions.create(brain._context, "work")
    work = brain.at("work")
    assert (work.partition, brain.partition) == ("work", "main")
    assert (
        work._context.caches is brain._context.caches and work._context.lock is brain._context.lock
    )  # one opened vault
    work.remember("Quarterly planning happens in March", title="Planning")
    assert "Planning" in [r.title for r in work.list()]
    assert "Planning" not in [r.title for r in brain.list()]


def test_sleep_draws_every_partition_and_leaves_the_brain_where_it_was(brain: Brain) -> None:
    partitions.create(brain._context, "work")
    brain.sleep()
    assert brain.partition == "main"
    for name in ("main", "work"):
        assert (brain.root / name / "Insights" / "Graph.md").is_file()


def test_the_mcp_server_takes_a_model_view_and_changes_nothing_of_the_brain_handed_to_it(
    brain: Brain,
) -> None:
    build_server(brain)
    assert brain.for_model is False and brain._context.defer_commits is False
    model = brain.at(for_model=True, defer_commits=True)
    assert model.for_model and not brain.for_model


def test_a_model_session_does_not_defer_the_commits_of_others(
    vault: Path, clock: FixedClock, git_identity: None
) -> None:
    repo.enable(vault)
    brain = open_vault(vault, clock=clock)
    try:
        build_server(brain)  # the daemon keeps serving the CLI beside its MCP sessions
        brain.remember("The CLI's write is its own commit", title="Own commit")
        git_log = ["git", "-C", str(vault), "log", "--format=%s"]
        log = subprocess.run(git_log, capture_output=True, text=True, check=True).stdout
        assert log.splitlines()[0].startswith('brain: remember "Own commit"')
    finally:
        brain.close()


def test_daemon_sub_commands_fail_through_the_one_boundary(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = CliRunner().invoke(app, ["daemon", "start", "--vault", str(missing)])
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:")


def test_only_the_boundary_turns_a_brain_error_into_exit_code_2() -> None:
    for path in (ROOT / "brain").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name == "_errors.py":
            continue
        assert "Exit(2)" not in text and "SystemExit(2)" not in text, path


def test_recall_options_are_defined_once() -> None:
    for owner in (Brain, Backend, LocalBackend, DaemonBackend):
        params = inspect.signature(owner.recall).parameters
        # A backend also takes the partition of one command (`--partition`), outside them.
        where = [] if owner is Brain else ["partition"]
        assert list(params) == ["self", "query", *where, "options"], owner
        hint = typing.get_type_hints(owner.recall)["options"]
        assert typing.get_args(hint) == (RecallOptions,), owner


def test_the_daemon_checks_recall_options_against_that_one_definition(brain: Brain) -> None:
    ops = Operations(brain)
    try:
        assert ops.run("recall", {"query": "anything", "k": 3}) == []
        with pytest.raises(
            InvalidInput, match="allowed: query, partition, k, node, include_superseded"
        ):
            ops.run("recall", {"query": "anything", "limit": 3})
        with pytest.raises(InvalidInput, match="'k' has the wrong type"):
            ops.run("recall", {"query": "anything", "k": "3"})
    finally:
        ops.close()


def test_no_module_is_over_450_lines() -> None:
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "brain").rglob("*.py")
    }
    assert {path: n for path, n in sizes.items() if n > 450} == {}


def test_every_module_but_the_api_and_testing_is_private() -> None:
    """The package's public set is `brain` itself (its `__all__`), `python -m brain` and
    `brain.testing`; every other module or package under brain/ has a `_` name."""
    public = {"__init__.py", "__main__.py", "testing.py", "py.typed"}
    for path in (ROOT / "brain").iterdir():
        if path.name in public or path.name == "__pycache__":
            continue
        assert path.name.startswith("_"), f"{path.name}: internal, so `_{path.name}`"
