"""push and pull: a real vault into the database and back out byte for byte; the commands'
errors; sleep for every user."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from brain._cli import _register, app
from brain._clock import FixedClock
from brain._hosted.tenant import open_tenant
from brain._hosted.transfer import vault_files
from brain.testing import tree_digest
from tests.vault.test_frontmatter import every_kind

_register()


def files_of(root: Path) -> dict[str, bytes]:
    return {rel: path.read_bytes() for rel, path in vault_files(root)}


@pytest.fixture
def runner(hosted_dsn: str, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("BRAIN_DB", hosted_dsn)
    return CliRunner()


def test_push_then_pull_is_byte_exact_and_leaves_local_only_notes_home(
    runner: CliRunner, hosted_dsn: str, vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    brain = every_kind(vault, clock, tmp_path)  # history, a document and chunks, a transcript…
    for n in range(5):  # enough memories in one node for its index.json
        brain.remember(
            f"Cooking fact {n}: salt the pasta water.",
            title=f"Fact {n}",
            node="Knowledge/Domains/Cooking",
        )
    hidden = brain.remember("My locker code is 4711.", title="Locker")
    brain.set_field(hidden.id, "visibility", "local-only")
    brain.close()
    sent = files_of(vault)
    assert any(rel.endswith("index.json") for rel in sent) and "brain.yaml" in sent
    assert not any(rel.startswith(("local-only/", ".brain/")) for rel in sent)
    user = f"u{uuid.uuid4().hex[:8]}"
    pushed = runner.invoke(app, ["hosted", "push", str(vault), "--user", user, "--json"])
    assert pushed.exit_code == 0, pushed.output
    assert json.loads(pushed.output)["files"] == len(sent)

    copy = tmp_path / "copy"
    pulled = runner.invoke(app, ["hosted", "pull", str(copy), "--user", user])
    assert pulled.exit_code == 0, pulled.output
    got = {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert got == sent  # every byte of every file, and nothing more
    assert not (copy / "local-only").exists()

    hosted = open_tenant(hosted_dsn, user, clock=clock)
    try:
        assert "4711" not in json.dumps([h.snippet for h in hosted.recall("locker code")])
        spec = next(r for r in hosted.list() if r.title == "Widget Pro specs")
        assert len(hosted.history(spec.id)) == 2  # a superseded note is a note: both came
        chunks = hosted.recall("tomatoes deep watering")
        assert chunks and "#" in chunks[0].id  # the document's chunks came with it
    finally:
        hosted.close()

    # Pushing again replaces, it does not add: the copy pushed back pulls out the same.
    again = runner.invoke(app, ["hosted", "push", str(copy), "--user", user])
    assert again.exit_code == 0, again.output
    twice = tmp_path / "twice"
    assert runner.invoke(app, ["hosted", "pull", str(twice), "--user", user]).exit_code == 0
    assert tree_digest(twice) == tree_digest(copy)


def test_bad_database_unknown_user_and_busy_folder_get_one_line_and_exit_2(
    runner: CliRunner, vault: Path, tmp_path: Path
) -> None:
    bad = runner.invoke(
        app,
        [
            "hosted",
            "pull",
            str(tmp_path / "x"),
            "--user",
            "a",
            "--db",
            "postgresql://nobody@127.0.0.1:1/none",
        ],
    )
    assert bad.exit_code == 2 and "cannot connect to the database" in bad.output
    assert len(bad.output.strip().splitlines()) == 1
    assert "Traceback" not in bad.output
    garbled = runner.invoke(app, ["hosted", "init", "not a dsn"])
    assert garbled.exit_code == 2 and "cannot connect" in garbled.output
    nobody = runner.invoke(app, ["hosted", "pull", str(tmp_path / "y"), "--user", "nobody-here"])
    assert nobody.exit_code == 2 and "no user 'nobody-here'" in nobody.output
    assert not (tmp_path / "y").exists()
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    busy = runner.invoke(app, ["hosted", "pull", str(full), "--user", "a"])
    assert busy.exit_code == 2 and "not an empty folder" in busy.output
    assert [p.name for p in full.iterdir()] == ["keep.txt"]
    hostile = runner.invoke(app, ["hosted", "push", str(vault), "--user", "../root"])
    assert hostile.exit_code == 2


@pytest.mark.parametrize("user", ["Alice", "has space", "élan"])
def test_push_makes_no_user_that_user_add_and_user_delete_would_refuse(
    runner: CliRunner, vault: Path, hosted_dsn: str, user: str
) -> None:
    """Such a brain had no way in (no token) and no way out (`user delete` refused the name)."""
    pushed = runner.invoke(app, ["hosted", "push", str(vault), "--user", user])
    assert pushed.exit_code == 2 and "is not allowed" in pushed.stderr, pushed.output
    with psycopg.connect(hosted_dsn) as owner:
        made = owner.execute("SELECT count(*) FROM tenants WHERE name = %s", (user,)).fetchone()
    assert made == (0,)


def test_hosted_sleep_runs_for_every_user_and_twice_changes_nothing(
    runner: CliRunner, hosted_dsn: str, vault: Path
) -> None:
    users = [f"s{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for user in users:
        assert runner.invoke(app, ["hosted", "push", str(vault), "--user", user]).exit_code == 0
    first = runner.invoke(app, ["hosted", "sleep", "--json"])
    assert first.exit_code == 0, first.output
    assert set(users) <= {p["user"] for p in json.loads(first.output)}
    second = runner.invoke(app, ["hosted", "sleep", "--json"])
    assert second.exit_code == 0, second.output
    assert not any(p["changed"] for p in json.loads(second.output) if p["user"] in users)
    assert runner.invoke(app, ["hosted", "init", hosted_dsn]).exit_code == 0  # idempotent


def test_a_new_user_starts_from_the_template_and_is_never_made_twice(
    hosted_dsn: str, clock: FixedClock
) -> None:
    from brain._errors import InvalidInput
    from brain._hosted.transfer import create

    user = f"n{uuid.uuid4().hex[:8]}"
    made = create(hosted_dsn, user, clock, embedder="hashing")
    assert made.notes > 0
    brain = open_tenant(hosted_dsn, user, clock=clock)
    try:
        note = brain.remember("First memory.", title="First")
        assert [h.id for h in brain.recall("first memory")] == [note.id]
        assert brain.settings.embedder == "hashing"
    finally:
        brain.close()
    with pytest.raises(InvalidInput, match="already exists"):
        create(hosted_dsn, user, clock)
