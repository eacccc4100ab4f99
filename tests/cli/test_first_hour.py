"""The first hour's frictions (issue 39): list cuts nothing, a write says what it did, an
identical memory is not copied, threads match like titles, `--partition`, broken notes named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from typer.testing import CliRunner

from brain.__main__ import _parse
from brain._brain import Brain, open_vault
from brain._cli import app
from brain._clock import FixedClock
from brain._daemon.operations import Operations
from brain.testing import tree_digest
from tests.ingest.test_recalls import chatgpt, zipped
from tests.mcp.conftest import call, run

DEEP = "Knowledge/Domains/Cooking/Bread and pastry techniques/Sourdough starters and levains"
LONG_TITLE = "How to feed a rye sourdough starter kept in the fridge over a long holiday"


def invoke(cli: CliRunner, *args: str, **env: str) -> Any:
    res = cli.invoke(app, list(args), env=env or None)
    assert res.exit_code == 0, res.output
    return res


def remember_json(cli: CliRunner, *args: str) -> dict[str, Any]:
    return json.loads(invoke(cli, "remember", *args, "--json").stdout)  # type: ignore[no-any-return]


# `brain list` ---------------------------------------------------------------------------------


def test_list_at_80_columns_cuts_no_id_and_no_path(cli: CliRunner) -> None:
    note = remember_json(cli, "Feed it twice a day", "--title", LONG_TITLE, "--node", DEEP)
    assert len(note["path"]) > 80
    shown = invoke(cli, "list", COLUMNS="80").stdout
    lines = shown.splitlines()
    assert any(line.startswith(note["id"]) for line in lines)
    assert any(line.strip() == note["path"] for line in lines)
    assert LONG_TITLE in shown


def test_list_piped_cuts_nothing_and_says_where_it_stopped(vault: Path) -> None:
    brain = open_vault(vault)
    made = [
        brain.remember(f"Step {n} of the levain", title=f"{LONG_TITLE} {n}", node=DEEP)
        for n in range(3)
    ]
    total = len(brain.list())
    brain.close()
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_DAEMON": "off", "COLUMNS": "80"}
    run = subprocess.run(
        [sys.executable, "-m", "brain", "list", "--limit", "2"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    lines = run.stdout.splitlines()
    for note in made[1:]:  # the two newest
        assert any(line.startswith(note.id) for line in lines)
        assert any(line.strip() == note.path for line in lines)
    assert run.stderr.strip() == f"showing 2 of {total}; `--limit {total}` for all"
    everything = subprocess.run(
        [sys.executable, "-m", "brain", "list", "--limit", str(total)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert everything.stderr == "" and len(everything.stdout.splitlines()) == 2 * total


def test_list_json_has_whole_rows_the_total_and_the_limit(cli: CliRunner) -> None:
    note = remember_json(cli, "Feed it twice a day", "--title", LONG_TITLE, "--node", DEEP)
    data = json.loads(invoke(cli, "list", "--json", "--limit", "1", COLUMNS="80").stdout)
    assert data["limit"] == 1 and data["total"] > 1
    assert data["notes"] == [json.loads(invoke(cli, "list", "--json").stdout)["notes"][0]]
    assert data["notes"][0]["id"] == note["id"] and data["notes"][0]["path"] == note["path"]


# what a write did ------------------------------------------------------------------------------


def test_remembering_the_same_text_again_touches_the_note(
    cli: CliRunner, vault: Path, clock: FixedClock
) -> None:
    first = remember_json(cli, "The cat is called Tom")
    assert first["outcome"] == "created"
    again = cli.invoke(app, ["remember", "The cat is called Tom"])
    assert again.exit_code == 0
    assert again.stdout.startswith("Already remembered: The cat is called Tom")
    second = remember_json(cli, "The cat is called Tom")
    assert second["outcome"] == "unchanged" and second["id"] == first["id"]
    assert second["body"] == first["body"]
    assert sorted(p.name for p in (vault / first["path"]).parent.glob("The cat*")) == [
        "The cat is called Tom.md"
    ]
    # Under a title too: the same text is not added twice.
    titled = remember_json(cli, "Tom is grey", "--title", "Cat")
    same = remember_json(cli, "Tom is grey", "--title", "cat")
    assert (same["outcome"], same["id"], same["body"]) == (
        "unchanged",
        titled["id"],
        "Tom is grey\n",
    )


def test_the_same_text_touches_the_note(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("The cat is called Tom")
    clock.set(clock.now().replace(day=20))
    again = brain.remembered("The cat is called Tom")
    assert again.outcome == "unchanged" and again.note.id == note.id
    assert again.note.touched > note.touched
    assert brain._context.get(note.id).touched == again.note.touched


WRITES = [  # in order: each write, what it did, and how the CLI says so
    (["Tom is grey", "--title", "Cat"], "created", "Remembered Cat"),
    (["Tom likes fish", "--title", "cat"], "appended", "Added to Cat"),
    (["Tom likes fish", "--title", "Cat"], "unchanged", "Already remembered: Cat"),
    (
        ["I live in Lyon", "--title", "Biography", "--node", "Master"],
        "replaced",
        "Replaced the text of Biography",
    ),
    (["Plan it", "--kind", "thread", "--title", "Plan"], "created", "Remembered Plan"),
    (["Booked it", "--kind", "thread", "--title", "plan"], "created", "Remembered Plan — "),
    (["Paid it", "--kind", "thread", "--title", "Plan"], "appended", "Added to Plan — "),
    (["Wrote the plan", "--node", "LLM/Diary"], "appended", "Added to 20"),
]


def test_every_write_says_whether_it_created_appended_or_replaced(cli: CliRunner) -> None:
    invoke(cli, "partition", "create", "json")  # the same writes again there, as JSON
    for where in ("main", "json"):
        invoke(cli, "remember", "Woke up", "--node", "LLM/Diary", "--partition", where)
    for args, _outcome, said in WRITES:
        text = invoke(cli, "remember", *args).stdout
        assert text.startswith(said), (args, text)
    for args, outcome, _said in WRITES:
        assert remember_json(cli, *args, "--partition", "json")["outcome"] == outcome, args


def test_the_mcp_remember_answer_says_what_the_write_did(brain: Brain) -> None:
    answers: list[str] = []

    async def scenario(client: Client) -> None:
        for args in (
            {"text": "The cat is called Tom"},
            {"text": "The cat is called Tom"},
            {"text": "grey", "title": "Cat"},
            {"text": "purrs", "title": "CAT"},
        ):
            answers.append((await call(client, "remember", args))["outcome"])

    run(brain, scenario)
    assert answers == ["created", "unchanged", "created", "appended"]


# threads ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "again", ["launch plan", "LAUNCH  PLAN!", "Ｌａｕｎｃｈ Plan", "Launch-plan"]
)
def test_thread_titles_match_like_titled_notes(any_brain: Brain, again: str) -> None:
    index = any_brain.remember("We start the launch plan", kind="thread", title="Launch Plan")
    day = any_brain.remember("Booked the venue", kind="thread", title=again)
    assert day.parent == index.id and day.path.startswith("main/Memory/Threads/Launch Plan/")
    assert day.title.startswith("Launch Plan — ")
    threads = any_brain.list(kind="thread")
    assert [t.id for t in threads] == [index.id]


# --partition -----------------------------------------------------------------------------------


def test_partition_option_works_in_that_partition_and_leaves_brain_yaml_alone(
    cli: CliRunner, vault: Path
) -> None:
    invoke(cli, "partition", "create", "work")
    settings = (vault / "brain.yaml").read_bytes()
    note = remember_json(cli, "The standup is at nine", "--partition", "work")
    assert note["path"].startswith("work/")
    assert (vault / "brain.yaml").read_bytes() == settings
    listed = json.loads(invoke(cli, "list", "--json", "--partition", "work").stdout)["notes"]
    assert note["id"] in [r["id"] for r in listed]
    assert note["id"] not in [
        r["id"] for r in json.loads(invoke(cli, "list", "--json").stdout)["notes"]
    ]
    hits = json.loads(invoke(cli, "recall", "standup", "--json", "--partition", "work").stdout)
    assert [h["id"] for h in hits["hits"]][:1] == [note["id"]]
    main_hits = json.loads(invoke(cli, "recall", "standup", "--json").stdout)["hits"]
    assert note["id"] not in [h["id"] for h in main_hits]
    shown = invoke(cli, "expand", note["id"], "--partition", "work").stdout
    assert "The standup is at nine" in shown
    assert (vault / "brain.yaml").read_bytes() == settings


@pytest.mark.parametrize(
    "command",
    [
        ["remember", "x"],
        ["recall", "x"],
        ["list"],
        ["expand", "01JE2Z3K4M5N6P7Q8R9S0T1V2W"],
    ],
)
def test_an_unknown_partition_is_one_clear_error(
    cli: CliRunner, vault: Path, command: list[str]
) -> None:
    before = tree_digest(vault)
    res = cli.invoke(app, [*command, "--partition", "nope"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: no partition 'nope' (partitions: main)"
    assert tree_digest(vault) == before


def test_the_daemon_operations_take_a_partition(brain: Brain) -> None:
    from brain import _partitions as partitions

    partitions.create(brain._context, "work")
    ops = Operations(brain)
    made = ops.run("remember", {"text": "Standup at nine", "partition": "work"})
    assert made["path"].startswith("work/") and made["outcome"] == "created"
    listed = ops.run("list_notes", {"partition": "work", "limit": 100})
    assert made["id"] in [r["id"] for r in listed]
    assert ops.run("count_notes", {"partition": "work"}) == len(brain.at("work").list())
    assert ops.run("expand", {"note_id": made["id"], "partition": "work"})["id"] == made["id"]
    ops.close()


# broken front-matter ---------------------------------------------------------------------------


def _break(path: Path) -> None:
    text = path.read_text().replace("kind: titled", "kind: titled: oops")
    path.write_text(text)


def test_expand_of_a_broken_note_names_its_file_and_line(cli: CliRunner, vault: Path) -> None:
    note = remember_json(cli, "The cat is called Tom", "--title", "Cat")
    _break(vault / note["path"])
    line = (vault / note["path"]).read_text().splitlines().index("kind: titled: oops") + 1
    res = cli.invoke(app, ["expand", note["id"]])
    assert res.exit_code == 2
    assert res.stderr.strip() == (
        f"error: {note['path']} has broken front-matter (line {line}): fix it or run `brain doctor`"
    )


@pytest.mark.parametrize("title", ["Cat", "cat!", None])
def test_a_remember_onto_a_broken_title_names_the_file(
    cli: CliRunner, vault: Path, title: str | None
) -> None:
    note = remember_json(cli, "Cat", "--title", "Cat")
    _break(vault / note["path"])
    before = tree_digest(vault)
    args = ["remember", "Tom is grey", *(["--title", title] if title else [])]
    if title is None:
        args[1] = "Cat"  # an untitled memory whose title would be the broken note's
    res = cli.invoke(app, args)
    assert res.exit_code == 2
    assert res.stderr.startswith(f"error: {note['path']} has broken front-matter (line ")
    assert res.stderr.rstrip().endswith("fix it or run `brain doctor`")
    assert tree_digest(vault) == before
    assert not list((vault / note["path"]).parent.glob("Cat 2.md"))


def test_a_singleton_or_thread_onto_a_broken_note_names_the_file(brain: Brain, vault: Path) -> None:
    from brain._errors import BrokenNote

    thread = brain.remember("Plan it", kind="thread", title="Launch")
    path = vault / thread.path
    path.write_text(path.read_text().replace("kind: thread", "kind: [thread"))
    brain._context.catch_up()
    with pytest.raises(BrokenNote, match=r"Threads/Launch/index.md has broken front-matter"):
        brain.remember("Booked it", kind="thread", title="Launch")
    bio = vault / "main/Master/Biography.md"
    bio.write_text(bio.read_text().replace("kind: singleton", "kind: [singleton"))
    brain._context.catch_up()
    with pytest.raises(BrokenNote, match=r"main/Master/Biography.md has broken front-matter"):
        brain.remember("I live in Lyon", title="Biography", node="Master")


# passes ----------------------------------------------------------------------------------------


def test_one_import_is_one_pass_and_two_are_two(brain: Brain, tmp_path: Path) -> None:
    first = brain.import_export("chatgpt", zipped(tmp_path, chatgpt(2), "one.zip"))
    sessions = {brain._context.get(i).source["session"] for i in first.added}
    assert len(sessions) == 1
    convs = chatgpt(3)[2:]
    second = brain.import_export("chatgpt", zipped(tmp_path, convs, "two.zip"))
    assert {brain._context.get(i).source["session"] for i in second.added}.isdisjoint(sessions)


@pytest.mark.parametrize("where", ["process", "daemon"])
def test_both_backends_take_a_partition_count_and_say_the_outcome(vault: Path, where: str) -> None:
    from brain import _partitions as partitions
    from brain._daemon.backend import DaemonBackend, LocalBackend
    from brain._daemon.client import DaemonClient, start
    from tests.daemon.conftest import stop_daemon

    made = open_vault(vault)
    partitions.create(made._context, "work")
    made.close()
    backend: Any
    if where == "daemon":
        start(vault).close()
        backend = DaemonBackend(DaemonClient.connect(vault))
    else:
        backend = LocalBackend(open_vault(vault))
    try:
        note = backend.remember("Standup at nine", "work", title="Standup")
        again = backend.remember("Standup at nine", "work", title="standup")
        assert (note["outcome"], again["outcome"], again["id"]) == (
            "created",
            "unchanged",
            note["id"],
        )
        listed = backend.list_notes("work", limit=1)
        assert len(listed) == 1
        assert backend.count_notes("work", limit=1) == len(backend.list_notes("work"))
        assert backend.expand(note["id"], "work")["body"] == "Standup at nine\n"
        hits = backend.recall("standup", "work")
        assert hits[0]["id"] == note["id"]
        if where == "daemon":  # the fast path (brain/__main__.py) takes --partition too
            assert _parse(["recall", "standup", "--partition", "work"]) == {
                "query": "standup",
                "partition": "work",
            }
            env = {**os.environ, "BRAIN_DAEMON": "auto"}
            fast = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "brain",
                    "recall",
                    "standup",
                    "--partition",
                    "work",
                    "--json",
                    "--vault",
                    str(vault),
                ],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            assert json.loads(fast.stdout)["hits"][0]["id"] == note["id"]
    finally:
        backend.close()
        if where == "daemon":
            stop_daemon(vault)


def test_a_titled_note_deleted_by_hand_is_written_anew(cli: CliRunner, vault: Path) -> None:
    """Its catalog row outlived the file: the write must not read the file that is gone."""
    first = remember_json(cli, "The first plan for the garden", "--title", "Garden")
    (vault / first["path"]).unlink()
    again = remember_json(cli, "The second plan for the garden", "--title", "garden")
    assert again["outcome"] == "created" and again["id"] != first["id"]
    assert "second plan" in (vault / again["path"]).read_text()
    listed = invoke(cli, "list", "--json")
    assert first["id"] not in listed.stdout
