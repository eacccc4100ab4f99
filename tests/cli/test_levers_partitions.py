"""The person's levers (`brain set`) and `brain partition …` on the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import NotFound
from brain.testing import tree_digest

_register()


def run(cli: CliRunner, *args: str) -> Any:
    return cli.invoke(app, list(args))


def remembered(cli: CliRunner, text: str, *extra: str) -> dict[str, Any]:
    res = run(cli, "remember", text, "--json", *extra)
    assert res.exit_code == 0, res.output
    return dict(json.loads(res.stdout))


def test_set_visibility_local_only_moves_the_file_and_back(cli: CliRunner, vault: Path) -> None:
    note = remembered(cli, "My bank PIN hint is the dog's birthday", "--title", "PIN hint")
    res = run(cli, "set", note["id"], "visibility", "local-only", "--json")
    assert res.exit_code == 0, res.output
    moved = json.loads(res.stdout)
    assert moved["path"] == "local-only/main/Knowledge/Inbox/PIN hint.md"
    assert not (vault / note["path"]).exists()
    text = (vault / moved["path"]).read_text()
    assert "visibility: local-only" in text and f"id: {note['id']}" in text
    assert "local-only/" in (vault / ".gitignore").read_text().splitlines()
    hits = json.loads(run(cli, "recall", "bank PIN", "--json").stdout)["hits"]
    assert hits[0]["path"] == moved["path"]  # the person still finds it; a model never does
    res = run(cli, "set", note["id"], "visibility", "private", "--json")
    back = json.loads(res.stdout)
    assert back["path"] == note["path"] and back["meta"]["visibility"] == "private"
    assert not (vault / "local-only/main/Knowledge/Inbox").exists()
    back = json.loads(run(cli, "set", note["id"], "visibility", "normal", "--json").stdout)
    assert "visibility" not in back["meta"] and back["path"] == note["path"]
    brain = open_vault(vault)
    assert brain.doctor().ok
    assert brain._context.get(note["id"]).visibility == "normal"


def test_a_file_in_the_local_only_folder_is_local_only_whatever_its_field_says(
    brain: Brain, vault: Path
) -> None:
    folder = vault / "local-only/main/Knowledge/Inbox"
    folder.mkdir(parents=True)
    (folder / "Moved by hand.md").write_text(
        "---\nid: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\ntitle: Moved by hand\nvisibility: normal\n---\nfig\n"
    )
    brain._context.for_model = True
    assert brain.recall("fig") == []
    brain._context.for_model = False
    assert brain.recall("fig")[0].id == "01JE2Z3K4M5N6P7Q8R9S0T1V2W"


def test_set_defining_eternal_and_status(cli: CliRunner, vault: Path) -> None:
    note = remembered(cli, "We chose Postgres", "--title", "Database")
    meta = json.loads(run(cli, "set", note["id"], "defining", "decision", "--json").stdout)["meta"]
    assert meta["defining"] == "decision"
    meta = json.loads(run(cli, "set", note["id"], "defining", "none", "--json").stdout)["meta"]
    assert "defining" not in meta
    thread = remembered(cli, "Moving house", "--kind", "thread", "--title", "Move")
    meta = json.loads(run(cli, "set", thread["id"], "eternal", "true", "--json").stdout)["meta"]
    assert meta["eternal"] is True
    meta = json.loads(run(cli, "set", note["id"], "status", "archived", "--json").stdout)["meta"]
    assert meta["status"] == "archived" and {"archived", "closed"} <= set(meta["tags"])
    meta = json.loads(run(cli, "set", note["id"], "status", "active", "--json").stdout)["meta"]
    assert meta["status"] == "active" and "tags" not in meta
    meta = json.loads(run(cli, "set", thread["id"], "status", "resolved", "--json").stdout)["meta"]
    assert meta["status"] == "resolved"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("FIELD", "visibility", "secret"), "visibility cannot be 'secret'; allowed: normal"),
        (("FIELD", "source", "x"), "unknown field 'source'; brain set accepts: visibility"),
        (("FIELD", "eternal", "true"), "eternal applies to threads only"),
        (("FIELD", "status", "superseded"), "status cannot be 'superseded'"),
        (("FIELD", "defining", "maybe"), "defining cannot be 'maybe'"),
        (("01JE2Z3K4M5N6P7Q8R9S0T1V2W", "defining", "event"), "no note with id"),
        (("nonsense", "defining", "event"), "not a note id"),
    ],
)
def test_set_refuses_bad_input_and_changes_nothing(
    cli: CliRunner, vault: Path, args: tuple[str, ...], message: str
) -> None:
    note = remembered(cli, "Something", "--title", "Something")
    before = tree_digest(vault)
    argv = [note["id"] if a == "FIELD" else a for a in args]
    res = run(cli, "set", *argv)
    assert res.exit_code == 2 and message in res.stderr, res.output
    assert tree_digest(vault) == before


def test_partition_commands(cli: CliRunner, vault: Path) -> None:
    assert run(cli, "partition", "create", "work").exit_code == 0
    assert (vault / "work/LLM/Protocols.md").is_file()
    listed = json.loads(run(cli, "partition", "list", "--json").stdout)["partitions"]
    assert listed == [
        {"name": "main", "archived": False, "current": True},
        {"name": "work", "archived": False, "current": False},
    ]
    main_note = remembered(cli, "Groceries: figs")
    res = run(cli, "partition", "use", "work")
    assert res.exit_code == 0, res.output
    assert 'default_partition: "work"' in (vault / "brain.yaml").read_text()
    assert "# brain settings" in (vault / "brain.yaml").read_text()  # comments kept
    work_note = remembered(cli, "Standup at nine")
    assert work_note["path"].startswith("work/")
    assert json.loads(run(cli, "recall", "figs", "--json").stdout)["hits"] == []
    res = run(cli, "partition", "rename", "work", "job")
    assert res.exit_code == 0, res.output
    assert 'default_partition: "job"' in (vault / "brain.yaml").read_text()
    hit = json.loads(run(cli, "recall", "standup", "--json").stdout)["hits"][0]
    assert hit["id"] == work_note["id"] and hit["path"].startswith("job/")
    archived = run(cli, "partition", "archive", "job")
    assert archived.exit_code == 0 and "job is the default partition" in archived.stderr
    assert "`brain partition use OTHER`" in archived.stderr  # told now, not at the next command
    before = tree_digest(vault)
    res = run(cli, "remember", "More")
    assert res.exit_code == 2 and "archived (read-only)" in res.stderr
    res = run(cli, "recall", "standup")
    assert res.exit_code == 2 and "out of recall" in res.stderr
    res = run(cli, "set", work_note["id"], "defining", "event")
    assert res.exit_code == 2 and "archived" in res.stderr
    res = run(cli, "forget", work_note["id"])
    assert res.exit_code == 2 and "archived" in res.stderr
    assert run(cli, "expand", work_note["id"]).exit_code == 0  # read-only, not gone
    assert tree_digest(vault) == before
    assert run(cli, "partition", "restore", "job").exit_code == 0
    assert run(cli, "recall", "standup").exit_code == 0
    assert run(cli, "partition", "use", "main").exit_code == 0
    assert json.loads(run(cli, "expand", main_note["id"], "--json").stdout)["id"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create", "main"), "already exists"),
        (("create", "../x"), "may not contain '/'"),
        (("create", "local-only"), "reserved"),
        (("create", "~"), "may not start with '~'"),  # the shell's home, typed back
        (("rename", "main", "~work"), "may not start with '~'"),
        (("use", "nope"), "no partition 'nope'"),
        (("rename", "nope", "x"), "no partition 'nope'"),
        (("rename", "main", "a/b"), "may not contain '/'"),
        (("archive", "nope"), "no partition"),
        (("restore", "main"), "is not archived"),
    ],
)
def test_partition_commands_refuse_bad_input(
    cli: CliRunner, vault: Path, args: tuple[str, ...], message: str
) -> None:
    before = tree_digest(vault)
    res = run(cli, "partition", *args)
    assert res.exit_code == 2 and message in res.stderr, res.output
    assert tree_digest(vault) == before


def test_rename_keeps_ids_and_local_only_notes(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock)
    shared = brain.remember("shared", title="Shared")
    hidden = brain.remember("hidden", title="Hidden")
    brain.set_field(hidden.id, "visibility", "local-only")
    ids = {row.id for row in brain._context.caches.catalog.select("partition='main'")}
    from brain import _partitions as partitions

    partitions.rename(brain._context, "main", "home")
    assert brain.partition == "home" and brain.settings.default_partition == "home"
    assert (vault / "local-only/home/Knowledge/Inbox/Hidden.md").is_file()
    assert {row.id for row in brain._context.caches.catalog.select("partition='home'")} == ids
    assert brain._context.caches.catalog.count("partition='main'") == 0
    assert brain._context.get(shared.id).path == "home/Knowledge/Inbox/Shared.md"
    assert brain.doctor().ok
    brain.close()
    assert open_vault(vault).partition == "home"


def test_a_partition_renamed_by_another_process_is_not_made_again(
    vault: Path, clock: FixedClock
) -> None:
    from brain import _partitions as partitions

    partitions.create(open_vault(vault, clock=clock)._context, "work")
    renamer, other = open_vault(vault, clock=clock), open_vault(vault, clock=clock)
    partitions.use(other._context, "work")
    partitions.rename(renamer._context, "work", "job")
    before = tree_digest(vault)
    with pytest.raises(NotFound, match="'work' no longer exists"):
        other.remember("lost?")
    with pytest.raises(NotFound, match="no longer exists"):
        other.recall("anything")
    assert tree_digest(vault) == before and not (vault / "work").exists()


def test_an_archived_partition_refuses_every_writer_and_sleep_leaves_it_be(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    from datetime import timedelta

    from brain import _partitions as partitions
    from brain._errors import InvalidInput

    partitions.create(brain._context, "old")
    brain._context.partition = "old"
    a = brain.remember("Old plan to visit Lisbon", title="Lisbon")
    b = brain.remember("Old budget for the trip", title="Budget")
    brain._context.partition = "main"
    partitions.archive(brain._context, "old")

    def old_files() -> dict[str, bytes]:
        return {str(p): p.read_bytes() for p in sorted((vault / "old").rglob("*")) if p.is_file()}

    before = old_files()
    brain._context.partition = "old"
    for attempt in (
        lambda: brain.correct(a.id, "Porto instead"),
        lambda: brain.relate(a.id, "supports", b.id),
        lambda: brain.set_field(a.id, "status", "resolved"),
    ):
        with pytest.raises(InvalidInput, match="archived"):
            attempt()
    brain._context.partition = "main"
    clock.set(clock.now() + timedelta(days=200))
    brain.sleep()  # 200 days untouched, but nothing in an archived partition ages or logs
    assert old_files() == before
    assert "status: active" in (vault / a.path).read_text()


def test_partition_names_that_differ_only_in_case_are_refused(brain: Brain) -> None:
    from brain._errors import InvalidInput

    brain.partition_create("work")
    before = tree_digest(brain.root)
    with pytest.raises(InvalidInput, match=r"'Work' differs from partition 'work' only in case"):
        brain.partition_create("Work")
    with pytest.raises(InvalidInput, match=r"'WORK' differs from partition 'work' only in case"):
        brain.partition_rename("main", "WORK")
    assert tree_digest(brain.root) == before  # nothing made, nothing moved
    renamed = brain.partition_rename("work", "Work")  # its own name in another case is fine
    assert renamed.name == "Work"
    assert [p.name for p in brain.partitions()] == ["Work", "main"]
